"""Front matter only code writes, and the check that a person's text states none of it.

:data:`CODE_FIELDS` is the one registry of the fields the analyst writes into a document's
front matter from the principal and the run (who approved a publication and when, which
thread and draft it came from, what a revision supersedes and who made it, whose a document
is). They reach a file only through a metadata mapping code builds
(:meth:`memory.documents.FileMemory.write`); text a person gives (an edit, a file, bytes) that
states one of them is refused by :func:`refuse_code_fields`, and nothing is written.

The check reads the text the way the most lenient front matter reader might, not only the way
:func:`memory.markdown.split_front_matter` does: a block after a byte order mark, blank lines
or invisible characters; a YAML directive or content on the ``---`` line; any YAML spelling
of a key (quoted, ``? key``, a flow mapping, a merge key ``<<:`` of an anchor); any case,
separator or width (``Approver``, ``approved-at``, ``ＡＰＰＲＯＶＥＲ``) and the common Cyrillic and
Greek lookalikes of Latin letters; a TOML (``+++``) block. A block that is not valid YAML is
searched line by line for a key that names one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from memory.errors import DocumentPathError

#: Every front matter field code writes, with what sets it (the refusal quotes it).
CODE_FIELDS: dict[str, str] = {
    "approver": "who approved the draft, set when it is published",
    "approved_at": "when the draft was approved, set when it is published",
    "decision": "the approver's decision, set when the draft is published",
    "draft_hash": "the published draft's hash, set when it is published",
    "thread_id": "the thread the draft came from, set when it is published",
    "edited_by": "who replaced the draft's text, set when it is published",
    "supersedes": "the note a revision replaces, set when you edit a published note",
    "supersedes_sha256": "the replaced note's hash, set when you edit a published note",
    "revised_by": "who made a revision, set from your identity",
    "tenant": "the reviser's tenant, set from your identity",
    "owner": "whose the document is, set from your identity",
}

#: Letters of other scripts that look like Latin ones (after case folding).
_LOOKALIKES = str.maketrans(
    "авеёкмнорстухіїјѕԁһԛԝɑɡıαβεηικνορτυχϲϳ",
    "abeekmhopctyxiijsdhqwagiabenikvoptuxcj",
)
_SKELETONS = {re.sub(r"[^a-z0-9]", "", name): name for name in CODE_FIELDS}
_LINE_BREAKS = str.maketrans(dict.fromkeys(map(ord, "\v\f\x1c\x1d\x1e\x85\u2028\u2029"), "\n"))
#: Where a block of front matter opens and closes.
_OPEN = re.compile(r"(?:%[^\n]*\n)*(---|\+\+\+)(?=[ \t\r\n]|$)")
_CLOSE = {
    "---": re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M),
    "+++": re.compile(r"^\+\+\+[ \t]*\r?$", re.M),
}
#: A key at the start of a line of a block YAML could not read (or of a TOML block).
_LINE_KEY = re.compile(r"^[\s?{,\[-]*[\"']?([^:=\"'{}\[\],]+?)[\"']?\s*[:=]")


class CodeFieldError(DocumentPathError):
    """A person's text states a front matter field only code writes."""


def skeleton(key: object) -> str:
    """``key`` as compared with :data:`CODE_FIELDS`: compatibility-normalised, case-folded,
    lookalike letters mapped to Latin ones, everything but ASCII letters and digits dropped."""
    folded = unicodedata.normalize("NFKC", str(key)).casefold().translate(_LOOKALIKES)
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKD", folded))


def code_fields_in(text: str) -> dict[str, str]:
    """The code fields ``text``'s front matter states, however spelled: ``{spelling: field}``
    (empty when it has no front matter, or none of them)."""
    # Every line break some reader splits on (str.splitlines, YAML) is a line break here.
    block = _front_block(text.translate(_LINE_BREAKS))
    if block is None:
        return {}
    fence, head = block
    keys: list[object] = []
    if fence == "---":
        try:
            keys = _yaml_keys(head)
        except ValueError:
            keys = _line_keys(head)
    else:
        keys = _line_keys(head)
    found: dict[str, str] = {}
    for key in keys:
        field = _SKELETONS.get(skeleton(key))
        if field is not None:
            found.setdefault(str(key), field)
    return found


def refuse_code_fields(relpath: str, text: str) -> None:
    """Raise :class:`CodeFieldError` naming each code field ``text`` states and the fix."""
    found = code_fields_in(text)
    if not found:
        return
    named = ", ".join(
        f"'{spelling}'" if spelling == field else f"'{spelling}' (read as '{field}')"
        for spelling, field in found.items()
    )
    why = "; ".join(f"{f}: {CODE_FIELDS[f]}" for f in dict.fromkeys(found.values()))
    raise CodeFieldError(
        f"The text for '{relpath}' sets {named} in its front matter, which only the analyst "
        f"writes ({why}). Remove {'that line' if len(found) == 1 else 'those lines'} from the "
        "front matter and try again; nothing was written."
    )


def without_code_fields(text: str) -> str:
    """``text`` with the code fields dropped from its front matter (the editable part of a
    published note, for an editor); text with no such field is returned as it is."""
    from memory.markdown import join_front_matter, split_front_matter

    try:
        metadata, body = split_front_matter(text)
    except ValueError:
        return text
    kept = {k: v for k, v in metadata.items() if skeleton(k) not in _SKELETONS}
    return text if len(kept) == len(metadata) else join_front_matter(kept, body)


def _front_block(text: str) -> tuple[str, str] | None:
    """(fence, the block from its opening line to its closing one) of ``text``'s front
    matter, after whatever a reader may skip (spaces, blank lines, invisible characters)."""
    start = 0
    while start < len(text) and (
        text[start].isspace() or unicodedata.category(text[start]) == "Cf"
    ):
        start += 1
    head = text[start:]
    opened = _OPEN.match(head)
    if opened is None:
        return None
    fence = opened.group(1)
    line_end = head.find("\n", opened.end())
    if line_end == -1:
        return None
    closed = _CLOSE[fence].search(head, line_end + 1)
    if closed is None:
        return None
    return fence, head[: closed.end()]


def _yaml_keys(block: str) -> list[object]:
    """The keys of every mapping document in ``block`` (merge keys resolved); ValueError if
    YAML cannot read it."""
    import yaml

    try:
        documents = list(yaml.safe_load_all(block))
    except (yaml.YAMLError, TypeError, ValueError, RecursionError) as e:
        raise ValueError(str(e)) from e
    keys: list[Any] = []
    for document in documents:
        if isinstance(document, dict):
            keys.extend(document)
    return keys


def _line_keys(block: str) -> list[object]:
    keys: list[object] = []
    for line in block.splitlines()[1:]:
        keys.extend(m.group(1) for m in _LINE_KEY.finditer(line))
        keys.extend(re.findall(r"[{,]\s*[\"']?([^:=\"'{}\[\],]+?)[\"']?\s*[:=]", line))
    return keys
