"""Keyword search over document memory: a SQLite FTS5 index kept in step with the files.

One row per Markdown document under the root; :meth:`DocumentIndex.search` returns the path,
the best paragraph and a BM25 score, best first, for documents holding every query word
(:mod:`memory.doc_search` defines the match). Refresh is incremental (files are stat-ed, re-read
when their time or size changed, re-indexed when their bytes did); the database is derived
data, rebuilt when unusable or opened for another root. Details: ``docs/architecture.md``,
"Document memory".
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from memory.doc_search import (
    RefreshStats,
    SearchHit,
    best_paragraph,
    document_title,
    match_expression,
    query_words,
    word_pattern,
)
from memory.errors import (
    DocumentIndexError,
    DocumentNotFoundError,
    DocumentPathError,
    InvalidSearchError,
)
from memory.health import is_corruption
from memory.markdown import DocumentStat, RawDocument
from memory.sql.connect import enable_wal
from memory.sql.user_version import Migrations, migrate

#: Rank: a hit in the title weighs more than one in the text. Called directly rather than
#: through FTS5's configurable ``rank`` column, which costs about a third more per row.
RANK = "bm25(docs_fts, 4.0, 1.0)"
#: After re-indexing this many documents at once, merge the index's segments (faster reads).
OPTIMIZE_AFTER = 1000
DEFAULT_RACY_WINDOW = 2.0
_RACY = -1  # stored instead of a modification time: re-read this file on the next scan

MIGRATIONS: Migrations = (
    (
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT,
            title TEXT,
            problem TEXT
        )""",
        "CREATE VIRTUAL TABLE docs_fts USING fts5("
        "title, body, tokenize = 'unicode61 remove_diacritics 0')",
    ),
)


@dataclass
class _Counts:
    read: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


class IndexedFolder(Protocol):
    """What the index reads from a document folder (:class:`~memory.documents.FileMemory`)."""

    def real_root(self) -> str: ...

    def scan(self, pattern: str = ...) -> list[DocumentStat]: ...

    def exists(self, relpath: str) -> bool: ...

    def read_raw(self, relpath: str) -> RawDocument: ...


class DocumentIndex:
    """The FTS5 index of one document folder (``path`` None: an index in memory)."""

    def __init__(
        self,
        documents: IndexedFolder,
        path: Path | None = None,
        *,
        refresh_interval: float = 2.0,
        racy_window: float = DEFAULT_RACY_WINDOW,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if refresh_interval < 0:
            raise ValueError(f"refresh_interval must be >= 0 seconds, got {refresh_interval}")
        self.documents = documents
        self.path = path
        self.refresh_interval = refresh_interval
        self.racy_window = racy_window
        self.clock: Callable[[], float] = clock or time.time
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._dirty: set[str] = set()

    # -- connection ----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        target = ":memory:" if self.path is None else str(self.path)
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as e:
            raise DocumentIndexError(
                f"Cannot open the document index at {target}: {e}. Check that the data folder "
                "is writable (ANALYST_DATA_DIR)."
            ) from e
        try:
            self._prepare(conn)
        except sqlite3.Error as e:
            conn.close()
            if not (is_corruption(e) and self.path is not None):
                raise self._unusable(e) from e
            # Derived data: a damaged file is moved aside and the index built again.
            self._move_aside(e)
            conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
            try:
                self._prepare(conn)
            except sqlite3.Error as again:
                conn.close()
                raise self._unusable(again) from again
        self._conn = conn
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA busy_timeout = 30000")
        if self.path is not None:
            enable_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        # A removed document's rows (and freed pages) are overwritten with zeros in the file.
        conn.execute("PRAGMA secure_delete = ON")
        conn.create_function("regexp", 2, _regexp, deterministic=True)
        migrate(conn, MIGRATIONS)
        self._bind_root(conn)

    def _move_aside(self, error: BaseException) -> None:
        """Move a damaged index file (and its WAL) aside, saying so on stderr."""
        assert self.path is not None
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        sys.stderr.write(
            f"warning: the document index {self.path} was damaged ({error}); moved it aside to "
            f"{aside} and building a new one (it only holds what the documents say).\n"
        )

    def _unusable(self, e: BaseException) -> DocumentIndexError:
        return DocumentIndexError(
            f"The document index {self.path or ':memory:'} is unusable ({e}). It only holds "
            "derived data: rebuild it with `analyst notes reindex --full`."
        )

    def _bind_root(self, conn: sqlite3.Connection) -> None:
        root = self.documents.real_root()
        row = conn.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
        if row is not None and row[0] == root:
            return
        with _transaction(conn):
            row = conn.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
            if row is None or row[0] != root:
                conn.execute("DELETE FROM docs_fts")
                conn.execute("DELETE FROM documents")
                conn.execute("DELETE FROM meta WHERE key = 'last_scan'")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('root', ?)", (root,))

    @contextmanager
    def _use(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                yield conn
            except sqlite3.DatabaseError as e:
                if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
                    raise DocumentIndexError(
                        f"The document index {self.path} stayed locked by another process for "
                        "30 s; try again."
                    ) from e
                if is_corruption(e) and self.path is not None:
                    # Found damaged mid-use: moved aside now, built again by the next command.
                    conn.close()
                    self._conn = None
                    self._move_aside(e)
                    raise DocumentIndexError(
                        f"The document index {self.path} was damaged and has been moved aside; "
                        "run the command again to use a new index."
                    ) from e
                raise self._unusable(e) from e

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- keeping up with the files -------------------------------------------------------

    def mark_dirty(self, relpath: str) -> None:
        """Note a document this process wrote or deleted: the next search re-indexes it."""
        with self._lock:
            self._dirty.add(relpath)

    def last_scan(self) -> float | None:
        """When the last full scan started (by the clock), in any process; None: never."""
        with self._use() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'last_scan'").fetchone()
        return float(row[0]) if row else None

    def document_count(self) -> int:
        with self._use() as conn:
            return int(
                conn.execute("SELECT count(*) FROM documents WHERE problem IS NULL").fetchone()[0]
            )

    def ensure_fresh(self) -> RefreshStats | None:
        """Scan if the last scan is older than the freshness window; else apply own writes."""
        with self._lock:
            last = self.last_scan()
            now = self.clock()
            if last is None or now - last >= self.refresh_interval or now < last:
                return self.refresh()
            if self._dirty:
                return self.refresh_paths(sorted(self._dirty))
            return None

    def refresh(self) -> RefreshStats:
        """Scan every file's size and time now; re-read only the ones that changed."""
        with self._lock:
            started, t0 = self.clock(), time.perf_counter()
            self._dirty.clear()
            files = self.documents.scan()
            counts = _Counts()
            with self._use() as conn, _transaction(conn):
                known = {
                    row[0]: (row[1], row[2], row[3], row[4])
                    for row in conn.execute(
                        "SELECT path, id, mtime_ns, size, sha256 FROM documents"
                    )
                }
                present = {f.path for f in files}
                for path in known.keys() - present:
                    self._remove(conn, known[path][0])
                    counts.removed += 1
                for f in files:
                    old = known.get(f.path)
                    if old is not None and old[1] == f.mtime_ns and old[2] == f.size:
                        counts.unchanged += 1
                        continue
                    self._index_one(conn, f.path, old, counts)
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('last_scan', ?)", (repr(started),)
                )
            if counts.indexed >= OPTIMIZE_AFTER:
                with self._use() as conn, _transaction(conn):
                    conn.execute("INSERT INTO docs_fts (docs_fts) VALUES ('optimize')")
            return _stats(True, len(files), counts, time.perf_counter() - t0)

    def refresh_paths(self, paths: Iterable[str]) -> RefreshStats:
        """Re-check just these documents (written or deleted by this process)."""
        with self._lock:
            t0 = time.perf_counter()
            wanted = sorted(set(paths))
            self._dirty.difference_update(wanted)
            counts = _Counts()
            with self._use() as conn, _transaction(conn):
                for path in wanted:
                    row = conn.execute(
                        "SELECT id, mtime_ns, size, sha256 FROM documents WHERE path = ?", (path,)
                    ).fetchone()
                    old = (row[0], row[1], row[2], row[3]) if row else None
                    if not _indexable(path) or not self._still_there(path):
                        if old is not None:
                            self._remove(conn, old[0])
                            counts.removed += 1
                        continue
                    self._index_one(conn, path, old, counts)
            return _stats(False, len(wanted), counts, time.perf_counter() - t0)

    def rebuild(self) -> RefreshStats:
        """Delete the database and index every file again (the fix for a damaged index)."""
        with self._lock:
            self.close()
            if self.path is not None:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            return self.refresh()

    def _still_there(self, path: str) -> bool:
        try:
            return self.documents.exists(path)
        except DocumentPathError:
            return False

    def _index_one(
        self,
        conn: sqlite3.Connection,
        path: str,
        old: tuple[int, int, int, str | None] | None,
        counts: _Counts,
    ) -> None:
        counts.read += 1
        try:
            raw = self.documents.read_raw(path)
            text = raw.data.decode("utf-8")
        except UnicodeDecodeError as e:
            self._record_problem(conn, path, old, f"not UTF-8 text (byte {e.start})", counts)
            return
        except DocumentNotFoundError:  # vanished since the scan
            if old is not None:
                self._remove(conn, old[0])
                counts.removed += 1
            return
        except DocumentPathError as e:  # too large, or a link swapped in
            self._record_problem(conn, path, old, str(e), counts)
            return
        mtime = raw.mtime_ns
        if time.time_ns() - raw.mtime_ns < self.racy_window * 1e9:
            mtime = _RACY
        digest = hashlib.sha256(raw.data).hexdigest()
        if old is not None and old[3] == digest:
            conn.execute(
                "UPDATE documents SET mtime_ns = ?, size = ?, problem = NULL WHERE id = ?",
                (mtime, raw.size, old[0]),
            )
            counts.unchanged += 1
            return
        title = document_title(path, text)
        if old is None:
            doc_id = conn.execute(
                "INSERT INTO documents (path, mtime_ns, size, sha256, title) VALUES (?, ?, ?, ?, ?)",
                (path, mtime, raw.size, digest, title),
            ).lastrowid
        else:
            doc_id = old[0]
            conn.execute(
                "UPDATE documents SET mtime_ns = ?, size = ?, sha256 = ?, title = ?, "
                "problem = NULL WHERE id = ?",
                (mtime, raw.size, digest, title, doc_id),
            )
            conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
        conn.execute(
            "INSERT INTO docs_fts (rowid, title, body) VALUES (?, ?, ?)", (doc_id, title, text)
        )
        counts.indexed += 1

    def _record_problem(
        self,
        conn: sqlite3.Connection,
        path: str,
        old: tuple[int, int, int, str | None] | None,
        reason: str,
        counts: _Counts,
    ) -> None:
        counts.skipped.append((path, reason))
        mtime, size = _RACY, -1
        try:
            st = next(iter(self.documents.scan(path)), None)
            if st is not None:
                mtime, size = st.mtime_ns, st.size
        except DocumentPathError:
            pass
        if old is None:
            conn.execute(
                "INSERT INTO documents (path, mtime_ns, size, problem) VALUES (?, ?, ?, ?)",
                (path, mtime, size, reason),
            )
        else:
            conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (old[0],))
            conn.execute(
                "UPDATE documents SET mtime_ns = ?, size = ?, sha256 = NULL, title = NULL, "
                "problem = ? WHERE id = ?",
                (mtime, size, reason, old[0]),
            )

    @staticmethod
    def _remove(conn: sqlite3.Connection, doc_id: int) -> None:
        conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
        conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def problems(self) -> list[tuple[str, str]]:
        """Documents left out of the index, with the reason."""
        with self._use() as conn:
            return [
                (row[0], row[1])
                for row in conn.execute(
                    "SELECT path, problem FROM documents WHERE problem IS NOT NULL ORDER BY path"
                )
            ]

    # -- searching -----------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int | None = 10,
        path_regex: re.Pattern[str] | None = None,
        readable: Callable[[str], bool] | None = None,
    ) -> list[SearchHit]:
        """Ranked documents containing every word of ``query``, each with its best paragraph.

        ``readable`` keeps only the paths it accepts, inside the query (so a limit counts
        only documents the caller may read)."""
        words = self._words(query)
        if limit is not None and limit < 1:
            raise InvalidSearchError(f"--limit must be at least 1, got {limit}.")
        self.ensure_fresh()
        sql = (
            f"SELECT f.rowid, d.path, d.title, {RANK} AS score FROM docs_fts f "
            "JOIN documents d ON d.id = f.rowid WHERE docs_fts MATCH ?"
        )
        params: list[Any] = [match_expression(words)]
        if path_regex is not None:
            sql += " AND regexp(?, d.path)"
            params.append(path_regex.pattern)
        if readable is not None:
            sql += " AND readable(d.path)"
        sql += " ORDER BY score"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        patterns = [word_pattern(w) for w in words]
        with self._use() as conn:
            if readable is not None:
                conn.create_function("readable", 1, readable, deterministic=True)
            rows = conn.execute(sql, params).fetchall()
            hits = []
            for rowid, path, title, rank in rows:
                body = conn.execute(
                    "SELECT body FROM docs_fts WHERE rowid = ?", (rowid,)
                ).fetchone()
                paragraph, line = best_paragraph(body[0] if body else "", patterns)
                hits.append(SearchHit(path, title or "", paragraph, line, -float(rank)))
        return hits

    def matching_paths(self, query: str) -> set[str]:
        """Every indexed document that contains all words of ``query`` (no ranking)."""
        words = self._words(query)
        self.ensure_fresh()
        with self._use() as conn:
            return {
                row[0]
                for row in conn.execute(
                    "SELECT d.path FROM docs_fts f JOIN documents d ON d.id = f.rowid "
                    "WHERE docs_fts MATCH ?",
                    (match_expression(words),),
                )
            }

    @staticmethod
    def _words(query: str) -> list[str]:
        words = query_words(query)
        if not words:
            raise InvalidSearchError(
                f"Search query {query!r} has no words to look for; give one or more words, "
                "e.g. 'drawdown NVDA'."
            )
        return words


def _indexable(path: str) -> bool:
    return path.endswith(".md") and not any(p.startswith(".") for p in path.split("/"))


def _regexp(pattern: str, value: str | None) -> bool:
    return value is not None and _compiled(pattern).fullmatch(value) is not None


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _stats(full: bool, scanned: int, counts: _Counts, seconds: float) -> RefreshStats:
    return RefreshStats(
        full_scan=full,
        scanned=scanned,
        read=counts.read,
        indexed=counts.indexed,
        unchanged=counts.unchanged,
        removed=counts.removed,
        skipped=tuple(counts.skipped),
        seconds=seconds,
    )


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
