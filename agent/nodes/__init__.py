"""The graph's nodes and what they are given: one module per node, the services nodes share and
the gate for human decisions.
"""
