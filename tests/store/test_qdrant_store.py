"""QdrantStore's own surface: constructor checks and scores for every distance on both engines."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from qdrant_client import AsyncQdrantClient

from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.store import record

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect in the local Qdrant")


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"location": ":memory:", "path": "/tmp/x"},
        {"url": "http://localhost:6333", "path": "/tmp/x"},
        {"location": ":memory:", "url": "http://localhost:6333"},
    ],
)
def test_exactly_one_place_is_required(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="exactly one of location, url or path"):
        QdrantStore(**arguments)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"location": "somewhere"}, "location"),
        ({"url": "ftp://example.org"}, "url"),
        ({"location": ":memory:", "api_key": "secret"}, "api_key"),
        ({"path": "/tmp/x", "client_kwargs": {"timeout": 3}}, "client_kwargs"),
        ({"location": ":memory:", "distance": "Hamming"}, "distance"),
        ({"location": ":memory:", "auto_optimize_threshold": 0}, "auto_optimize_threshold"),
        ({"location": ":memory:", "search_threads": 0}, "search_threads"),
        ({"path": "/tmp/x", "search_threads": -1}, "search_threads"),
        ({"url": "http://localhost:6333", "search_threads": 2}, "search_threads"),
        ({"location": ":memory:", "max_open_collections": 0}, "max_open_collections"),
        ({"url": "http://localhost:6333", "max_open_collections": 9}, "max_open_collections"),
    ],
)
def test_bad_arguments_are_rejected_by_name(arguments: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        QdrantStore(**arguments)


def test_an_http_location_or_a_url_is_a_server_address() -> None:
    stores = [
        QdrantStore(location="https://qdrant.example.org:6333", api_key="secret"),
        QdrantStore(url="http://localhost:6333", client_kwargs={"timeout": 5}),
        QdrantStore.from_client(AsyncQdrantClient(location=":memory:"), distance="dot"),
    ]
    backends = [type(store._engine.backend).__name__ for store in stores]
    assert backends == ["ClientBackend"] * 3
    assert type(QdrantStore(location=":memory:")._engine.backend).__name__ == "EdgeBackend"


async def edge_store(distance: str) -> QdrantStore:
    return QdrantStore(location=":memory:", distance=distance)


async def client_store(distance: str) -> QdrantStore:
    return QdrantStore.from_client(AsyncQdrantClient(location=":memory:"), distance=distance)


@pytest.fixture(params=[edge_store, client_store], ids=["edge", "client-local-mode"])
def make_store(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["Cosine", "Dot", "Euclid", "manhattan"])
async def scored(
    request: pytest.FixtureRequest, make_store: Callable[[str], Any]
) -> AsyncIterator[list[tuple[str, float]]]:
    """(document, score) for a query [1, 0, 0, 0] against three vectors, in result order."""
    store = await make_store(request.param)
    async with store:
        await store.create_collection("docs", 4)
        await store.insert(
            "docs",
            [
                record("far", 0, [0.0, 1.0, 0.0, 0.0]),
                record("same", 0, [1.0, 0.0, 0.0, 0.0]),
                record("between", 0, [0.5, 0.5, 0.0, 0.0]),
            ],
        )
        results = await store.search("docs", [1.0, 0.0, 0.0, 0.0], top_k=3)
        yield [(result.document_id, result.score) for result in results]


async def test_higher_scores_are_better_for_every_distance(scored: list[tuple[str, float]]) -> None:
    assert [document for document, _ in scored] == ["same", "between", "far"]
    scores = [score for _, score in scored]
    assert scores[0] > scores[1] > scores[2]


@pytest.mark.parametrize(
    ("distance", "expected"),
    [("Euclid", [0.0, -math.sqrt(0.5), -math.sqrt(2)]), ("Manhattan", [0.0, -1.0, -2.0])],
)
async def test_distances_are_negated(
    make_store: Callable[[str], Any], distance: str, expected: list[float]
) -> None:
    store = await make_store(distance)
    async with store:
        await store.create_collection("docs", 2)
        await store.insert(
            "docs",
            [record("a", 0, [1.0, 0.0]), record("b", 0, [0.5, 0.5]), record("c", 0, [0.0, 1.0])],
        )
        results = await store.search("docs", [1.0, 0.0], top_k=3)
    assert [result.score for result in results] == pytest.approx(expected, abs=1e-5)
