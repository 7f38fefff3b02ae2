"""What the SQL tiers share: the clock and time encoding (:mod:`memory.sql.clock`), opening
the ledger's SQLite file (:mod:`memory.sql.connect`), numbered migrations and their runner
(:mod:`memory.sql.migrations`), and the ``user_version`` migration runner of the small SQLite
files (:mod:`memory.sql.user_version`).

The fact ledger and the memory journal both use it, so neither imports the other's private
names. Import from the submodules; this package re-exports nothing.
"""
