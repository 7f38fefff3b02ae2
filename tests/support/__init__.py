"""Helpers shared by the test tiers: reference analytics, service fixtures, the fake model server.

Imported as ``tests.support.<module>``; the repository root is on the test path through
pytest's ``pythonpath`` setting (pyproject.toml), so no test edits ``sys.path``.
"""
