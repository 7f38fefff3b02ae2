"""``analyst memory``: everything kept about you, and the write path that keeps it.

One command group, assembled here from three modules along the memory's life:

- :mod:`.learning`: review, confirm, reject the candidates extraction proposes; context,
  procedures, sessions, episodes, events, audit; the extraction jobs, worker, end, consolidate
- :mod:`.items`: show, why, remember, add, list (``--memories``: long-term memories only),
  search (ranked, with each score's parts), export
- :mod:`.lifecycle`: forget (ids, topic, range, everything, ``--key``), backup, restore, sweep

Each command is a thin layer: parse, call :class:`~agent.app.AnalystApp` for the principal
(``--user``, ``--tenant``, else ``ANALYST_USER`` / ``ANALYST_TENANT``), render. Only typer and
the standard library are imported at module level so ``analyst --help`` stays fast.
"""

from __future__ import annotations

from agent.cli.common import group
from agent.cli.memory import items, learning, lifecycle

app = group("memory", "What the analyst remembers about you, and how it learns: show, forget.")
for _part in (learning, items, lifecycle):
    app.add_typer(_part.app)

__all__ = ["app"]
