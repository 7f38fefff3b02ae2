"""Connection failures of server-backed savers, translated into one error that names the URL.

Contract: a saver class that mixes in :class:`Guarded` (before LangGraph's saver class) raises
:class:`CheckpointerUnavailableError` -- carrying the URL with its password masked and the
driver's reason -- whenever a read, listing, write or deletion fails because the server cannot
be reached or went away; every other error passes through unchanged. The factories use
:func:`unavailable_types` and :func:`reason` for the same translation while they connect, and
:func:`quiet_library_logs` so the failure is reported once, not also as driver warnings.
:class:`GuardedCalls` is the list of guarded calls, shared with the SQLite saver's guard.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from memory.errors import CheckpointerUnavailableError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


def unavailable_types() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the server cannot be reached" for the installed drivers."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    with contextlib.suppress(ImportError):
        import psycopg

        types += [psycopg.OperationalError, psycopg.InterfaceError]
    with contextlib.suppress(ImportError):
        import redis.exceptions

        types += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
    return tuple(types)


def reason(error: BaseException) -> str:
    """A driver error as one line of at most 300 characters."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


class GuardedCalls(BaseCheckpointSaver[Any]):
    """Runs each async read, listing, write and deletion of the saver class it is mixed in
    before inside :meth:`_guard` (reads and listings inside :meth:`_read_guard`, which adds
    to it): the one list of the calls a saver's error translation covers. Subclasses say
    what the guard translates (:class:`Guarded`: connection failures; the SQLite saver:
    storage faults of its file)."""

    def _guard(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _read_guard(self, config: RunnableConfig | None) -> AbstractContextManager[None]:
        """The guard of a read of ``config``'s thread; :meth:`_guard` unless a saver says more."""
        return self._guard()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        with self._read_guard(config):
            return await super().aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        with self._read_guard(config):
            async for item in super().alist(config, filter=filter, before=before, limit=limit):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        with self._guard():
            return await super().aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self._guard():
            await super().aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        with self._guard():
            await super().adelete_thread(thread_id)


class Guarded(GuardedCalls):
    """Turns connection failures of a server-backed saver into CheckpointerUnavailableError.

    Mixed in before the LangGraph saver class; ``display_url`` is set by the factory.
    """

    display_url: str = ""

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except CheckpointerUnavailableError:
            raise
        except unavailable_types() as e:
            raise CheckpointerUnavailableError(self.display_url, reason(e)) from e


def quiet_library_logs(name: str) -> None:
    """Keep a driver's reconnect warnings off stderr unless the application logs them.

    Without any handler, Python prints a library's WARNING records to stderr (the "last
    resort" handler); the failure itself surfaces as one CheckpointerUnavailableError. A
    NullHandler stops that fallback; records still propagate to handlers the app configures.
    """
    logger = logging.getLogger(name)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
