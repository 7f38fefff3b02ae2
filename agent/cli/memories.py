"""``analyst memories``: seed, inspect and search the long-term memories at ``ANALYST_STORE``.

A thin layer: parse, call :class:`~agent.app.AnalystApp` for the principal (``--user``,
``--tenant``, else ``ANALYST_USER`` / ``ANALYST_TENANT``; only the store is opened), render.
Only typer and the standard library are imported at module level so ``analyst --help`` stays
fast.

``search`` shows each memory's score and its parts, so you can see why it ranked::

    total = alpha·recency + beta·importance + gamma·relevance    (--weights alpha,beta,gamma)

``add`` embeds the text (loading the local model the first time, a few seconds); ``list``
and ``forget`` never embed, and ``search`` does not when you have no memories yet or asked the
same question before (embeddings are cached in the data directory).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent.cli import common
from agent.cli.common import CommandError, JsonOpt, TenantOpt, UserOpt, group

if TYPE_CHECKING:
    from memory.recall import Recalled

app = group("memories", "Long-term memories: what the analyst remembers about you across threads.")


# -- rendering ------------------------------------------------------------------------------


def _show(found: Sequence[Recalled], user_id: str, *, ranked: bool) -> None:
    from agent.cli import render

    console = common.console()
    if not found:
        console.print(
            f"No memories for {user_id}. Add one with: analyst memories add TEXT", soft_wrap=True
        )
        return
    render.listing(console, _columns(found, ranked=ranked))


def _columns(memories: Sequence[Recalled], *, ranked: bool) -> list[Any]:
    """One line per memory; the key is always whole (copy it to forget the memory), the text
    is shortened to the width left and the least useful columns go first on a narrow screen."""
    from agent.cli.render import Column, when

    columns = []
    if ranked:
        columns.append(Column("#", [str(i) for i in range(1, len(memories) + 1)], right=True))
    columns.append(Column("key", [m.key for m in memories]))
    if ranked:
        columns.append(Column("score", [f"{m.parts.total:.3f}" for m in memories], right=True))
        for drop, name in ((7, "recency"), (6, "importance"), (5, "relevance")):
            cells = [f"{getattr(m.parts, name):.3f}" for m in memories]
            columns.append(Column(name, cells, drop=drop, right=True))
    columns += [
        Column("imp", [str(m.importance) for m in memories], drop=1, right=True),
        Column("kind", [m.kind for m in memories], drop=3),
        Column("about", [m.about or "" for m in memories], drop=4),
        Column("updated (UTC)", [when(m.updated_at.isoformat()) for m in memories], drop=2),
        Column("text", [m.text for m in memories], elastic=True, min_width=30),
    ]
    return columns


# -- commands -------------------------------------------------------------------------------


@app.command()
def search(
    query: Annotated[
        str, typer.Argument(help='What to recall, e.g. "how much risk am I ok with".')
    ],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="How many memories to show.")] = 5,
    weights: Annotated[
        str,
        typer.Option("--weights", help="recency,importance,relevance weights (rescaled to sum 1)."),
    ] = "0.3,0.2,0.5",
    half_life_days: Annotated[
        float, typer.Option("--half-life-days", help="Days for recency to halve.")
    ] = 30.0,
    json_mode: JsonOpt = False,
) -> None:
    """Recall your memories for QUERY, best first, with each score's parts."""
    from memory.recall import RecallWeights

    if limit < 1:
        raise CommandError(f"--limit {limit}: show at least 1 memory.")
    if half_life_days <= 0:
        raise CommandError(
            f"--half-life-days {half_life_days}: use a positive number of days, e.g. 30."
        )
    chosen = RecallWeights.parse(weights)
    settings = common.settings(user, tenant)
    found = common.call(
        settings,
        lambda a: a.recall(query, limit=limit, weights=chosen, half_life_days=half_life_days),
    )
    if json_mode:
        w = chosen.normalised()
        common.print_json(
            {
                "query": query,
                "tenant": settings.tenant_id,
                "user": settings.user_id,
                "weights": {
                    "recency": w.recency,
                    "importance": w.importance,
                    "relevance": w.relevance,
                },
                "half_life_days": half_life_days,
                "memories": [m.to_json() for m in found],
            },
            ensure_ascii=False,
        )
        return
    _show(found, settings.user_id, ranked=True)


@app.command()
def add(
    text: Annotated[
        str, typer.Argument(help='What to remember, e.g. "I prefer conservative positions".')
    ],
    importance: Annotated[
        int, typer.Option("--importance", min=1, max=10, help="1 (trivia) to 10 (essential).")
    ] = 5,
    kind: Annotated[
        str, typer.Option("--kind", help="preference, note, question, ... (free text).")
    ] = "note",
    about: Annotated[
        str | None,
        typer.Option("--about", help='What it is about, e.g. "risk tolerance" (also searched).'),
    ] = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Remember TEXT for you (adding the same text again refreshes it)."""
    settings = common.settings(user, tenant)
    key = common.call(
        settings, lambda a: a.remember(text, importance=importance, kind=kind, about=about)
    )
    if json_mode:
        common.print_json(
            {
                "key": key,
                "text": text.strip(),
                "importance": importance,
                "kind": kind,
                "about": about,
            },
            indent=None,
            ensure_ascii=False,
        )
        return
    common.console().print(f"Remembered {key} for {settings.user_id}.", soft_wrap=True)


@app.command(name="list")
def list_(
    user: UserOpt = None,
    tenant: TenantOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Most recent N memories.")] = 100,
    json_mode: JsonOpt = False,
) -> None:
    """List your memories, newest first."""
    if limit < 1:
        raise CommandError(f"--limit {limit}: list at least 1 memory.")
    settings = common.settings(user, tenant)
    found = common.call(settings, lambda a: a.memories(limit))
    if json_mode:
        common.print_json({"memories": [m.to_json() for m in found]}, ensure_ascii=False)
        return
    _show(found, settings.user_id, ranked=False)


@app.command()
def forget(
    key: Annotated[str, typer.Argument(help="Key of the memory (see: analyst memories list).")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Forget one memory."""
    settings = common.settings(user, tenant)
    common.call(settings, lambda a: a.forget(key))
    if json_mode:
        common.print_json({"forgotten": key}, indent=None)
        return
    common.console().print(f"Forgot {key}.", soft_wrap=True)
