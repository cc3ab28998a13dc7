"""Every store answers alike: the same chunks, embedded once by the default model, written
into Qdrant Edge, qdrant-client's local mode (the stand-in for a Qdrant server) and
PostgreSQL with pgvector, searched with the same queries in every mode, within tenants.

Each corpus is a tenant of one collection, so each search runs under a tenant filter while
the collection-wide term statistics hold every corpus. For each query and mode, the top 10
of each store must overlap Qdrant Edge's in at least 9 places (of as many as Edge found),
and the hits they share must have the same relevance within 0.02. A SciFact subset joins
the corpora where `../shared/datasets/scifact` is present. Chunks also carry metadata of every
kind a search filter's `match` compares, and each store finds the chunks a match holds for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from archivist.embedding import LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag import PgVectorStore, Section
from archivist.rag.chunker import chunker_for
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import SearchMode, VectorStoreBase
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.search_filter import SearchFilter
from archivist.testing.corpora import CORPORA, load_corpus
from pgvector_server import pgvector_server

SCIFACT = Path(__file__).parents[3] / "shared" / "datasets" / "scifact"
SCIFACT_QUERIES = 30
SCIFACT_DOCUMENTS = 300
MODES: tuple[SearchMode, ...] = ("dense", "sparse", "hybrid")
TOP_K = 10
COLLECTION = "parity"

# The stores are filled once for the module, on the module's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


def _corpora() -> dict[str, tuple[dict[str, str], list[str]]]:
    """Tenant -> (documents by id, questions)."""
    found = {}
    for name in CORPORA:
        corpus = load_corpus(name)
        found[name] = (corpus.documents, list(corpus.questions))
    if (SCIFACT / "qrels" / "test.tsv").is_file():
        from archivist.eval.dataset import load_beir

        data = load_beir(SCIFACT, "test").subset(SCIFACT_QUERIES, SCIFACT_DOCUMENTS, seed=45)
        found["scifact"] = (
            {doc.id: doc.text_for_indexing for doc in data.corpus},
            [query.text for query in data.queries],
        )
    return found


def _attributes(number: int) -> dict[str, Any]:
    """Chunk metadata of every kind `match` compares, varied by `number`: ints, floats,
    numeric strings, bools, lists, null and absent values at `n`, and a `group` letter."""
    value = number % 13
    kinds: list[dict[str, Any]] = [
        {"n": value},
        {"n": value + 0.5},
        {"n": float(value)},
        {"n": str(value)},
        {"n": value % 2 == 0},
        {"n": [value, value + 20]},
        {"n": None},
        {},
    ]
    return {"group": "abcde"[number % 5], **kinds[number % len(kinds)]}


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture(scope="module")
def model() -> LocalEmbeddingModel:
    return LocalEmbeddingModel()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def records(model: LocalEmbeddingModel) -> dict[str, list[VectorRecord]]:
    """Every corpus chunked and embedded once, each chunk tagged with its corpus as tenant."""
    chunker = chunker_for(model.chunk_tokenizer())
    out: dict[str, list[VectorRecord]] = {}
    for tenant, (documents, _) in _corpora().items():
        chunks = []
        for document_id, text in documents.items():
            section = Section(content=TextBlock(text=text), source=f"{document_id}.txt")
            for chunk in await chunker.chunk([section]):
                chunk.metadata["tenant_id"] = tenant
                chunk.metadata.update(_attributes(len(chunks) + 7 * len(out)))
                chunks.append((document_id, chunk))
        texts = [chunk.content.text for _, chunk in chunks]  # type: ignore[union-attr]
        vectors = (await model(texts, input_type="document")).embeddings
        out[tenant] = [
            VectorRecord(vector=list(vector), document_id=document_id, chunk=chunk)
            for (document_id, chunk), vector in zip(chunks, vectors, strict=True)
        ]
    return out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stores(
    pg_url: str, records: dict[str, list[VectorRecord]]
) -> AsyncIterator[dict[str, VectorStoreBase]]:
    """The three stores, each holding every corpus, written in the same order."""
    from qdrant_client import AsyncQdrantClient

    async with AsyncExitStack() as stack:
        client = AsyncQdrantClient(location=":memory:")
        stack.push_async_callback(client.close)
        opened: dict[str, VectorStoreBase] = {
            "edge": await stack.enter_async_context(QdrantStore(location=":memory:")),
            "client-local": await stack.enter_async_context(QdrantStore.from_client(client)),
            "pgvector": await stack.enter_async_context(
                PgVectorStore(pg_url, table_prefix="parity")
            ),
        }
        for store in opened.values():
            await store.create_collection(COLLECTION, len(records["numbers"][0].vector))
            for batch in records.values():
                for start in range(0, len(batch), 64):
                    await store.insert(COLLECTION, batch[start : start + 64])
        yield opened


async def _search(
    store: VectorStoreBase, vector: list[float], text: str, mode: SearchMode, tenant: str | None
) -> list[Any]:
    scope = None if tenant is None else {"tenant_id": tenant}
    return await store.search(
        COLLECTION,
        None if mode == "sparse" else vector,
        TOP_K,
        scope,
        query_text=text,
        mode=mode,
    )


def _key(hit: Any) -> tuple[str, int]:
    return (hit.document_id, hit.chunk.chunk_index)


@pytest.mark.parametrize("other", ["client-local", "pgvector"])
@pytest.mark.parametrize("tenant", [*CORPORA, "scifact"])
async def test_every_store_ranks_like_qdrant_edge(
    stores: dict[str, VectorStoreBase], model: LocalEmbeddingModel, tenant: str, other: str
) -> None:
    corpora = _corpora()
    if tenant not in corpora:
        pytest.skip(f"no SciFact at {SCIFACT}")
    questions = corpora[tenant][1]
    vectors = (await model(questions, input_type="query")).embeddings
    compared = 0
    for question, vector in zip(questions, vectors, strict=True):
        for mode in MODES:
            reference = await _search(stores["edge"], list(vector), question, mode, tenant)
            found = await _search(stores[other], list(vector), question, mode, tenant)
            where = (mode, question)
            assert {h.chunk.metadata["tenant_id"] for h in found} <= {tenant}, where
            shared = {_key(h) for h in reference} & {_key(h) for h in found}
            assert len(shared) >= min(len(reference), TOP_K - 1), (where, reference, found)
            edge_relevance = {_key(h): h.relevance for h in reference}
            for hit in found:
                if _key(hit) in shared:
                    assert hit.relevance is not None, where
                    assert hit.relevance == pytest.approx(edge_relevance[_key(hit)], abs=0.02), (
                        where,
                        _key(hit),
                    )
            shown = [hit.relevance for hit in found]
            assert shown == sorted(shown, reverse=True), where  # type: ignore[type-var]
            compared += 1
    assert compared == len(questions) * len(MODES)


async def test_a_search_without_a_tenant_sees_every_corpus_alike(
    stores: dict[str, VectorStoreBase], model: LocalEmbeddingModel
) -> None:
    question = "which warehouse ships crates of item 221"
    [vector] = (await model([question], input_type="query")).embeddings
    ids = {}
    for name, store in stores.items():
        hits = await _search(store, list(vector), question, "hybrid", None)
        assert hits[0].document_id == "item-221", name
        ids[name] = [_key(h) for h in hits]
    assert len(set(ids["edge"]) & set(ids["pgvector"])) >= TOP_K - 1
    assert len(set(ids["edge"]) & set(ids["client-local"])) >= TOP_K - 1


@pytest.mark.parametrize("mode", MODES)
async def test_a_search_filter_narrows_every_store_alike(
    stores: dict[str, VectorStoreBase], model: LocalEmbeddingModel, mode: SearchMode
) -> None:
    tenant = next(iter(CORPORA))
    question = _corpora()[tenant][1][0]
    [vector] = (await model([question], input_type="query")).embeddings
    within = SearchFilter(where={"tenant_id": tenant}, paths=("*",))
    found = {
        name: await store.search(
            COLLECTION,
            None if mode == "sparse" else list(vector),
            TOP_K,
            query_text=question,
            mode=mode,
            search_filter=within,
        )
        for name, store in stores.items()
    }
    scoped = await _search(stores["edge"], list(vector), question, mode, tenant)
    for name, hits in found.items():
        assert hits and {h.chunk.metadata["tenant_id"] for h in hits} == {tenant}, name
        shared = {_key(h) for h in hits} & {_key(h) for h in scoped}
        assert len(shared) >= min(len(scoped), TOP_K - 1), (name, hits, scoped)


def _holds(condition: dict[str, Any], metadata: dict[str, Any]) -> bool:
    """`condition` (a `match` tree) evaluated on `metadata` as the stores document it."""
    if "all" in condition:
        return all(_holds(part, metadata) for part in condition["all"])
    if "any" in condition:
        return any(_holds(part, metadata) for part in condition["any"])
    op, value = condition["op"], condition["value"]
    if op in ("ne", "nin"):
        return not _holds(
            {**condition, "op": "in", "value": [value] if op == "ne" else value}, metadata
        )
    stored = metadata.get(condition["key"])
    items = stored if isinstance(stored, list) else [stored]
    wanted = value if op == "in" else [value]

    def number(item: Any) -> bool:
        return isinstance(item, int | float) and not isinstance(item, bool)

    def equal(item: Any, other: Any) -> bool:
        if number(item) and number(other):
            return bool(item == other)
        return type(item) is type(other) and item == other

    if op in ("eq", "in"):
        return any(equal(item, other) for item in items for other in wanted)
    compare = {"gt": float.__gt__, "gte": float.__ge__, "lt": float.__lt__, "lte": float.__le__}[op]
    return any(number(item) and compare(float(item), float(value)) for item in items)


def _compare(key: str, op: str, value: Any) -> dict[str, Any]:
    return {"key": key, "op": op, "value": value}


NARROW_TOP_K = 50
"""More than any narrow match holds for, so a search returns every chunk it holds for.
Each holds for a few chunks of the built-in corpora alone, SciFact present or not."""
NARROW_MATCHES = [
    {"all": [_compare("n", "eq", 3), _compare("group", "in", ["a", "b"])]},
    {"all": [_compare("n", "in", ["4", True, 24]), _compare("group", "in", ["b", "c"])]},
    {
        "any": [
            _compare("n", "eq", 12.5),
            {"all": [_compare("n", "gt", 31), _compare("n", "lte", 32)]},
        ]
    },
    {
        "all": [
            _compare("n", "nin", [0, 1, 2, 3, 4, 5, 6]),
            _compare("n", "lt", 13),
            _compare("group", "eq", "e"),
        ]
    },
]
BROAD_MATCHES = [
    _compare("n", "ne", 3),
    {"any": [_compare("n", "lt", 6), _compare("group", "nin", ["a", "b"])]},
]


@pytest.mark.parametrize("condition", NARROW_MATCHES)
async def test_every_store_finds_exactly_the_chunks_a_narrow_match_holds_for(
    stores: dict[str, VectorStoreBase],
    records: dict[str, list[VectorRecord]],
    model: LocalEmbeddingModel,
    condition: dict[str, Any],
) -> None:
    expected = {
        (r.document_id, r.chunk.chunk_index)
        for batch in records.values()
        for r in batch
        if _holds(condition, r.chunk.metadata)
    }
    assert 0 < len(expected) <= NARROW_TOP_K, expected
    question = "which warehouse ships crates of item 221"
    [vector] = (await model([question], input_type="query")).embeddings
    for name, store in stores.items():
        hits = await store.search(
            COLLECTION, list(vector), NARROW_TOP_K, search_filter=SearchFilter(match=condition)
        )
        assert {_key(hit) for hit in hits} == expected, name


@pytest.mark.parametrize("condition", BROAD_MATCHES)
@pytest.mark.parametrize("mode", MODES)
async def test_every_store_ranks_alike_within_a_broad_match(
    stores: dict[str, VectorStoreBase],
    model: LocalEmbeddingModel,
    condition: dict[str, Any],
    mode: SearchMode,
) -> None:
    question = "which warehouse ships crates of item 221"
    [vector] = (await model([question], input_type="query")).embeddings
    found = {
        name: await store.search(
            COLLECTION,
            None if mode == "sparse" else list(vector),
            TOP_K,
            query_text=question,
            mode=mode,
            search_filter=SearchFilter(match=condition),
        )
        for name, store in stores.items()
    }
    reference = {_key(hit) for hit in found["edge"]}
    assert reference
    for name, hits in found.items():
        assert all(_holds(condition, hit.chunk.metadata) for hit in hits), name
        shared = {_key(hit) for hit in hits} & reference
        assert len(shared) >= min(len(reference), TOP_K - 1), (name, hits)
