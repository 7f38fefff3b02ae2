"""The bundled sample dataset as a ``MarketDataProvider``.

``SampleDataProvider`` serves one CSV per ticker from a folder (default: the ``data`` folder
shipped inside this package). Each file is named ``<TICKER>.csv`` and has the header
``Date,Open,High,Low,Close,Volume`` with ISO dates, one row per trading day, ascending.

Contracts:

- Constructing a provider reads nothing; files are listed by ``available_tickers()`` and
  parsed on the first ``history()`` call for a ticker, then cached for the provider's life.
- Tickers are case-insensitive; the file stem, upper-cased, is the ticker.
- An unknown ticker raises ``UnknownTickerError`` listing the available tickers; a missing
  folder raises ``ConfigurationError``; a malformed file raises ``MarketDataUnavailableError``
  naming the file, the line and the problem.
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agent.errors import ConfigurationError, MarketDataUnavailableError, UnknownTickerError
from agent.market.base import PriceHistory

_COLUMNS = ("Date", "Open", "High", "Low", "Close", "Volume")


def _bundled_data_dir() -> Path:
    return Path(__file__).resolve().parent / "data"


class SampleDataProvider:
    """Daily OHLCV from CSV files in ``data_dir`` (default: the bundled, split-adjusted set)."""

    name = "sample"

    def __init__(self, data_dir: Path | None = None) -> None:
        self._bundled = data_dir is None
        self._data_dir = _bundled_data_dir() if data_dir is None else Path(data_dir)
        self._cache: dict[str, PriceHistory] = {}

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    def _files(self) -> dict[str, Path]:
        if not self._data_dir.is_dir():
            raise ConfigurationError(
                f"Sample market-data folder '{self._data_dir}' does not exist or is not a "
                "folder. Point the sample provider at a folder of <TICKER>.csv files, or omit "
                "data_dir to use the bundled dataset."
            )
        return {p.stem.upper(): p for p in self._data_dir.glob("*.csv") if p.is_file()}

    def available_tickers(self) -> tuple[str, ...]:
        return tuple(sorted(self._files()))

    def history(self, ticker: str) -> PriceHistory:
        key = ticker.strip().upper()
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        files = self._files()
        path = files.get(key)
        if path is None:
            raise UnknownTickerError(key, files)
        history = self._parse(key, path)
        self._cache[key] = history
        return history

    def _source(self, path: Path) -> str:
        if self._bundled:
            return (
                "Bundled sample dataset: daily OHLCV, split-adjusted "
                f"(agent/market/data/{path.name})"
            )
        return f"Sample dataset: daily OHLCV ({path})"

    def _parse(self, ticker: str, path: Path) -> PriceHistory:
        def malformed(line: int, problem: str) -> MarketDataUnavailableError:
            return MarketDataUnavailableError(
                f"Sample data file '{path}' is malformed at line {line}: {problem}. "
                f"Fix the file (header {','.join(_COLUMNS)}, ISO dates, numeric prices, "
                "ascending dates) or remove it from the folder."
            )

        try:
            with path.open(newline="", encoding="utf-8") as handle:
                rows = list(csv.reader(handle))
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise MarketDataUnavailableError(
                f"Could not read sample data file '{path}' for {ticker}: {e}. "
                "Check the file exists, is readable and is UTF-8 CSV."
            ) from e

        if not rows:
            raise malformed(1, "the file is empty")
        header = [column.strip() for column in rows[0]]
        missing = [column for column in _COLUMNS if column not in header]
        if missing:
            raise malformed(1, f"header {rows[0]!r} lacks column(s) {', '.join(missing)}")
        index = [header.index(column) for column in _COLUMNS]
        body = rows[1:]
        if not body:
            raise malformed(2, "there are no data rows after the header")

        # Fast path first: one comprehension for dates and one numpy conversion per column
        # (converting the row lists as one nested list took five times as long: a peers step
        # parses every file). Only if that fails do we walk the rows to name the offending line.
        try:
            dates = [datetime.date.fromisoformat(row[index[0]]) for row in body]
            values = np.empty((len(body), len(index) - 1), dtype=np.float64)
            for column, i in enumerate(index[1:]):
                values[:, column] = np.array([row[i] for row in body], dtype=np.float64)
        except (ValueError, IndexError) as e:
            raise self._locate_error(body, header, index, malformed) from e

        try:
            return PriceHistory(
                ticker=ticker,
                dates=tuple(dates),
                open=values[:, 0],
                high=values[:, 1],
                low=values[:, 2],
                close=values[:, 3],
                volume=values[:, 4],
                source=self._source(path),
            )
        except ValueError as e:
            raise MarketDataUnavailableError(
                f"Sample data file '{path}' is not a valid price history: {e}"
            ) from e

    @staticmethod
    def _locate_error(
        body: list[list[str]],
        header: list[str],
        index: list[int],
        malformed: Callable[[int, str], MarketDataUnavailableError],
    ) -> MarketDataUnavailableError:
        width = max(index) + 1
        for row_number, row in enumerate(body):
            line = row_number + 2
            if len(row) < width:
                return malformed(line, f"expected {len(header)} fields, got {len(row)}: {row!r}")
            try:
                datetime.date.fromisoformat(row[index[0]])
            except ValueError:
                return malformed(line, f"date {row[index[0]]!r} is not YYYY-MM-DD")
            for column, i in zip(_COLUMNS[1:], index[1:], strict=True):
                try:
                    float(row[i])
                except ValueError:
                    return malformed(line, f"{column} {row[i]!r} is not a number")
        return malformed(2, "a row could not be parsed")
