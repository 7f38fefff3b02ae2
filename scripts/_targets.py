"""How the benchmarks judge a target: met or missed only on a figure measured at its size.

A target is stated at a size (1,000,000 facts, 10,000 documents, 5 runs for a median); a run
below that size says so -- ``not measured at 1,000,000 facts`` -- and never prints ``met``,
whatever its figure, because a small run's figure says nothing about the stated size (and a
check that passes whenever the run is small cannot fail). Shared by the ``bench_*`` scripts,
which import it as ``scripts._targets`` (each puts the repository root on ``sys.path``).
"""

from __future__ import annotations

from dataclasses import dataclass

NOT_MEASURED = "not measured at"


@dataclass(frozen=True)
class Size:
    """One dimension a target is stated at: what is counted, this run's count, the stated one."""

    what: str
    run: float
    stated: float

    @property
    def short(self) -> bool:
        return self.run < self.stated


def verdict(ok: bool, *sizes: Size) -> str:
    """``met`` or ``MISSED`` when the run reached every stated size; else ``not measured at
    <stated sizes> (this run: <its sizes>)``."""
    short = [s for s in sizes if s.short]
    if short:
        stated = ", ".join(f"{s.stated:,.0f} {s.what}" for s in short)
        ran = ", ".join(f"{s.run:,.0f}" for s in short)
        return f"{NOT_MEASURED} {stated} (this run: {ran})"
    return "met" if ok else "MISSED"


def judge(name: str, ok: bool, *sizes: Size, width: int = 46) -> str:
    """One printed target line: its name, then :func:`verdict`."""
    return f"  {name:<{width}} {verdict(ok, *sizes)}"
