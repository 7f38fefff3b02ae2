"""``analyst memory`` commands that show what is remembered about you and add to it.

``show`` (each item with the command that edits or deletes it), ``list`` (one line per item
across the layers; ``--memories``: the long-term memories only, with importance, kind and
about), ``why THREAD`` (what a thread's last request used) and ``export`` (everything of yours
as one JSON document) read; ``remember TEXT --as fact|preference|procedure`` stores what you
say, citing an episode; ``add TEXT`` stores one long-term memory as given and ``search QUERY``
recalls them with each score's parts::

    total = alpha·recency + beta·importance + gamma·relevance    (--weights alpha,beta,gamma)

``add`` embeds the text (loading the local model the first time, a few seconds); ``list`` never
embeds, and ``search`` does not when you have no memories yet or asked the same question
before (embeddings are cached in the data directory).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

import agent.cli.common as common
from agent.cli.common import CommandError, JsonOpt, TenantOpt, UserOpt

if TYPE_CHECKING:
    from memory.recall import Recalled

app = typer.Typer()


@app.command()
def show(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """What the agent remembers about you, each item with the command that edits or deletes it."""
    settings = common.settings(user, tenant)
    seen = common.call(settings, lambda a: a.memory.show())
    if json_mode:
        common.print_json(seen, ensure_ascii=False)
        return
    import agent.cli.render as render

    render.memory_show(common.console(), seen)


@app.command()
def why(
    thread_id: Annotated[str, typer.Argument(help="The thread whose last request to explain.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """What the thread's last plan or answer used from memory, with provenance and scores."""
    settings = common.settings(user, tenant)
    used = common.call(settings, lambda a: a.memory.why(thread_id), thread_id=thread_id)
    if json_mode:
        common.print_json(used, ensure_ascii=False)
        return
    import agent.cli.render as render

    render.memory_why(common.console(), used)


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help='What to remember, e.g. "my horizon is 5 years".')],
    as_: Annotated[
        str,
        typer.Option(
            "--as", help="fact (a profile attribute), preference (default) or procedure (a rule)."
        ),
    ] = "preference",
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Remember TEXT as you say: a fact, a preference or a procedure, in every conversation."""
    if as_ not in ("fact", "preference", "procedure"):
        raise CommandError(f"--as '{as_}' is not one of fact, preference, procedure.")
    settings = common.settings(user, tenant)
    done = common.call(settings, lambda a: a.memory.remember(text, as_=as_))  # type: ignore[arg-type]
    if json_mode:
        common.print_json(done, ensure_ascii=False)
        return
    import agent.cli.render as render

    render.remembered(common.console(), done)


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
    """Remember TEXT as one long-term memory (adding the same text again refreshes it)."""
    settings = common.settings(user, tenant)
    key = common.call(
        settings, lambda a: a.memory.add_memory(text, importance=importance, kind=kind, about=about)
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
    common.console().print(
        f"Remembered {key} for {settings.user_id}.", soft_wrap=True, markup=False
    )


@app.command(name="list")
def list_(
    memories: Annotated[
        bool,
        typer.Option(
            "--memories",
            help="Only the long-term memories, newest first, with importance, kind and about.",
        ),
    ] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", help="With --memories: the most recent N (100).")
    ] = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Everything remembered about you across layers, one line each, with its id.

    --memories lists the long-term memories only (newest first, --limit N of them)."""
    if memories:
        list_memories(user, tenant, 100 if limit is None else limit, json_mode)
        return
    if limit is not None:
        raise CommandError("--limit goes with --memories (the layers are listed whole).")
    from agent.cli.render import Column, when

    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.listing())
    common.print_rows(
        rows,
        json_mode,
        "items",
        "Nothing remembered about you yet.",
        lambda rs: [
            Column("layer", [r["layer"] for r in rs]),
            Column("id", [r["id"] for r in rs]),
            Column("when", [when(r["when"]) for r in rs], drop=1),
            Column("text", [r["text"] for r in rs], elastic=True, min_width=24),
        ],
    )


def list_memories(user: str | None, tenant: str | None, limit: int, json_mode: bool) -> None:
    """``analyst memory list --memories``: the principal's long-term memories, newest first
    (JSON: ``{"memories": [...]}``)."""
    if limit < 1:
        raise CommandError(f"--limit {limit}: list at least 1 memory.")
    settings = common.settings(user, tenant)
    found = common.call(settings, lambda a: a.memory.memories(limit))
    if json_mode:
        common.print_json({"memories": [m.to_json() for m in found]}, ensure_ascii=False)
        return
    _show(found, settings.user_id, ranked=False)


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
        typer.Option(
            "--weights",
            help="recency,importance,relevance weights (rescaled to sum 1); default: the "
            "ranking's own, 0.3,0.2,0.5 (memory.ranking).",
        ),
    ] = "",
    half_life_days: Annotated[
        float | None,
        typer.Option(
            "--half-life-days",
            help="Days for recency to halve; default: the ranking's own, 30 (memory.ranking).",
        ),
    ] = None,
    json_mode: JsonOpt = False,
) -> None:
    """Recall your long-term memories for QUERY, best first, with each score's parts."""
    from memory.ranking import DEFAULT_WEIGHTS, KNOBS, RecallWeights

    if limit < 1:
        raise CommandError(f"--limit {limit}: show at least 1 memory.")
    if half_life_days is None:
        half_life_days = KNOBS.half_life_days
    if half_life_days <= 0:
        raise CommandError(
            f"--half-life-days {half_life_days}: use a positive number of days, e.g. 30."
        )
    chosen = RecallWeights.parse(weights) if weights else DEFAULT_WEIGHTS
    settings = common.settings(user, tenant)
    found = common.call(
        settings,
        lambda a: a.memory.recall(
            query, limit=limit, weights=chosen, half_life_days=half_life_days
        ),
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
def export(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """Everything kept of you as one JSON document (always JSON; --json is accepted)."""
    settings = common.settings(user, tenant)
    common.print_json(common.call(settings, lambda a: a.memory.export()), ensure_ascii=False)


# -- long-term memories as a table ----------------------------------------------------------


def _show(found: Sequence[Recalled], user_id: str, *, ranked: bool) -> None:
    import agent.cli.render as render

    console = common.console()
    if not found:
        console.print(
            f"No memories for {user_id}. Add one with: analyst memory add TEXT", soft_wrap=True
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
