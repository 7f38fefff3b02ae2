"""Document memory: Markdown files with optional YAML front matter under one root folder.

Paths are relative to the root; one that is absolute, has a ``..`` part or leads outside the
root through a symbolic link is refused (:class:`DocumentPathError`) before anything is made.
Files are size-limited, Markdown must be UTF-8, writes are atomic (``exclusive=True``: only if
the name is free), :meth:`FileMemory.update` is a locked read-modify-write, and ``search``
ranks from the FTS5 index of :mod:`memory.doc_index`. POSIX only. Details:
``docs/architecture.md``, "Document memory". A Markdown document's body is redacted as it is
written (:func:`memory.pii.redact`; its front matter, which code writes, is kept as it is).
The fields only code writes (:data:`memory.authorship.CODE_FIELDS`) come only from
:meth:`FileMemory.write`'s metadata; text that states one is refused.
"""

from __future__ import annotations

import builtins
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memory.authorship import refuse_code_fields
from memory.errors import (
    DocumentEncodingError,
    DocumentFormatError,
    DocumentNotFoundError,
    DocumentPathError,
    DocumentTooLargeError,
)
from memory.markdown import (
    DocumentStat,
    RawDocument,
    glob_regex,
    join_front_matter,
    split_front_matter,
)
from memory.pii import redact

if TYPE_CHECKING:
    from memory.config import StorageSettings
    from memory.doc_index import DocumentIndex
    from memory.doc_search import RefreshStats, SearchHit

DEFAULT_MAX_BYTES = 1_000_000
#: Seconds a search trusts the index before it re-checks the files' sizes and times.
DEFAULT_REFRESH_INTERVAL = 2.0
#: File name of the search index inside the data folder.
INDEX_FILENAME = "documents.sqlite"
#: The documents the index covers.
MARKDOWN_PATTERN = "**/*.md"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True)
class Document:
    path: str
    body: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Location:
    root: str  # the real (symlink-free) root
    folders: tuple[str, ...]  # real folders from the root to the file's folder
    name: str  # the file's name inside that folder

    @property
    def relpath(self) -> str:
        return "/".join((*self.folders, self.name))


class FileMemory:
    """Safe, atomic Markdown documents under ``root``; ranked search through an index.

    ``index_path`` is the SQLite file of the search index (``None``: an in-memory index that
    lives as long as this object). :meth:`from_settings` puts it in the data folder.
    """

    def __init__(
        self,
        root: Path | str,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        index_path: Path | str | None = None,
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
        clock: Callable[[], float] | None = None,
    ) -> None:
        from memory.doc_index import DocumentIndex

        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.index: DocumentIndex = DocumentIndex(
            self,
            Path(index_path) if index_path is not None else None,
            refresh_interval=refresh_interval,
            clock=clock,
        )

    @classmethod
    def from_settings(
        cls,
        settings: StorageSettings,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
    ) -> FileMemory:
        """Document memory at ``settings.memory_dir`` with its index in the data folder."""
        return cls(
            settings.memory_dir,
            max_bytes=max_bytes,
            index_path=settings.data_dir / INDEX_FILENAME,
            refresh_interval=refresh_interval,
        )

    def close(self) -> None:
        """Close the search index's database connection (reopened on the next search)."""
        self.index.close()

    def __enter__(self) -> FileMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- paths ---------------------------------------------------------------------------

    def resolve(self, relpath: str) -> Path:
        """Map a document path to a file inside the root, or raise DocumentPathError.

        The result is the lexical path under the real root (links inside the root are not
        expanded); the checks are the ones every operation applies.
        """
        parts = self._check_relpath(relpath)
        self._locate(relpath, follow=True)
        return Path(self.real_root(), *parts)

    def _check_relpath(self, relpath: str) -> tuple[str, ...]:
        if not isinstance(relpath, str) or not relpath.strip() or "\x00" in relpath:
            raise DocumentPathError(
                f"Invalid document path {relpath!r}: give a relative path such as research/NVDA.md."
            )
        if relpath.startswith(("/", "\\")) or Path(relpath).is_absolute():
            raise DocumentPathError(
                f"Document path '{relpath}' is absolute; use a path relative to {self.root}."
            )
        parts = PurePosixPath(relpath).parts
        if ".." in parts:
            raise DocumentPathError(
                f"Document path '{relpath}' contains '..'; paths must stay inside {self.root}."
            )
        if not parts or parts == (".",):
            raise DocumentPathError(
                f"Document path '{relpath}' names the memory folder itself; name a file in it."
            )
        return tuple(p for p in parts if p != ".")

    def real_root(self) -> str:
        """The root folder with every symbolic link resolved (what paths are checked against)."""
        return os.path.realpath(self.root)

    def real_path(self, relpath: str, *, follow: bool = True) -> str:
        """The document path ``relpath`` really names (links inside the root expanded; with
        ``follow`` false a link at the end is its own target, as :meth:`delete` sees it):
        what an authority check must judge, not the spelling it was given."""
        return self._locate(relpath, follow=follow).relpath

    def _locate(self, relpath: str, *, follow: bool) -> _Location:
        """Where ``relpath`` really is: folders from the real root, and the file name.

        ``follow`` expands a link at the end of the path (read, write); without it the link
        itself is the target (delete), but a link leading outside is refused either way.
        """
        parts = self._check_relpath(relpath)
        root = self.real_root()
        lexical = os.path.join(root, *parts)
        parent = os.path.realpath(os.path.dirname(lexical))
        final = os.path.join(parent, os.path.basename(lexical))
        escaped = not _inside(root, parent)
        if not escaped and os.path.islink(final):
            escaped = not _inside(root, os.path.realpath(final))
        if escaped:
            raise DocumentPathError(
                f"Document path '{relpath}' leads outside {self.root} through a symbolic link; "
                "refusing. Use a path whose folders and file are inside the memory folder."
            )
        real = os.path.realpath(final) if follow else final
        if real == root:
            raise DocumentPathError(
                f"Document path '{relpath}' names the memory folder itself; name a file in it."
            )
        inner = os.path.relpath(real, root).split(os.sep)
        return _Location(root=root, folders=tuple(inner[:-1]), name=inner[-1])

    @contextmanager
    def _folder(self, relpath: str, loc: _Location, *, create: bool) -> Iterator[int]:
        """A descriptor of the file's folder, reached without following any link."""
        if create:
            try:
                os.makedirs(loc.root, exist_ok=True)
            except (FileExistsError, NotADirectoryError) as e:
                raise DocumentPathError(
                    f"The memory folder {self.root} exists but is not a folder; point "
                    "ANALYST_MEMORY_DIR at a folder."
                ) from e
        try:
            fd = os.open(loc.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError as e:
            raise DocumentNotFoundError(f"No document '{relpath}' under {self.root}.") from e
        try:
            for i, name in enumerate(loc.folders):
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError as e:
                    raise DocumentNotFoundError(
                        f"No document '{relpath}' under {self.root}."
                    ) from e
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    where = "/".join(loc.folders[: i + 1])
                    if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                        raise DocumentPathError(
                            f"Folder '{where}' became a symbolic link while '{relpath}' was being "
                            "accessed; refusing."
                        ) from e
                    raise DocumentPathError(
                        f"'{where}' in document path '{relpath}' is a file, not a folder."
                    ) from e
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    # -- reading -------------------------------------------------------------------------

    def exists(self, relpath: str) -> bool:
        loc = self._locate(relpath, follow=True)
        try:
            with self._folder(relpath, loc, create=False) as dfd:
                st = os.stat(loc.name, dir_fd=dfd, follow_symlinks=False)
        except (DocumentNotFoundError, FileNotFoundError):
            return False
        return stat.S_ISREG(st.st_mode)

    def read(self, relpath: str) -> Document:
        """The document's metadata (front matter) and body."""
        text = self.read_text(relpath)
        try:
            metadata, body = split_front_matter(text)
        except ValueError as e:
            raise DocumentFormatError(
                f"Document '{relpath}' has front matter that is not valid YAML ({e}); fix the "
                "block between the '---' lines, or remove it."
            ) from e
        return Document(path=relpath, body=body, metadata=metadata)

    def read_text(self, relpath: str) -> str:
        """The document's exact text, front matter included."""
        return self._decode(relpath, self.read_raw(relpath).data)

    def read_raw(self, relpath: str) -> RawDocument:
        """The document's bytes and the size and time they were read at (for the index)."""
        loc = self._locate(relpath, follow=True)
        with self._folder(relpath, loc, create=False) as dfd:
            return self._read_in(relpath, dfd, loc.name)

    def _read_in(self, relpath: str, dfd: int, name: str) -> RawDocument:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, dir_fd=dfd)
        except FileNotFoundError as e:
            raise DocumentNotFoundError(f"No document '{relpath}' under {self.root}.") from e
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise DocumentPathError(
                    f"Document '{relpath}' became a symbolic link while being read; refusing."
                ) from e
            raise
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise DocumentPathError(f"'{relpath}' is a folder, not a document.")
            if not stat.S_ISREG(st.st_mode):
                raise DocumentPathError(f"'{relpath}' is not a regular file; refusing to read it.")
            if st.st_size > self.max_bytes:
                raise self._too_large(relpath, st.st_size)
            data = fh.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise self._too_large(relpath, len(data))
        return RawDocument(path=relpath, data=data, mtime_ns=st.st_mtime_ns, size=st.st_size)

    def _decode(self, relpath: str, data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DocumentEncodingError(
                f"Document '{relpath}' is not UTF-8 text (invalid byte at offset {e.start}); "
                "documents must be UTF-8 Markdown."
            ) from e

    def _too_large(self, relpath: str, size: int) -> DocumentTooLargeError:
        return DocumentTooLargeError(
            f"Document '{relpath}' is {size} bytes, over the {self.max_bytes}-byte limit; "
            "split it into smaller documents."
        )

    def list(self, pattern: str = MARKDOWN_PATTERN) -> list[str]:
        """Files matching a glob, sorted. ``*`` stays within a folder, ``**/`` spans folders.

        A pattern without wildcards names one file, or a folder whose files are all listed.
        Links are not followed and hidden names are skipped.
        """
        return [s.path for s in self._match(pattern, want_stat=False)]

    def scan(self, pattern: str = MARKDOWN_PATTERN) -> builtins.list[DocumentStat]:
        """Like :meth:`list`, with each file's modification time and size (no reads)."""
        return self._match(pattern, want_stat=True)

    def _match(self, pattern: str, *, want_stat: bool) -> builtins.list[DocumentStat]:
        prefix, regex = self._compile_pattern(pattern)
        root = self.real_root()
        out = [
            DocumentStat(rel, st.st_mtime_ns, st.st_size) if st else DocumentStat(rel, 0, 0)
            for rel, st in self._walk(root, prefix, want_stat)
            if regex is None or regex.fullmatch(rel)
        ]
        out.sort(key=lambda s: s.path)
        return out

    def _compile_pattern(self, pattern: str) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
        """(literal folder prefix to walk from, regex over relative paths or None = all)."""
        if not isinstance(pattern, str) or not pattern.strip() or "\x00" in pattern:
            raise DocumentPathError(
                f"Invalid pattern {pattern!r}: give a relative glob such as 'research/*.md'."
            )
        if pattern.startswith(("/", "\\")) or Path(pattern).is_absolute():
            raise DocumentPathError(
                f"Pattern '{pattern}' is absolute; use a glob relative to {self.root}."
            )
        parts = [p for p in pattern.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise DocumentPathError(
                f"Pattern '{pattern}' contains '..'; patterns must stay inside {self.root}."
            )
        if not parts:
            return (), None
        literal: list[str] = []
        for part in parts:
            if _WILDCARDS & set(part):
                break
            literal.append(part)
        if literal:
            # The literal part names a real place: refuse it if it leads outside.
            try:
                self._locate("/".join(literal), follow=True)
            except DocumentPathError as e:
                raise DocumentPathError(
                    f"Pattern '{pattern}' leads outside {self.root} through a symbolic link "
                    f"('{'/'.join(literal)}'); refusing. Use a pattern inside the memory folder."
                ) from e
        if len(literal) == len(parts):
            return tuple(literal), re.compile(re.escape("/".join(literal)) + r"(?:/.+)?")
        return tuple(literal), glob_regex(parts)

    def _walk(
        self, root: str, prefix: tuple[str, ...], want_stat: bool
    ) -> Iterator[tuple[str, os.stat_result | None]]:
        try:
            top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return
        stack: list[tuple[int, str]] = []
        fd = top
        try:
            # Descend the literal prefix without following links; a file there is a match.
            for i, name in enumerate(prefix):
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    return
                rel = "/".join(prefix[: i + 1])
                if stat.S_ISREG(st.st_mode) and i == len(prefix) - 1:
                    if not name.startswith("."):
                        yield rel, st if want_stat else None
                    return
                if not stat.S_ISDIR(st.st_mode):
                    return
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
            stack.append((fd, "/".join(prefix)))
            fd = -1
            while stack:
                dfd, rel = stack.pop()
                try:
                    with os.scandir(dfd) as entries:
                        for entry in entries:
                            if entry.name.startswith("."):
                                continue
                            child_rel = f"{rel}/{entry.name}" if rel else entry.name
                            if entry.is_dir(follow_symlinks=False):
                                try:
                                    sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dfd)
                                except OSError:
                                    continue  # vanished or swapped for a link: skip
                                stack.append((sub, child_rel))
                            elif entry.is_file(follow_symlinks=False):
                                yield (
                                    child_rel,
                                    entry.stat(follow_symlinks=False) if want_stat else None,
                                )
                finally:
                    os.close(dfd)
        finally:
            if fd != -1:
                os.close(fd)
            for dfd, _ in stack:
                os.close(dfd)

    # -- search --------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int | None = 10,
        pattern: str | None = None,
        readable: Callable[[str], bool] | None = None,
    ) -> builtins.list[SearchHit]:
        """Markdown documents containing every word of ``query``, best first (BM25).

        Each hit carries the path and the paragraph that matches best. ``pattern`` restricts
        the paths with the same glob rules as :meth:`list`; ``readable`` (a principal's read
        rule, :mod:`memory.doc_authority`) is applied in the index's query, before the limit.
        """
        regex = self._compile_pattern(pattern)[1] if pattern is not None else None
        return self.index.search(query, limit=limit, path_regex=regex, readable=readable)

    def reindex(self, *, full: bool = False) -> RefreshStats:
        """Bring the index up to date now; ``full`` rebuilds it from every file."""
        return self.index.rebuild() if full else self.index.refresh()

    # -- writing -------------------------------------------------------------------------

    def write(
        self,
        relpath: str,
        body: str,
        metadata: dict[str, Any] | None = None,
        *,
        exclusive: bool = False,
    ) -> Path:
        """Atomically write a document; with ``exclusive`` fail if it already exists.

        ``metadata`` is the front matter, as code builds it: the only way a code field
        (:data:`memory.authorship.CODE_FIELDS`) reaches a file. Without metadata ``body`` is
        a person's text and may state none (:class:`~memory.authorship.CodeFieldError`)."""
        if not metadata:
            refuse_code_fields(relpath, body)
        text = join_front_matter(metadata or {}, body)
        return self._store(relpath, text.encode("utf-8"), exclusive=exclusive)

    def write_bytes(self, relpath: str, data: bytes, *, exclusive: bool = False) -> Path:
        """Atomically write exact bytes (UTF-8 for ``*.md``; any bytes for other files). A
        Markdown document's front matter may state no code field: those are written only
        through :meth:`write`'s metadata (:class:`~memory.authorship.CodeFieldError`)."""
        return self._store(relpath, data, exclusive=exclusive, person=True)

    def _store(self, relpath: str, data: bytes, *, exclusive: bool, person: bool = False) -> Path:
        parts = self._check_relpath(relpath)
        loc = self._locate(relpath, follow=True)
        self._check_content(relpath, data, name=loc.name)
        if person and (_is_markdown(relpath) or _is_markdown(loc.name)):
            refuse_code_fields(relpath, data.decode("utf-8"))
        data = _redacted(relpath, loc.name, data)
        with self._folder(relpath, loc, create=True) as dfd:
            self._write_in(relpath, dfd, loc.name, data, exclusive=exclusive)
        self.index.mark_dirty(loc.relpath)  # the real file, not a link to it
        return Path(loc.root, *parts)

    def update(self, relpath: str, change: Callable[[str | None], str]) -> Path:
        """Read-modify-write under a lock: ``change(current text or None) -> new text``.

        The lock (``flock`` on the document's folder) serialises concurrent updaters in any
        process; the write itself is atomic like :meth:`write`.
        """
        parts = self._check_relpath(relpath)
        loc = self._locate(relpath, follow=True)
        with self._folder(relpath, loc, create=True) as dfd:
            fcntl.flock(dfd, fcntl.LOCK_EX)
            try:
                try:
                    current: str | None = self._decode(
                        relpath, self._read_in(relpath, dfd, loc.name).data
                    )
                except DocumentNotFoundError:
                    current = None
                data = change(current).encode("utf-8")
                self._check_content(relpath, data, name=loc.name)
                data = _redacted(relpath, loc.name, data)
                self._write_in(relpath, dfd, loc.name, data, exclusive=False)
            finally:
                fcntl.flock(dfd, fcntl.LOCK_UN)
        self.index.mark_dirty(loc.relpath)  # the real file, not a link to it
        return Path(loc.root, *parts)

    def _check_content(self, relpath: str, data: bytes, *, name: str = "") -> None:
        if len(data) > self.max_bytes:
            raise self._too_large(relpath, len(data))
        if _is_markdown(relpath) or _is_markdown(name):
            self._decode(relpath, data)

    def _write_in(self, relpath: str, dfd: int, name: str, data: bytes, *, exclusive: bool) -> None:
        try:
            existing = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(existing.st_mode):
                raise DocumentPathError(f"'{relpath}' is a folder; cannot write a document there.")
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        # 0o666 minus the umask, like any file a person creates: documents are for people.
        fd = os.open(tmp, flags, 0o666, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if exclusive:
                # FileExistsError if the name is taken, even by a dangling link.
                os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            else:
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
        os.fsync(dfd)

    def delete(self, relpath: str) -> bool:
        """Remove a document (a link inside the root is removed, not its target)."""
        loc = self._locate(relpath, follow=False)
        try:
            with self._folder(relpath, loc, create=False) as dfd:
                try:
                    st = os.stat(loc.name, dir_fd=dfd, follow_symlinks=False)
                except FileNotFoundError:
                    return False
                if stat.S_ISDIR(st.st_mode):
                    raise DocumentPathError(
                        f"'{relpath}' is a folder; delete the documents in it one by one."
                    )
                try:
                    os.unlink(loc.name, dir_fd=dfd)
                except FileNotFoundError:
                    return False
        except DocumentNotFoundError:
            return False
        self.index.mark_dirty(loc.relpath)
        return True


def _redacted(relpath: str, name: str, data: bytes) -> bytes:
    """A Markdown document's bytes with personal data in its body redacted (checked UTF-8
    already); other files as they are."""
    if not (_is_markdown(relpath) or _is_markdown(name)):
        return data
    text = data.decode("utf-8")
    try:
        body = split_front_matter(text)[1]
    except ValueError:
        body = text  # not front matter a reader would parse: all of it is body
    head = text[: len(text) - len(body)]
    return (head + redact(body)).encode("utf-8")


def _is_markdown(name: str) -> bool:
    return name.lower().endswith(".md")


def _inside(root: str, path: str) -> bool:
    return path == root or os.path.commonpath([root, path]) == root
