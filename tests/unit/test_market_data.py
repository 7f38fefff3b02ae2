"""Market-data providers: laziness, caching, ticker handling, and every failure message.

Runs without network. The yfinance tests exercise whichever branch is real on this machine
(installed → the network failure surfaces as ``MarketDataUnavailableError`` quickly; not
installed → ``MissingDependencyError``), and a subprocess blocks the import to test the
missing-dependency branch everywhere.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from agent.errors import (
    ConfigurationError,
    InvalidQueryError,
    MarketDataUnavailableError,
    MissingDependencyError,
    UnknownTickerError,
)
from agent.market import (
    MarketDataProvider,
    PriceHistory,
    SampleDataProvider,
    provider_from_name,
)
from agent.market.yfinance import YFinanceProvider
from agent.research.routing import check_request, request_universe

BUNDLED = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")
REPO_ROOT = Path(__file__).resolve().parents[2]
HEADER = "Date,Open,High,Low,Close,Volume\n"


def write_csv(folder: Path, ticker: str, body: str, header: str = HEADER) -> Path:
    path = folder / f"{ticker}.csv"
    path.write_text(header + body, encoding="utf-8")
    return path


GOOD_ROWS = (
    "2023-01-03,10,11,9,10.5,100\n2023-01-04,10.5,12,10,11.5,200\n2023-01-05,11.5,12,11,11.0,300\n"
)


def test_sample_provider_lists_the_seven_bundled_tickers() -> None:
    provider = SampleDataProvider()
    assert provider.name == "sample"
    assert provider.available_tickers() == BUNDLED
    assert isinstance(provider, MarketDataProvider)


def test_construction_reads_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist"
    provider = SampleDataProvider(missing)  # no error: nothing is touched yet
    with pytest.raises(ConfigurationError, match="does-not-exist"):
        provider.available_tickers()


def test_history_is_cached_per_instance_and_case_insensitive() -> None:
    provider = SampleDataProvider()
    first = provider.history("nvda")
    assert provider.history("NVDA") is first
    assert provider.history(" Nvda ") is first
    assert SampleDataProvider().history("NVDA") is not first


def test_cache_survives_file_removal(tmp_path: Path) -> None:
    path = write_csv(tmp_path, "ABC", GOOD_ROWS)
    provider = SampleDataProvider(tmp_path)
    history = provider.history("abc")
    path.unlink()
    assert provider.history("ABC") is history


def test_bundled_history_shape_and_provenance() -> None:
    history = SampleDataProvider().history("NVDA")
    assert history.ticker == "NVDA"
    assert history.dates[0] == datetime.date(2013, 1, 2)
    assert history.as_of == datetime.date(2023, 12, 29)
    for series in (history.open, history.high, history.low, history.close, history.volume):
        assert series.dtype == np.float64
        assert len(series) == len(history.dates)
        assert not series.flags.writeable
    assert all(a < b for a, b in zip(history.dates, history.dates[1:], strict=False))
    assert history.source == (
        "Bundled sample dataset: daily OHLCV, split-adjusted (agent/market/data/NVDA.csv)"
    )


def test_unknown_ticker_lists_the_available_tickers() -> None:
    with pytest.raises(UnknownTickerError) as caught:
        SampleDataProvider().history("zzzz")
    assert caught.value.tickers == ["ZZZZ"]
    assert caught.value.available == list(BUNDLED)
    message = str(caught.value)
    assert "ZZZZ" in message
    assert "AAPL, AMZN, GOOGL, META, MSFT, NVDA, TSLA" in message


def test_custom_data_dir_source_names_the_file(tmp_path: Path) -> None:
    path = write_csv(tmp_path, "abc", GOOD_ROWS)
    provider = SampleDataProvider(tmp_path)
    assert provider.available_tickers() == ("ABC",)
    history = provider.history("ABC")
    assert history.close.tolist() == [10.5, 11.5, 11.0]
    assert str(path) in history.source


@pytest.mark.parametrize(
    ("header", "body", "expected"),
    [
        (HEADER, "2023-01-03,10,11,9,ten,100\n", r"line 2: Close 'ten' is not a number"),
        (HEADER, "2023-01-03,10,11,9,10,100\n03/01/2023,1,1,1,1,1\n", r"line 3: date"),
        (HEADER, "2023-01-03,10,11,9,10\n", r"line 2: expected 6 fields, got 5"),
        ("Date,Open,High,Low,Volume\n", "2023-01-03,10,11,9,100\n", r"lacks column\(s\) Close"),
        (HEADER, "", r"no data rows"),
        ("", "", r"the file is empty"),
        (
            HEADER,
            "2023-01-04,10,11,9,10,100\n2023-01-03,10,11,9,10,100\n",
            r"strictly increasing.*2023-01-03",
        ),
        (HEADER, "2023-01-03,10,11,9,-1,100\n", r"finite and positive"),
    ],
)
def test_malformed_csv_gives_a_clear_error(
    tmp_path: Path, header: str, body: str, expected: str
) -> None:
    path = write_csv(tmp_path, "BAD", body, header=header)
    with pytest.raises(MarketDataUnavailableError, match=expected) as caught:
        SampleDataProvider(tmp_path).history("bad")
    assert str(path) in str(caught.value)


def test_price_history_validates_on_construction() -> None:
    day = datetime.date(2023, 1, 3)
    one = np.ones(1)
    with pytest.raises(ValueError, match="no rows"):
        PriceHistory("X", (), one[:0], one[:0], one[:0], one[:0], one[:0], source="t")
    with pytest.raises(ValueError, match="'close' has 2 values but there are 1 dates"):
        PriceHistory("X", (day,), one, one, one, np.ones(2), one, source="t")
    with pytest.raises(ValueError, match="strictly increasing"):
        two = np.ones(2)
        PriceHistory("X", (day, day), two, two, two, two, two, source="t")


def test_provider_from_name() -> None:
    assert isinstance(provider_from_name("sample"), SampleDataProvider)
    assert isinstance(provider_from_name(" Sample "), SampleDataProvider)
    live = provider_from_name("yfinance")
    assert live.name == "yfinance"
    assert live.available_tickers() == BUNDLED


def test_provider_from_name_rejects_unknown_names() -> None:
    with pytest.raises(ConfigurationError, match=r"'bloomberg'.*sample, yfinance") as caught:
        provider_from_name("bloomberg")
    # There is no --provider flag: the message names only what exists.
    assert "--provider" not in str(caught.value)
    assert "ANALYST_MARKET_PROVIDER" in str(caught.value)


def test_yfinance_provider_unknown_ticker_and_bad_settings() -> None:
    with pytest.raises(InvalidQueryError, match="not a ticker symbol"):
        YFinanceProvider().history("not a ticker!")
    assert YFinanceProvider(["ibm", "aapl"]).available_tickers() == ("AAPL", "IBM")
    with pytest.raises(ConfigurationError, match="at least one ticker"):
        YFinanceProvider([])
    with pytest.raises(ConfigurationError, match="'forever'"):
        YFinanceProvider().history("NVDA", period="forever")


def test_a_provider_that_fetches_any_symbol_widens_what_a_request_may_name() -> None:
    basket = YFinanceProvider().available_tickers()
    assert YFinanceProvider.open_universe and not getattr(SampleDataProvider(), "open_universe", 0)
    wide = request_universe("Analyze IBM against $AMD", basket, open_universe=True)
    assert wide == (*basket, "AMD", "IBM")
    assert request_universe("Analyze IBM", basket) == basket
    route = check_request("Analyze IBM", wide)
    assert route is not None and route.tickers == ("IBM",)
    with pytest.raises(UnknownTickerError, match="Unknown ticker IBM"):
        check_request("Analyze IBM", basket)


def test_yfinance_history_fails_fast_and_helpfully_without_network() -> None:
    provider = YFinanceProvider(timeout=5)
    if importlib.util.find_spec("yfinance") is None:
        with pytest.raises(MissingDependencyError, match=r"analyst\[yfinance\]"):
            provider.history("NVDA")
        return
    with pytest.raises(MarketDataUnavailableError) as caught:
        provider.history("nvda")
    message = str(caught.value)
    assert "NVDA" in message
    assert "check your network connection" in message
    assert "ANALYST_MARKET_PROVIDER=sample" in message
    assert "--provider" not in message
    assert caught.value.__cause__ is not None


def test_yfinance_missing_dependency_in_subprocess() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["yfinance"] = None  # makes `import yfinance` raise ImportError
        from agent.errors import MissingDependencyError
        from agent.market import provider_from_name
        provider = provider_from_name("yfinance")
        try:
            provider.history("NVDA")
        except MissingDependencyError as e:
            print(type(e.__cause__).__name__)
            print(e)
        else:
            raise SystemExit("expected MissingDependencyError")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    cause, message = result.stdout.strip().splitlines()
    assert cause in {"ImportError", "ModuleNotFoundError"}
    assert message == (
        "The yfinance market-data provider needs the 'yfinance' package, which is not "
        "installed. Install it with: pip install 'analyst[yfinance]'"
    )


def test_importing_the_package_does_not_import_optional_dependencies() -> None:
    script = (
        "import sys, agent.market, agent.research.analytics, agent.research.chart\n"
        "print(sorted(m for m in ('yfinance', 'matplotlib', 'pandas') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
