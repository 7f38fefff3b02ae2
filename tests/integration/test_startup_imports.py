"""Start-up weight: each command imports only what it uses.

The CLI process runs with ``PYTHONPROFILEIMPORTTIME`` (the ``-X importtime`` report on stderr),
so the test sees every module the real process imported: no Qdrant client for the embedded
store, no OpenAI client without a model, no torch or sentence-transformers ever; the everyday
reads import nothing they do not read: ``threads``, ``show`` and ``history`` no node, store,
ledger, embedder or model client, and not LangGraph's graph runtime (no ``langgraph.graph``,
Pregel or SDK); ``memory show`` and ``memory list`` no embedding model and
no graph (no state schema, Pregel or SDK);
``facts`` and ``notes`` reads not even LangGraph. The figures themselves (each command against
``python -c pass`` and ``import langgraph.graph``) are ``scripts/bench_startup.py``'s.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

HEAVY_AND_UNUSED = (
    "qdrant_client",  # only the Qdrant server and local-mode backends use it
    "langchain_openai",  # only when a model is configured
    "openai",
    "torch",
    "sentence_transformers",
    "pandas",
)


#: Never needed to read memory: the embedding model and its runtime, model clients.
NO_EMBEDDER = (
    "memory.minilm",
    "onnxruntime",
    "tokenizers",
    "sentence_transformers",
    "torch",
    "langchain_openai",
    "openai",
)
#: Never needed to read memory either: the graph (its state schema, Pregel, the SDK's types),
#: which a memory read has no use for (agent.records holds the records without LangGraph).
NO_GRAPH = (
    *NO_EMBEDDER,
    "agent.state",
    "agent.nodes.base",
    "langgraph.graph",
    "langgraph.pregel",
    "langgraph_sdk",
)
#: Never needed to read a thread: besides those, the nodes (and through them the market data,
#: the learner, numpy), the long-term store, the fact ledger and the document index.
NO_NODES_OR_STORES = (
    *NO_EMBEDDER,
    "agent.nodes",
    "agent.learning",
    "numpy",
    "qdrant_edge",
    "qdrant_client",
    "memory.store",
    "memory.facts",
    "memory.doc_index",
)
#: Never needed to read a thread either: the graph runtime. Its state, next nodes and
#: interrupts are read from the checkpoints (graphs.reading), not from a compiled graph, and
#: a pending interrupt decodes without ``langgraph.types`` (memory.serde.StoredInterrupt), so
#: LangChain's runnables and LangSmith's run trees stay out too.
NO_GRAPH_RUNTIME = (
    *NO_NODES_OR_STORES,
    "agent.state",
    "graphs.builder",
    "langgraph.graph",
    "langgraph.pregel",
    "langgraph.types",
    "langgraph_sdk",
    "langchain_core.runnables.base",
    "langsmith.run_trees",
)
#: Never needed to read facts or notes: the nodes, the long-term store and the embedder (the
#: ledger and the document index are what these commands read), and LangGraph and LangChain
#: altogether.
NO_LANGGRAPH = (
    *(m for m in NO_NODES_OR_STORES if m not in ("memory.facts", "memory.doc_index")),
    "langgraph",
    "langchain_core",
    "langsmith",
)


def imported(stderr: str) -> set[str]:
    """The top-level packages a process imported (its ``-X importtime`` report)."""
    return {module.split(".")[0] for module in modules_imported(stderr)}


def modules_imported(stderr: str) -> set[str]:
    found = set()
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", line)
        if match:
            found.add(match[1])
    return found


def unwanted(analyst: Any, args: list[str], forbidden: tuple[str, ...]) -> list[str]:
    """The modules of ``forbidden`` (each a module or package) that ``analyst ARGS`` imported;
    the command must succeed."""
    env = {**analyst.environ(), "PYTHONPROFILEIMPORTTIME": "1", "ANALYST_MODEL": "offline"}
    done = subprocess.run(
        [str(analyst.exe), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, (args, done.stderr[-2000:])
    modules = modules_imported(done.stderr)
    assert "agent.cli.app" in modules, args  # the report is real
    return sorted(m for m in modules if any(m == f or m.startswith(f"{f}.") for f in forbidden))


def test_an_offline_run_imports_no_unused_heavy_package(analyst: Any) -> None:
    env = {**analyst.environ(), "PYTHONPROFILEIMPORTTIME": "1", "ANALYST_MODEL": "offline"}
    done = subprocess.run(
        [str(analyst.exe), "run", "Analyze NVDA"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = imported(done.stderr)
    assert "langgraph" in modules  # the report is real
    # The chart is drawn, by the warm chart process (agent.research.chart_process), whose
    # matplotlib is not the command's.
    assert "matplotlib" not in modules
    assert list(analyst.data_dir.glob("artifacts/*/*.png"))
    assert not modules & set(HEAVY_AND_UNUSED), sorted(modules & set(HEAVY_AND_UNUSED))
    # The model path's reasoner and extractor (their structured-output schemas) neither.
    model_path = {"agent.reasoning.model", "agent.learning.model_extraction"}
    assert not modules_imported(done.stderr) & model_path


def test_importing_the_store_package_imports_no_backend() -> None:
    code = (
        "import sys, memory.store, memory.store.factory\n"
        "assert 'qdrant_client' not in sys.modules, 'qdrant_client'\n"
        "assert memory.store.open_store is memory.store.factory.open_store\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_thread_reads_import_no_graph_runtime_node_store_ledger_or_model(analyst: Any) -> None:
    thread = analyst("run", "Analyze NVDA", "--json", timeout=300).json()["thread_id"]
    for args in (["threads"], ["show", thread], ["history", thread]):
        assert unwanted(analyst, args, NO_GRAPH_RUNTIME) == [], args  # awaiting approval
    analyst("approve", thread, timeout=300)
    for args in (["show", thread], ["history", thread]):
        assert unwanted(analyst, args, NO_GRAPH_RUNTIME) == [], args  # published


def test_memory_reads_load_no_embedding_model_and_no_graph(analyst: Any) -> None:
    analyst("memory", "add", "I prefer concise reports with the risks first.")
    analyst("facts", "record", "me", "risk_tolerance", "low")
    for args in (["memory", "show"], ["memory", "list"], ["memory", "list", "--memories"]):
        assert unwanted(analyst, args, NO_GRAPH) == [], args


def test_fact_and_note_reads_import_no_langgraph(analyst: Any) -> None:
    analyst("facts", "record", "me", "risk_tolerance", "low")
    analyst("notes", "edit", "learnings/startup.md", "--text", "# Startup\n\nA note.\n")
    for args in (
        ["facts", "current", "me", "risk_tolerance"],
        ["facts", "history", "me", "risk_tolerance"],
        ["facts", "profile", "me"],
        ["notes", "list"],
        ["notes", "show", "learnings/startup.md"],
    ):
        assert unwanted(analyst, args, NO_LANGGRAPH) == [], args
