"""Hot memory: LangGraph checkpointers opened from a URL.

Public API (the contract is LangGraph's ``BaseCheckpointSaver``)::

    async with open_checkpointer(settings.checkpointer, encryption_key=key,
                                 allowed_modules=("myapp.state",)) as saver:
        graph = builder.compile(checkpointer=saver)
    await setup_checkpointer(url)          # create / migrate the schema, say what was done
    keeps_history(saver)                   # False for redis+shallow
    capabilities(saver_or_url)             # backend, history, sealed

Supported URLs (set by ``ANALYST_CHECKPOINTER`` or ``--checkpointer``; see :data:`SCHEMES`):

- ``sqlite:///relative/path.sqlite`` or ``sqlite:////absolute/path.sqlite`` -- the embedded
  default, an async SQLite saver over one file (WAL mode, shared safely by processes), with
  group commit (:mod:`memory.checkpoint.sqlite`).
- ``postgres://user:pass@host:5432/db`` (or ``postgresql://``) -- LangGraph's async Postgres
  saver over a psycopg connection pool: durable history and time travel. Options
  ``pool_max``, ``pool_timeout`` (:mod:`memory.checkpoint.postgres`).
- ``redis://host:6380/0`` -- the async Redis saver (Redis Stack: RedisJSON and RediSearch),
  full history; ``redis+shallow://...`` keeps only each thread's latest checkpoint (no
  history, no time travel). Options ``prefix``, ``ttl`` (e.g. ``90d``: keys expire that long
  after their last write and each read refreshes them) (:mod:`memory.checkpoint.redis`).
- ``memory://`` -- LangGraph's in-process ``InMemorySaver`` (tests, throwaway runs).

Write paths: the SQLite and Redis savers are LangGraph's, with ``aput``/``aput_writes``
replaced by versions that store the very same rows / JSON documents under the same keys in
fewer trips; LangGraph's readers, listing, deletion and indexes are used unchanged, and every
write is committed / acknowledged before its call returns. ``scripts/bench_checkpoints.py``
measures the result against a raw write.

Failures are specific: an unreachable server is :class:`CheckpointerUnavailableError` naming
the URL with its password masked, also when the server goes away mid-run
(:mod:`memory.checkpoint.guard`); a Redis without its modules is
:class:`CheckpointerModulesMissingError`; an unknown scheme is
:class:`UnsupportedBackendError` listing the schemes.

Modules: ``url`` (parsing, options), ``factory`` (open, setup, capabilities), ``guard``
(connection-error translation), ``sealed`` (encryption at rest), and one per backend:
``sqlite``, ``postgres``, ``redis`` (+ ``redis_wire``, the one-trip write commands).
"""

from memory.checkpoint.factory import (
    Capabilities,
    capabilities,
    keeps_history,
    open_checkpointer,
    setup_checkpointer,
)
from memory.checkpoint.sealed import SealedSaver
from memory.checkpoint.url import (
    SCHEMES,
    Backend,
    CheckpointerURL,
    parse_checkpointer_url,
    parse_duration_minutes,
    parse_sqlite_path,
)

__all__ = [
    "SCHEMES",
    "Backend",
    "Capabilities",
    "CheckpointerURL",
    "SealedSaver",
    "capabilities",
    "keeps_history",
    "open_checkpointer",
    "parse_checkpointer_url",
    "parse_duration_minutes",
    "parse_sqlite_path",
    "setup_checkpointer",
]
