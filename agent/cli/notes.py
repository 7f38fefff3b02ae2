"""``analyst notes``: list, show, search and edit the Markdown document memory.

Documents live in ``ANALYST_MEMORY_DIR`` (default ``.agent-memory``); the search index lives
in ``ANALYST_DATA_DIR``. Every path goes through the document memory as the principal may use
it (:meth:`agent.app.tiers.Tiers.owned_documents`, :mod:`memory.doc_authority`): an unsafe
path (absolute, ``..``, a link leading outside) or another user's profile document is refused
with a clear error and exit code 2, a published research note is revised, never replaced, and
every write is audited. ``edit`` opens ``$VISUAL``/``$EDITOR`` on a private copy and writes the
result back atomically with the same checks; ``--text``/``--file`` write without an editor.

Only typer and the standard library are imported at module level, so ``analyst --help``
stays fast.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

import agent.cli.common as common
from agent.cli.common import CommandError, JsonOpt, group
from agent.cli.terminal import literal, say

if TYPE_CHECKING:
    from agent.app import AnalystApp
    from memory.doc_authority import OwnedDocuments
    from memory.doc_search import RefreshStats

T = TypeVar("T")

app = group(
    "notes", "Document memory: conventions, research notes and the handoff, as Markdown files."
)


#: The audit's reason for a person's edit through this command.
EDIT_REASON = "edited with analyst notes"


def _call(body: Callable[[OwnedDocuments], T]) -> T:
    """Run ``body`` on the principal's document memory (opened for this call, closed after)."""

    async def go(app: AnalystApp) -> T:
        return body(await app.tiers.owned_documents())

    return common.call(common.settings(), go)


@app.command("list")
def list_(
    pattern: Annotated[
        str,
        typer.Argument(
            help="Glob relative to the memory folder, e.g. 'research/*.md' or a folder."
        ),
    ] = "**/*.md",
    json_mode: JsonOpt = False,
) -> None:
    """List documents matching a glob (default: every Markdown document)."""
    paths = _call(lambda d: d.list(pattern))
    if json_mode:
        common.print_json(paths)
        return
    for path in paths:
        say(path)


@app.command()
def show(
    path: Annotated[str, typer.Argument(help="Document path, e.g. conventions/data-sources.md")],
    json_mode: JsonOpt = False,
) -> None:
    """Print a document exactly as stored (front matter included)."""
    if json_mode:

        def load(d: OwnedDocuments) -> dict[str, object]:
            doc = d.read(path)
            return {"path": path, "metadata": doc.metadata, "body": doc.body}

        common.print_json(_call(load), default=str)
        return
    text = _call(lambda d: d.read_text(path))
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words to find (all must occur, whole words).")],
    limit: Annotated[int, typer.Option("--limit", help="Most relevant N documents.")] = 10,
    pattern: Annotated[
        str | None, typer.Option("--glob", help="Only documents matching this glob.")
    ] = None,
    json_mode: JsonOpt = False,
) -> None:
    """Ranked keyword search: each hit shows the path and the best-matching paragraph."""
    hits = _call(lambda d: d.search(query, limit=limit, pattern=pattern))
    if json_mode:
        common.print_json([h.to_json() for h in hits])
        return
    if not hits:
        say(f"No document contains all of: {query}")
        return
    out = common.console()
    for hit in hits:
        out.print(
            f"[bold]{literal(hit.path)}[/]:{hit.line}  [dim]{literal(hit.title)}[/]", soft_wrap=True
        )
        paragraph = hit.paragraph if len(hit.paragraph) <= 600 else hit.paragraph[:600] + " …"
        for line in paragraph.splitlines():
            out.print(f"    {line}", markup=False, soft_wrap=True)
        out.print()


@app.command()
def edit(
    path: Annotated[str, typer.Argument(help="Document to edit or create.")],
    text: Annotated[
        str | None, typer.Option("--text", help="Write this text instead of opening an editor.")
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Write this file's content instead of opening an editor."),
    ] = None,
) -> None:
    """Edit a document in $EDITOR (or write --text / --file); the write is checked, atomic and
    audited. Editing a published research note saves a revision beside it (the note stays as
    it is); only you (or an admin) may edit your profile document.

    Front matter the analyst writes (approver, approved_at, decision, thread_id, supersedes,
    revised_by, owner ...) is set from who you are: the editor does not show it, and text
    that states it is refused."""
    if text is not None and file is not None:
        raise CommandError("Give either --text or --file, not both.")
    # Check the path before anyone spends time typing into an editor.
    # A document that is not UTF-8 can be replaced whole (--text / --file), not edited.
    current = _call(lambda d: _current(d, path, replacing=text is not None or file is not None))
    if text is not None:
        new = text
    elif file is not None:
        try:
            new = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CommandError(
                f"Cannot read --file {file}: {e}. Give a UTF-8 Markdown file."
            ) from e
    else:
        new = _run_editor(path, current or "")
    if current is not None and new == current:
        say(f"{path}: no changes.")
        return

    async def save(app: AnalystApp) -> tuple[Path, str]:
        documents = await app.tiers.owned_documents()
        saved, what = await documents.save(path, new, reason=EDIT_REASON)
        documents.files.index.refresh_paths([saved])  # searchable at once
        return documents.resolve(saved), what

    written, what = common.call(common.settings(), save)
    if what == "revised":
        say(f"Revised {path}: saved as {written} (the published note is unchanged).")
    else:
        say(f"{what.capitalize()} {written}")


def _current(documents: OwnedDocuments, path: str, *, replacing: bool) -> str | None:
    """The document's text as a person edits it (None: there is none, or ``replacing`` a
    damaged one whole): without the front matter fields only the analyst writes (a
    published note's approval; the revision gets its own)."""
    from agent.errors import DocumentNotFoundError
    from memory.authorship import without_code_fields
    from memory.errors import DocumentEncodingError

    documents.check_write(path)  # refused before anyone types into an editor
    try:
        return without_code_fields(documents.read_text(path))
    except DocumentNotFoundError:
        return None
    except DocumentEncodingError as e:
        if replacing:
            return None
        raise CommandError(f"{e} Replace it whole with --text or --file.") from e


def _run_editor(path: str, content: str) -> str:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise CommandError("No editor: set $EDITOR (e.g. EDITOR=nano), or pass --text or --file.")
    suffix = Path(path).suffix or ".md"
    # The editor works on a private copy: whatever it does, only the checked write below
    # reaches the memory folder.
    with tempfile.TemporaryDirectory(prefix="analyst-notes-") as tmp:
        copy = Path(tmp) / f"edit{suffix}"
        copy.write_text(content, encoding="utf-8")
        try:
            result = subprocess.run([*shlex.split(editor), str(copy)], check=False)
        except OSError as e:
            raise CommandError(
                f"Cannot start the editor '{editor}': {e}. Set $EDITOR to an installed one."
            ) from e
        if result.returncode != 0:
            raise CommandError(
                f"The editor '{editor}' exited with {result.returncode}; nothing was saved.", 1
            )
        try:
            return copy.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise CommandError(f"The edited text is not UTF-8 ({e}); nothing was saved.") from e
    raise AssertionError("unreachable")  # pragma: no cover


@app.command()
def reindex(
    full: Annotated[
        bool, typer.Option("--full", help="Delete the index and rebuild it from every file.")
    ] = False,
    json_mode: JsonOpt = False,
) -> None:
    """Update the search index now (picks up hand edits at once); --full rebuilds it."""

    def run(d: OwnedDocuments) -> tuple[RefreshStats, list[tuple[str, str]]]:
        stats = d.files.reindex(full=full)
        return stats, [(p, r) for p, r in d.files.index.problems() if d.may_read(p)]

    stats, problems = _call(run)
    if json_mode:
        common.print_json(
            {**stats.to_json(), "problems": [{"path": p, "reason": r} for p, r in problems]}
        )
        return
    say(
        f"Scanned {stats.scanned} documents: {stats.indexed} indexed, {stats.removed} removed, "
        f"{stats.unchanged} unchanged ({stats.read} read) in {stats.seconds:.2f} s."
    )
    for path, reason in problems:
        say(f"not indexed: {path}: {reason}")
