"""Writers, subjects and sets of grants whose product every SQL statement of write authority
is checked against :func:`memory.facts.rules.authority_of` with (wildcards, a reader's grant,
an admin, the empty user, a subject that only looks like a wildcard's match)."""

GRANTS = [
    [],
    [("writer", "team:a")],
    [("writer", "team:*")],
    [("reader", "team:a")],
    [("writer", "user:*")],
    [("writer", "*")],
    [("admin", "*")],
    [("writer", "user:bob"), ("reader", "*")],
    [("writer", "team:a*b")],
]
WRITERS = ["mira", "bob", ""]
SUBJECTS = ["team:a", "team:ab", "team:a*b", "teams", "user:bob", "user:mira", "user:", "*"]
