"""The price chart: a real PNG lands at the requested path, atomically, with no leftovers."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from agent.market import SampleDataProvider
from agent.research.chart import render_price_chart

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[12:16] == b"IHDR"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_renders_a_png_into_new_folders(tmp_path: Path) -> None:
    history = SampleDataProvider().history("NVDA")
    target = tmp_path / "charts" / "nested" / "nvda.png"
    result = render_price_chart(history, target)
    assert result == target
    data = target.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert 20_000 < len(data) < 2_000_000
    assert png_size(target) == (1000, 500)
    assert [p.name for p in target.parent.iterdir()] == ["nvda.png"]


def test_overwrites_in_place(tmp_path: Path) -> None:
    history = SampleDataProvider().history("AAPL")
    target = tmp_path / "aapl.png"
    render_price_chart(history, target)
    first = target.read_bytes()
    render_price_chart(history, target, lookback_days=100)
    assert target.read_bytes() != first
    assert target.read_bytes().startswith(PNG_SIGNATURE)
    assert [p.name for p in tmp_path.iterdir()] == ["aapl.png"]


def test_lookback_longer_than_history_and_invalid_lookback(tmp_path: Path) -> None:
    history = SampleDataProvider().history("TSLA")
    target = render_price_chart(history, tmp_path / "all.png", lookback_days=100_000)
    assert target.read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(ValueError, match="lookback_days >= 1, got 0"):
        render_price_chart(history, tmp_path / "none.png", lookback_days=0)
    assert not (tmp_path / "none.png").exists()
