"""The read path: what a session starts with, what the planner may use, and what a forget can
name.
"""
