"""The analyst's craft: routing, planning, research steps, analytics, the report, its chart,
the critic, the project conventions and the user's constraints. Nothing here reads or writes
memory about users.
"""
