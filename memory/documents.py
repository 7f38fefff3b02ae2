"""Document memory: Markdown files with optional YAML front matter under one root folder.

Contract: every path is relative to the root and must stay inside it after symlinks are
resolved; anything else is refused with :class:`DocumentPathError` before a byte is written.
Writes are atomic (temporary file in the same folder, then rename), so a reader never sees a
half-written document; ``exclusive=True`` creates a file only if the name is still free, which
is what makes publishing exactly-once.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.errors import DocumentPathError

DEFAULT_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class Document:
    path: str
    body: str
    metadata: dict[str, Any] = field(default_factory=dict)


class FileMemory:
    def __init__(self, root: Path | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes

    # -- paths ---------------------------------------------------------------------------

    def resolve(self, relpath: str) -> Path:
        """Map a document path to a file inside the root, or raise DocumentPathError."""
        if not relpath or "\x00" in relpath:
            raise DocumentPathError(
                f"Invalid document path {relpath!r}: give a relative path such as research/NVDA.md."
            )
        candidate = Path(relpath)
        if candidate.is_absolute():
            raise DocumentPathError(
                f"Document path '{relpath}' is absolute; use a path relative to {self.root}."
            )
        if ".." in candidate.parts:
            raise DocumentPathError(
                f"Document path '{relpath}' contains '..'; paths must stay inside {self.root}."
            )
        root = self.root.resolve()
        target = (root / candidate).resolve()
        if target != root and root not in target.parents:
            raise DocumentPathError(
                f"Document path '{relpath}' leads outside {self.root} through a symbolic link; refusing."
            )
        return root / candidate

    # -- reading -------------------------------------------------------------------------

    def exists(self, relpath: str) -> bool:
        return self.resolve(relpath).is_file()

    def read(self, relpath: str) -> Document:
        path = self.resolve(relpath)
        try:
            raw = path.read_bytes()
        except FileNotFoundError as e:
            raise DocumentPathError(f"No document '{relpath}' under {self.root}.") from e
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DocumentPathError(f"Document '{relpath}' is not UTF-8 text.") from e
        metadata, body = split_front_matter(text)
        return Document(path=relpath, body=body, metadata=metadata)

    def list(self, pattern: str = "**/*.md") -> list[str]:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise DocumentPathError(
                f"Pattern '{pattern}' must be relative and must not contain '..'."
            )
        root = self.root.resolve()
        out = []
        for path in sorted(root.glob(pattern)):
            real = path.resolve()
            if path.is_file() and (real == root or root in real.parents):
                out.append(path.relative_to(root).as_posix())
        return out

    # -- writing -------------------------------------------------------------------------

    def write(
        self,
        relpath: str,
        body: str,
        metadata: dict[str, Any] | None = None,
        *,
        exclusive: bool = False,
    ) -> Path:
        """Atomically write a document; with ``exclusive`` fail if it already exists."""
        text = join_front_matter(metadata or {}, body)
        return self.write_bytes(relpath, text.encode("utf-8"), exclusive=exclusive)

    def write_bytes(self, relpath: str, data: bytes, *, exclusive: bool = False) -> Path:
        path = self.resolve(relpath)
        if len(data) > self.max_bytes:
            raise DocumentPathError(
                f"Document '{relpath}' is {len(data)} bytes, over the {self.max_bytes}-byte limit."
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        self.resolve(relpath)  # re-check: a folder on the way may have been a link
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp creates 0600; documents are for people
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if exclusive:
                os.link(tmp, path)  # FileExistsError if the name is taken
            else:
                os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path

    def delete(self, relpath: str) -> bool:
        path = self.resolve(relpath)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 4)
    if end == -1:
        return {}, text
    import yaml

    meta = yaml.safe_load(text[4:end]) or {}
    if not isinstance(meta, dict):
        return {}, text
    return meta, text[end + 5 :]


def join_front_matter(metadata: dict[str, Any], body: str) -> str:
    if not metadata:
        return body
    import yaml

    head = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True).strip()
    return f"---\n{head}\n---\n{body}"
