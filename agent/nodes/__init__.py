"""The graph's nodes and what they are given: one module per node over the shared ``Node`` base
(base), the services nodes share and the gate for human decisions.
"""
