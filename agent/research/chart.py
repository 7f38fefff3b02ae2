"""Price chart rendering: close with 50- and 200-day moving averages, written as a PNG.

:func:`chart_series` computes what is plotted (numpy only); :func:`draw_chart` draws it,
importing matplotlib only when called and drawing on a standalone ``Figure`` with the Agg
canvas, so no pyplot global state or GUI backend is ever touched. :func:`render_price_chart`
does both here; :mod:`agent.research.chart_process` does them in a warm child process when the
command started one (matplotlib's half second of imports then runs on another core while the
graph runs).

Moving averages are computed on the full history and then sliced to the lookback, so the
first plotted day already has a real 200-day average. The PNG is written atomically (temp
file in the same folder, then ``os.replace``): a reader never sees a half-written chart.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agent.market.base import PriceHistory
from agent.research.analytics import rolling_sma


@dataclass(frozen=True)
class ChartSeries:
    """What a price chart plots: ISO dates and, per date, the close and its two averages
    (``None`` where an average has no full window)."""

    title: str
    dates: tuple[str, ...]
    close: tuple[float, ...]
    sma_50: tuple[float | None, ...]
    sma_200: tuple[float | None, ...]


def chart_series(h: PriceHistory, *, lookback_days: int = 504) -> ChartSeries:
    """The series of ``h``'s chart over its last ``lookback_days`` rows.

    Raises ``ValueError`` for a non-positive lookback."""
    if lookback_days < 1:
        raise ValueError(
            f"render_price_chart needs lookback_days >= 1, got {lookback_days}. "
            "Pass the number of trading days to show (504 is about two years)."
        )
    start = max(0, len(h) - lookback_days)

    def values(array: np.ndarray) -> tuple[float | None, ...]:
        return tuple(None if np.isnan(v) else float(v) for v in array[start:])

    return ChartSeries(
        title=f"{h.ticker} close with 50/200-day moving averages (as of {h.as_of.isoformat()})",
        dates=tuple(d.isoformat() for d in h.dates[start:]),
        close=tuple(float(v) for v in h.close[start:]),
        sma_50=values(rolling_sma(h.close, 50)),
        sma_200=values(rolling_sma(h.close, 200)),
    )


def chart_png(series: ChartSeries) -> bytes:
    """The PNG of ``series``'s chart."""
    from io import BytesIO

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # datetime64 rather than a tuple of dates: matplotlib's type stubs accept arrays only.
    dates = np.array(series.dates, dtype="datetime64[D]")

    def line(values: tuple[float | None, ...]) -> np.ndarray:
        return np.array([np.nan if v is None else v for v in values], dtype=float)

    figure = Figure(figsize=(10, 5), dpi=100)
    # Fixed margins sized for this one layout: a layout engine would measure every label on
    # each run (about 0.1 s, a noticeable share of a whole `analyst run`).
    figure.subplots_adjust(left=0.075, right=0.98, top=0.93, bottom=0.1)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(dates, line(series.close), label="Close", color="#1f3b73", linewidth=1.2)
    axes.plot(dates, line(series.sma_50), label="50-day SMA", color="#e08a1e", linewidth=1.0)
    axes.plot(dates, line(series.sma_200), label="200-day SMA", color="#2a9d5c", linewidth=1.0)
    axes.set_title(series.title)
    axes.set_xlabel("Date")
    axes.set_ylabel("Price")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper left")
    buffer = BytesIO()
    try:
        figure.savefig(buffer, format="png")
    finally:
        # A pyplot-free Figure has no manager to close; clearing drops the artists now
        # instead of waiting for the garbage collector.
        figure.clear()
    return buffer.getvalue()


def write_chart(data: bytes, path: Path) -> Path:
    """Write the PNG ``data`` at ``path`` atomically (parent folders created); return it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as temp_file:
            temp_file.write(data)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return path


def draw_chart(series: ChartSeries, path: Path) -> Path:
    """Draw ``series`` as a PNG at ``path`` (parent folders created); return the path."""
    return write_chart(chart_png(series), path)


def render_price_chart(h: PriceHistory, path: Path, *, lookback_days: int = 504) -> Path:
    """Write the chart of ``h`` over its last ``lookback_days`` rows to ``path`` here (the
    reporter draws through :func:`agent.research.chart_process.render`, which uses the
    command's warm chart process when there is one); return it. Parent folders are created.
    Raises ``ValueError`` for a non-positive lookback.
    """
    return draw_chart(chart_series(h, lookback_days=lookback_days), Path(path))
