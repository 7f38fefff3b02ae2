"""Price chart rendering: close with 50- and 200-day moving averages, written as a PNG.

``render_price_chart`` imports matplotlib only when called and draws on a standalone
``Figure`` with the Agg canvas, so no pyplot global state or GUI backend is ever touched.
Moving averages are computed on the full history and then sliced to the lookback, so the
first plotted day already has a real 200-day average. The PNG is written atomically (temp
file in the same folder, then ``os.replace``): a reader never sees a half-written chart.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from agent.market.base import PriceHistory
from agent.research.analytics import rolling_sma


def render_price_chart(h: PriceHistory, path: Path, *, lookback_days: int = 504) -> Path:
    """Write the chart of ``h`` over its last ``lookback_days`` rows to ``path``; return it.

    Parent folders are created. Raises ``ValueError`` for a non-positive lookback.
    """
    if lookback_days < 1:
        raise ValueError(
            f"render_price_chart needs lookback_days >= 1, got {lookback_days}. "
            "Pass the number of trading days to show (504 is about two years)."
        )
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    start = max(0, len(h) - lookback_days)
    # datetime64 rather than a tuple of dates: matplotlib's type stubs accept arrays only.
    dates = np.array(h.dates[start:], dtype="datetime64[D]")
    close = h.close[start:]
    sma_50 = rolling_sma(h.close, 50)[start:]
    sma_200 = rolling_sma(h.close, 200)[start:]

    figure = Figure(figsize=(10, 5), dpi=100)
    # Fixed margins sized for this one layout: a layout engine would measure every label on
    # each run (about 0.1 s, a noticeable share of a whole `analyst run`).
    figure.subplots_adjust(left=0.075, right=0.98, top=0.93, bottom=0.1)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(dates, close, label="Close", color="#1f3b73", linewidth=1.2)
    axes.plot(dates, sma_50, label="50-day SMA", color="#e08a1e", linewidth=1.0)
    axes.plot(dates, sma_200, label="200-day SMA", color="#2a9d5c", linewidth=1.0)
    axes.set_title(
        f"{h.ticker} close with 50/200-day moving averages (as of {h.as_of.isoformat()})"
    )
    axes.set_xlabel("Date")
    axes.set_ylabel("Price")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper left")

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as temp_file:
            figure.savefig(temp_file, format="png")
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    finally:
        # A pyplot-free Figure has no manager to close; clearing drops the artists now
        # instead of waiting for the garbage collector.
        figure.clear()
    return path
