"""Thread ids: which ones a new request may use, and the folder each one's files live in.

A thread id only locates checkpoints (it grants nothing), but it also names the folder of the
thread's draft charts under the artifacts directory. :func:`check_thread_id` refuses ids that
are empty, blank, padded with spaces, hold control characters or path separators, are ``.`` or
``..``, or are longer than :data:`MAX_THREAD_ID_CHARS`. :func:`thread_folder` maps any id
(the API server may hand the graph ids the CLI never checked) to a single, safe folder name,
one-to-one: ``a/b`` and ``a_b`` never share a folder, and no id leaves the artifacts folder.
:func:`legacy_folder` is the name earlier versions gave, which was not one-to-one.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote

from agent.errors import InvalidThreadIdError

MAX_THREAD_ID_CHARS = 128
#: Longer encoded names are shortened with a hash (file systems allow 255 bytes per name).
_MAX_FOLDER_CHARS = 200


def check_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` if a new thread may use it; else :class:`InvalidThreadIdError`."""
    shown = repr(thread_id) if len(thread_id) <= 40 else repr(thread_id[:40] + "…")
    fix = "Use letters, digits, '-', '_' or '.', e.g. --thread my-nvda."
    if not thread_id.strip():
        raise InvalidThreadIdError(f"The thread id {shown} is empty. {fix}")
    if len(thread_id) > MAX_THREAD_ID_CHARS:
        raise InvalidThreadIdError(
            f"The thread id {shown} is {len(thread_id)} characters long; the limit is "
            f"{MAX_THREAD_ID_CHARS}. {fix}"
        )
    if thread_id != thread_id.strip() or any(not c.isprintable() for c in thread_id):
        raise InvalidThreadIdError(
            f"The thread id {shown} has leading or trailing spaces or control characters. {fix}"
        )
    if thread_id in (".", "..") or "/" in thread_id or "\\" in thread_id:
        raise InvalidThreadIdError(
            f"The thread id {shown} could name a folder path ('/', '\\\\', '.' or '..'). {fix}"
        )
    return thread_id


def thread_folder(thread_id: str) -> str:
    """The folder name for ``thread_id``'s files: distinct ids get distinct names.

    Letters, digits, ``-``, ``_`` and ``.`` stay as they are and every other character is
    percent-encoded (``%`` itself included, so the encoding is one-to-one); a leading dot
    is encoded too, so no name is ``.``, ``..`` or hidden. Over-long names keep a prefix and
    a SHA-256 of the id after ``%~`` (a ``%`` the encoding itself never produces).
    """
    name = quote(thread_id, safe="-_.")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if not name:
        name = "%~empty"
    if len(name) > _MAX_FOLDER_CHARS:
        digest = hashlib.sha256(thread_id.encode("utf-8")).hexdigest()
        name = f"{name[:120]}%~{digest}"
    return name


def legacy_folder(thread_id: str) -> str:
    """The folder name versions before :func:`thread_folder` gave ``thread_id``'s draft charts:
    every character but letters, digits, ``-``, ``_`` and ``.`` replaced by ``_``, cut at 120
    characters. Not one-to-one (``a/b`` and ``a_b`` shared ``a_b``); for the ordinary ids whose
    two names are equal (``my-nvda``), every draft chart the thread ever had is in its folder."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in thread_id)[:120]
