"""Hot memory: LangGraph checkpointers (``BaseCheckpointSaver``) opened from a URL.

    async with open_checkpointer(settings.checkpointer, encryption_key=key,
                                 allowed_modules=("myapp.state",)) as saver:
        graph = builder.compile(checkpointer=saver)
    await setup_checkpointer(url)          # create / migrate the schema, say what was done
    keeps_history(saver)                   # False for redis+shallow
    await delete_threads(saver, ids)       # many threads at once (one transaction if it can)
    capabilities(saver_or_url)             # backend, history, sealed

URLs (:data:`SCHEMES`): ``sqlite:///path`` (the embedded default), ``postgres://...``,
``redis://...`` / ``redis+shallow://...`` (Redis Stack) and ``memory://``. Modules: ``url``,
``factory``, ``guard`` (connection errors), ``sealed`` (encryption at rest) and one per
backend. Backends, write paths and failures: ``docs/architecture.md``, "Checkpointers".
"""

from memory.checkpoint.factory import (
    Capabilities,
    capabilities,
    delete_threads,
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
    "delete_threads",
    "keeps_history",
    "open_checkpointer",
    "parse_checkpointer_url",
    "parse_duration_minutes",
    "parse_sqlite_path",
    "setup_checkpointer",
]
