# The two set-up commands of the README, plus the tools they are made of.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test venv venv-dev lint typecheck bench studio clean services services-stop

run: venv  ## end-to-end demo on the embedded defaults: analyse, pause, approve from a 2nd process, publish
	$(BIN)/python scripts/demo.py

test: venv-dev  ## everything the tests need, then the whole suite
	PYTHON_FOR_SERVICES=$(BIN)/python bash scripts/services.sh start
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=25

venv:  ## the analyst and its runtime packages
	@bash scripts/bootstrap.sh

venv-dev:  ## plus test, lint and service packages
	@EXTRAS=dev bash scripts/bootstrap.sh

lint: venv-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv-dev
	$(BIN)/mypy

bench: venv-dev  ## benchmark figures (median, spread, ratios); not a test
	$(BIN)/python scripts/bench_foundation.py
	PYTHON_FOR_SERVICES=$(BIN)/python bash scripts/services.sh start
	$(BIN)/python scripts/bench_checkpoints.py
	$(BIN)/python scripts/bench_memory.py
	$(BIN)/python scripts/bench_store.py
	$(BIN)/python scripts/bench_documents.py
	$(BIN)/python scripts/bench_facts.py
	$(BIN)/python scripts/bench_migration.py
	$(BIN)/python scripts/bench_learning.py
	$(BIN)/python scripts/eval_learning.py
	$(BIN)/python scripts/bench_understanding.py
	$(BIN)/python scripts/eval_recall.py ../shared/data/locomo-dev/
	$(BIN)/python scripts/eval_views_weight.py ../shared/data/locomo-dev/
	$(BIN)/python scripts/bench_recall.py
	$(BIN)/python scripts/bench_ingest.py
	$(BIN)/python scripts/bench_chat_start.py
	$(BIN)/python scripts/bench_model.py
	$(BIN)/python scripts/bench_forget.py
	$(BIN)/python scripts/bench_startup.py
	$(BIN)/python scripts/bench_retention.py

# venv-dev is what installs the langgraph CLI (langgraph-cli[inmem]); `make run` does not.
# Every request needs a bearer token: the first run creates .data/server-tokens (0600) with
# one for ANALYST_TENANT/ANALYST_USER and prints it; ANALYST_SERVER_TOKENS names another file.
studio: venv-dev  ## serve the graph for LangGraph Studio / the LangGraph API on port 2024
	$(BIN)/python -m graphs.server_tokens "$${ANALYST_SERVER_TOKENS:-.data/server-tokens}"
	ANALYST_SERVER_TOKENS="$${ANALYST_SERVER_TOKENS:-.data/server-tokens}" $(BIN)/langgraph dev --no-browser

services: venv-dev  ## start Postgres (if none on 5432) and Redis Stack on 6380, without Docker
	PYTHON_FOR_SERVICES=$(BIN)/python bash scripts/services.sh start

services-stop:  ## stop what `make services` started
	bash scripts/services.sh stop

clean:
	rm -rf .data .pytest_cache .mypy_cache .ruff_cache
