"""What the fact ledger and the memory journal share about their one database: the clock
and time encoding (:mod:`memory.sql.clock`), opening a SQLite file (:mod:`memory.sql.connect`)
and the shape of a numbered migration (:mod:`memory.sql.migrations`).

Import from the submodules; this package re-exports nothing.
"""
