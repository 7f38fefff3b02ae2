"""What each dashboard page asks the application, as plain functions of an open
:class:`~agent.app.AnalystApp`, and the two ways to run them off the web server's event loop.

Each operation opens the app for one principal, calls its memory API (the calls ``analyst
memory`` and ``analyst facts history`` make) and answers plain data. :class:`InThreads` runs
them on worker threads (``analyst dashboard``); :class:`InProcesses` in worker processes (the
LangGraph server, whose development server refuses blocking file I/O in any thread that runs
an event loop, and the storage layer does such I/O). A refusal of the application
(:class:`~agent.errors.AnalystError`) comes back as :class:`Refused`, whatever the way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
from collections.abc import Callable, Coroutine
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.app import AnalystApp
    from memory.identity import Principal

#: An operation: given the open app and its arguments, what the page shows.
Operation = Callable[..., Coroutine[Any, Any, Any]]


class Refused(Exception):
    """The application refused (its message says why and what to do); ``missing``: what was
    named does not exist (or is not the principal's)."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing

    def __reduce__(self) -> tuple[type[Refused], tuple[str, bool]]:
        # Both fields cross the process boundary (the default keeps only the message).
        return Refused, (str(self), self.missing)


def run(principal: Principal, operation: Operation, args: tuple[Any, ...]) -> Any:
    """Open the app for ``principal`` and run ``operation`` on it, on this thread's own
    event loop (the CLI's way); an application refusal becomes :class:`Refused`."""
    from agent.errors import AnalystError

    async def go() -> Any:
        from agent.app import AnalystApp
        from agent.settings import Settings

        settings = Settings.from_env(user_id=principal.user_id, tenant_id=principal.tenant_id)
        async with AnalystApp.open(settings, principal) as app:
            return await operation(app, *args)

    try:
        return asyncio.run(go())
    except AnalystError as error:
        message = " ".join([str(error), *getattr(error, "__notes__", ())])
        raise Refused(message, missing=getattr(error, "exit_code", 1) == 3) from None


class InThreads:
    """Operations on worker threads."""

    async def __call__(self, principal: Principal, operation: Operation, *args: Any) -> Any:
        return await asyncio.to_thread(run, principal, operation, args)

    def close(self) -> None:
        """Nothing to stop: each operation's thread ends with it."""


class InProcesses:
    """Operations in a pool of worker processes (started with ``spawn``, on first use)."""

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    def _submit(self, *call: Any) -> concurrent.futures.Future[Any]:
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool.submit(run, *call)

    async def __call__(self, principal: Principal, operation: Operation, *args: Any) -> Any:
        # Submitting may start a process (pipes, reads): on a worker thread, never the loop.
        future = await asyncio.to_thread(self._submit, principal, operation, args)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


# -- the operations -------------------------------------------------------------------------


async def profile(app: AnalystApp) -> tuple[dict[str, Any], dict[str, Any]]:
    """The facts in force (``analyst memory show``) and each one's whole history in the
    ledger (``analyst facts history me ATTRIBUTE``)."""
    from memory.facts import subject_for

    shown = await app.memory.show(sessions=0)
    ledger = await app.tiers.facts(create=False)
    subject = subject_for(app.principal)
    histories = {
        f["attribute"]: await ledger.history(subject, f["attribute"]) for f in shown["profile"]
    }
    return shown, histories


async def preferences(app: AnalystApp) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return await app.memory.show(sessions=0), await app.memory.procedures()


async def candidates(app: AnalystApp) -> list[dict[str, Any]]:
    return await app.memory.review()


async def sessions(app: AnalystApp) -> list[dict[str, Any]]:
    return await app.memory.sessions()


async def events(app: AnalystApp) -> list[dict[str, Any]]:
    return [m.to_json() for m in await app.memory.events(limit=100)]


async def audit(app: AnalystApp) -> list[dict[str, Any]]:
    return await app.memory.audit()


async def threads(
    app: AnalystApp, why: str | None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    rows = [v.to_json() for v in await app.threads(limit=50)]
    return rows, (await app.memory.why(why) if why else None)


async def remember(app: AnalystApp, text: str, as_: Any) -> dict[str, Any]:
    return await app.memory.remember(text, as_=as_)


async def retire(app: AnalystApp, procedure_id: str) -> dict[str, Any]:
    return await app.memory.retire_procedure(procedure_id)


async def confirm(app: AnalystApp, candidate_id: str) -> dict[str, Any]:
    return await app.memory.confirm(candidate_id)


async def reject(app: AnalystApp, candidate_id: str, reason: str) -> dict[str, Any]:
    return await app.memory.reject(candidate_id, reason)


async def forget(app: AnalystApp, item_id: str, confirm: bool) -> dict[str, Any]:
    return await app.memory.forget([item_id], confirm=confirm)


async def forget_account(app: AnalystApp, confirm: bool) -> dict[str, Any]:
    return await app.memory.forget_account(confirm=confirm)


async def documents(app: AnalystApp) -> list[dict[str, Any]]:
    """The Markdown documents the principal may read (``analyst notes list``), each with its
    front matter."""
    owned = await app.tiers.owned_documents()
    return [{"path": p, "metadata": owned.read(p).metadata} for p in owned.list("**/*.md")]


async def chart(app: AnalystApp, path: str) -> bytes:
    """The PNG chart published beside the research note ``path`` (its front matter's
    ``chart``), read under the note's own checks; a note without one is :class:`Refused`."""
    owned = await app.tiers.owned_documents()
    name = str(owned.read(path).metadata.get("chart") or "")
    if not name.endswith(".png") or "/" in name or "\\" in name or name.startswith("."):
        raise Refused(f"The document '{path}' has no chart.", missing=True)
    return owned.read_bytes(str(PurePosixPath(path).parent / name))


async def document(app: AnalystApp, path: str) -> dict[str, Any]:
    """One document as stored (``analyst notes show PATH``), read under the same checks."""
    doc = (await app.tiers.owned_documents()).read(path)
    return {"path": path, "metadata": doc.metadata, "body": doc.body}
