"""The memory dashboard: what the analyst remembers about you, in the browser.

- ``app``: :func:`~agent.web.app.create_app`, the Starlette routes over the application's
  memory API (no memory rule of its own), with CSRF, escaping and a strict CSP
- ``pages`` and ``timeline``: the HTML and the inline SVG of a fact's values over time, built
  from escaped parts (``html``)
- ``server``: the app as custom routes of the LangGraph server (``langgraph.json``
  ``http.app``), for the signed-in user; ``analyst dashboard`` serves it for the CLI's
  principal (:mod:`agent.cli.dashboard`)
- ``demo``: a few memories to look at (screenshots, browser tests)
"""
