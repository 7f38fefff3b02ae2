"""A fact's values over time as an inline SVG: one bar per record of the attribute, from
when it held to when it stopped (or now), coloured by its status, so a supersession or a
correction is seen as one bar ending where the next begins.

Drawn on the server from the ledger's history (no script); every label is escaped text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from agent.web.html import Html, tag

if TYPE_CHECKING:
    from memory.facts import FactRecord

__all__ = ["timeline_svg"]

WIDTH, LANE, LEFT, RIGHT, TOP = 640, 26, 8, 8, 18
#: Fill of a bar per record status (the legend of docs/dashboard.md).
COLOURS = {
    "open": "#2e7d32",
    "superseded": "#90a4ae",
    "retracted": "#c62828",
    "withdrawn": "#bdbdbd",
    "candidate": "#f9a825",
}


def _label(value: object) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def timeline_svg(records: Sequence[FactRecord], now: datetime) -> Html:
    """The timeline of one attribute's ``records`` (oldest first) up to ``now``."""
    if not records:
        return Html("")
    ordered = sorted(records, key=lambda r: (r.valid_from, r.recorded_at))
    start = min(r.valid_from for r in ordered)
    end = max([now, *(r.valid_to for r in ordered if r.valid_to is not None)])
    span = max((end - start).total_seconds(), 1.0)
    usable = WIDTH - LEFT - RIGHT

    def x(when: datetime) -> float:
        return round(LEFT + usable * (when - start).total_seconds() / span, 1)

    bars = []
    for lane, r in enumerate(ordered):
        y = TOP + lane * LANE
        x0 = x(r.valid_from)
        x1 = max(x(r.valid_to or end), x0 + 3)
        until = r.valid_to.date().isoformat() if r.valid_to else "now"
        bars.append(
            tag(
                "g",
                {"class_": f"bar {r.status}", "data-status": r.status},
                tag(
                    "title",
                    {},
                    f"{_label(r.value)}: {r.valid_from.date().isoformat()} to {until} "
                    f"({r.status}, {r.source})",
                ),
                tag(
                    "rect",
                    {
                        "x": x0,
                        "y": y,
                        "width": round(x1 - x0, 1),
                        "height": LANE - 8,
                        "rx": 3,
                        "fill": COLOURS.get(r.status, "#9e9e9e"),
                    },
                ),
                tag(
                    "text",
                    {"x": x0 + 4, "y": y + LANE - 13, "font-size": 12, "fill": "#000"},
                    f"{_label(r.value)} ({r.status})",
                ),
            )
        )
    height = TOP + len(ordered) * LANE + 4
    axis = [
        tag("text", {"x": LEFT, "y": 12, "font-size": 11}, start.date().isoformat()),
        tag(
            "text",
            {"x": WIDTH - RIGHT, "y": 12, "font-size": 11, "text-anchor": "end"},
            "now" if end == now else end.date().isoformat(),
        ),
    ]
    return tag(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "class_": "timeline",
            "width": WIDTH,
            "height": height,
            "viewBox": f"0 0 {WIDTH} {height}",
            "role": "img",
            "aria-label": f"timeline of {ordered[0].attribute}: {len(ordered)} record(s)",
        },
        axis,
        bars,
    )
