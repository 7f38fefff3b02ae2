"""What a document search matches and returns, shared by the FTS5 index
(:mod:`memory.doc_index`) and the plain scan the tests and benchmarks hold it to: words are
maximal runs of Unicode letters and digits compared case-insensitively, and a document matches
a query when every query word occurs in it as a whole word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.markdown import split_front_matter

#: A word: a maximal run of letters and digits (``_`` and punctuation separate words).
WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class SearchHit:
    """One ranked result: the document, its best paragraph (and its first line number)."""

    path: str
    title: str
    paragraph: str
    line: int
    score: float  # higher is better (negated BM25)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "title": self.title,
            "paragraph": self.paragraph,
            "line": self.line,
            "score": round(self.score, 6),
        }


@dataclass(frozen=True)
class RefreshStats:
    """What one refresh did. ``read`` counts files opened; ``indexed`` rows rewritten."""

    full_scan: bool
    scanned: int = 0
    read: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "full_scan": self.full_scan,
            "scanned": self.scanned,
            "read": self.read,
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "seconds": round(self.seconds, 4),
        }


def query_words(query: str) -> list[str]:
    """The words of a query, lower-cased, duplicates dropped, in order."""
    seen: dict[str, None] = {}
    for word in WORD.findall(query):
        seen.setdefault(word.lower(), None)
    return list(seen)


def word_pattern(word: str) -> re.Pattern[str]:
    """Whole-word, case-insensitive occurrences of ``word``."""
    return re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", re.IGNORECASE)


def text_has_words(text: str, patterns: Sequence[re.Pattern[str]]) -> bool:
    """The plain-scan definition of a match: every word occurs in ``text`` as a whole word."""
    return all(p.search(text) for p in patterns)


def best_paragraph(text: str, patterns: Sequence[re.Pattern[str]]) -> tuple[str, int]:
    """The paragraph (blank-line separated) with the most distinct words, then occurrences.

    Returns the paragraph and its first line number (1-based); ties go to the earlier one.
    """
    best: tuple[int, int] = (-1, -1)
    chosen, chosen_line = "", 1
    line = 1
    for block in re.split(r"(\n[ \t]*\n)", text):
        if block.strip() and not re.fullmatch(r"\n[ \t]*\n", block):
            found = [len(p.findall(block)) for p in patterns]
            score = (sum(1 for n in found if n), sum(found))
            if score > best:
                best = score
                lead = len(block) - len(block.lstrip("\n"))
                chosen, chosen_line = block.strip(), line + lead
        line += block.count("\n")
    return chosen, chosen_line


def match_expression(words: Sequence[str]) -> str:
    """The FTS5 query matching documents with every one of ``words`` (each quoted: words hold
    only letters and digits, so quoting makes each a literal, never an operator)."""
    return " ".join(f'"{w}"' for w in words)


def document_title(path: str, text: str) -> str:
    """A document's title: its front matter's ``title``, else its first ``# `` heading, else
    the file name without ``.md``."""
    try:
        metadata, body = split_front_matter(text)
    except ValueError:
        metadata, body = {}, text
    title = metadata.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return Path(path).stem


__all__ = [
    "WORD",
    "RefreshStats",
    "SearchHit",
    "best_paragraph",
    "document_title",
    "match_expression",
    "query_words",
    "text_has_words",
    "word_pattern",
]
