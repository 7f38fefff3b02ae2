"""Programs: a journal call's statements, written once for every backend.

A :data:`Program` is a generator that yields the :class:`~memory.journal.queries.Statement` s
a call needs and receives each one's answer; a backend drives it inside one transaction of the
requested :data:`Transaction` kind, with plain calls (:func:`run_sync`) or ``await``
(:func:`run_async`). :func:`read_rows` and :func:`put` are the small programs calls share.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Literal, TypeVar, cast

import memory.journal.rules as rules
from memory.journal.queries import Statement

T = TypeVar("T")

#: A call's statements: yields each, receives its answer, returns the call's result.
Program = Generator[Statement, Any, T]

#: ``read``: one or more statements that only read; ``snapshot``: reads that must all see one
#: snapshot; ``write``: reads and writes, serialised against other writers.
Transaction = Literal["read", "snapshot", "write"]


def run_sync(program: Program[T], execute: Callable[[Statement], Any]) -> T:
    """Drive ``program``, answering each statement with ``execute`` (blocking)."""
    try:
        statement = next(program)
        while True:
            statement = program.send(execute(statement))
    except StopIteration as done:
        return cast(T, done.value)


async def run_async(program: Program[T], execute: Callable[[Statement], Awaitable[Any]]) -> T:
    """Drive ``program``, answering each statement with ``await execute(...)``."""
    try:
        statement = next(program)
        while True:
            statement = program.send(await execute(statement))
    except StopIteration as done:
        return cast(T, done.value)


def read_rows(statement: Statement, decode: Callable[[Any], T]) -> Program[list[T]]:
    """Run ``statement`` and decode each row it returns."""
    rows = yield statement
    return [decode(row) for row in rows]


def put(insert: Statement, read: Statement, what: str, item_id: str) -> Program[Any]:
    """Insert a record (a no-op if its id is stored) and read the principal's row back; an id
    another user of the tenant holds is refused (ids are unique per tenant). Returns the row
    and whether this call inserted it."""
    inserted = yield insert
    row = yield read
    if row is None:
        raise rules.id_taken(what, item_id)
    return row, inserted == 1
