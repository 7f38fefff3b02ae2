"""Fixtures of the vendored upstream store tests: every test runs once per backend
(:data:`harness.UPSTREAM_BACKENDS`); the deviations of :mod:`deviations` are marked
``xfail(strict=True)``; parameters naming a pgvector option the project does not use are
deselected."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.conformance.upstream_store import harness
from tests.conformance.upstream_store.deviations import DEVIATIONS
from tests.conformance.upstream_store.embed_test_utils import CharacterEmbeddings
from tests.support.pgvector_server import pgvector_server

pytestmark = pytest.mark.integration

#: test module -> the short name the deviations use
MODULES = {"test_upstream_store_base": "base", "test_upstream_store_postgres": "postgres"}


@pytest.fixture(scope="session")
def pgvector_admin() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture(params=harness.UPSTREAM_BACKENDS, autouse=True)
def upstream_backend(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The backend under test: upstream's ``InMemoryStore`` and Postgres fixtures open it."""
    with ExitStack() as stack:
        where = harness.Place(
            str(request.param), tmp_path, stack, lambda: request.getfixturevalue("pgvector_admin")
        )
        monkeypatch.setattr(harness, "current", where)
        if hasattr(request.module, "InMemoryStore"):
            monkeypatch.setattr(request.module, "InMemoryStore", harness.store_class(where))
        yield where.backend


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


@pytest.fixture
def mocker() -> Iterator[harness.MockerFixture]:
    fixture = harness.MockerFixture()
    yield fixture
    fixture.stopall()


def deviation_key(item: pytest.Item) -> tuple[str, str, str] | None:
    """``(module short name, test function, parameter id)`` of a vendored test item."""
    module = MODULES.get(item.module.__name__.rpartition(".")[2]) if item.module else None
    if module is None or not isinstance(item, pytest.Function):
        return None
    callspec = getattr(item, "callspec", None)
    return module, item.originalname, callspec.id if callspec else ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselected: list[pytest.Item] = []
    kept: list[pytest.Item] = []
    for item in items:
        key = deviation_key(item)
        if key is None:
            kept.append(item)
            continue
        params = item.callspec.params if hasattr(item, "callspec") else {}
        if (params.get("vector_type", "vector"), params.get("distance_type", "cosine")) != (
            "vector",
            "cosine",
        ):
            deselected.append(item)
            continue
        backend = params.get("upstream_backend")
        for deviation in DEVIATIONS:
            name, _, part = deviation.test.partition("[")
            if (
                f"{key[0]}::{key[1]}" == name
                and backend in deviation.backends
                and part.rstrip("]") in key[2]
            ):
                item.add_marker(pytest.mark.xfail(strict=True, reason=deviation.reason))
                break
        kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
