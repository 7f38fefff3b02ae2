"""The graph LangGraph Studio and ``langgraph dev`` load (see ``langgraph.json``).

Compiled without a checkpointer or store: the API server supplies its own persistence.
Settings come from the server's environment (``ANALYST_*``); nothing here connects anywhere.
"""

from graphs.builder import build_graph

graph = build_graph().compile(name="analyst")
