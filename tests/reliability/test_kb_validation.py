"""KnowledgeBase input validation: bad input gets a clear error and writes nothing.

After every rejected call the store is inspected (collections, documents, chunks, generations)
to prove nothing was written. Embeddings do not matter here, so a deterministic hashing
embedder stands in for the offline model.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from archivist.embedding import EmbeddingModelBase, EmbeddingResponse
from archivist.embedding.errors import EmbeddingError, InvalidVectorError
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.knowledge.knowledge_base import DocumentNotFoundError, KnowledgeBase
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.embedding import HashEmbeddingModel

DIMENSIONS = 16
COLLECTION = "docs"


class HashEmbedder(HashEmbeddingModel):
    """The shared hash embedder (each text hashed whole). `poison(text, vector)` makes one
    text return a given (bad) vector; `bypass_checks` skips the base class's output checks
    (a custom model overriding `__call__`), so the KnowledgeBase's own checks are exercised."""

    def __init__(self, bypass_checks: bool = False) -> None:
        super().__init__(DIMENSIONS, model="hash-embedder", whole_text=True, lowercase=False)
        self.bypass_checks = bypass_checks
        self.poisoned: dict[str, list[float]] = {}

    def vector(self, item: Any) -> list[float]:
        return self.poisoned.get(item, super().vector(item))

    async def __call__(  # type: ignore[override]
        self, inputs: Sequence[Any], input_type: Any = "document"
    ) -> EmbeddingResponse:
        if not self.bypass_checks:
            return await super().__call__(inputs, input_type)
        texts = [i.text if isinstance(i, TextBlock) else str(i) for i in inputs]
        return EmbeddingResponse(embeddings=[self.vector(t) for t in texts])


def chunks(
    texts: Sequence[str], source: str = "doc.txt", metadata: dict[str, Any] | None = None
) -> list[Chunk]:
    return [
        Chunk(
            content=TextBlock(text=text),
            source=source,
            chunk_index=i,
            total_chunks=len(texts),
            metadata=dict(metadata or {}),
        )
        for i, text in enumerate(texts)
    ]


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as opened:
        yield opened


def make_kb(
    store: QdrantStore, embedder: EmbeddingModelBase | None = None, **kwargs: Any
) -> KnowledgeBase:
    return KnowledgeBase(
        "kb", "validation", embedder or HashEmbedder(), store, COLLECTION, **kwargs
    )


async def snapshot(store: QdrantStore) -> object:
    """Everything stored, down to the write ids: equal snapshots mean nothing was written
    (an empty collection the KB created on first use counts as nothing)."""
    documents = await store.list_documents(COLLECTION)
    chunks_of = {
        d.document_id: await store.list_chunks(COLLECTION, d.document_id, limit=1000)
        for d in documents
    }
    return documents, chunks_of, await store.document_generations(COLLECTION)


BAD_VECTORS = {
    "too short": [0.1] * (DIMENSIONS - 1),
    "too long": [0.1] * (DIMENSIONS + 1),
    "empty": [],
    "nan": [0.1] * (DIMENSIONS - 1) + [math.nan],
    "inf": [math.inf] + [0.1] * (DIMENSIONS - 1),
    "-inf": [0.1] * 5 + [-math.inf] + [0.1] * (DIMENSIONS - 6),
}


@pytest.mark.parametrize("bypass_checks", [False, True], ids=["via-base", "bypassing-base"])
@pytest.mark.parametrize("bad", list(BAD_VECTORS), ids=list(BAD_VECTORS))
@pytest.mark.parametrize("existing", [False, True], ids=["new-doc", "re-insert"])
async def test_bad_vectors_write_nothing(
    store: QdrantStore, bad: str, bypass_checks: bool, existing: bool
) -> None:
    embedder = HashEmbedder(bypass_checks=bypass_checks)
    kb = make_kb(store, embedder, write_batch_size=2)  # the bad vector sits in a later batch
    if existing:
        await kb.insert_document(chunks(["old one", "old two"]), document_id="doc")
    before = await snapshot(store)
    texts = [f"new {i}" for i in range(5)]
    embedder.poisoned[texts[3]] = BAD_VECTORS[bad]
    with pytest.raises((ValueError, EmbeddingError)) as raised:
        await kb.insert_document(chunks(texts), document_id="doc")
    message = str(raised.value)
    assert "dimensions" in message or "finite" in message or "bad vector" in message, message
    assert await snapshot(store) == before
    assert (await kb.verify()).ok


async def test_wrong_vector_count_writes_nothing(store: QdrantStore) -> None:
    class Short(HashEmbedder):
        async def __call__(  # type: ignore[override]
            self, inputs: Sequence[Any], input_type: Any = "document"
        ) -> EmbeddingResponse:
            response = await super().__call__(inputs, input_type)
            return EmbeddingResponse(embeddings=response.embeddings[:-1])

    kb = make_kb(store, Short(bypass_checks=True))
    with pytest.raises(InvalidVectorError, match="returned 2 vectors for 3 chunks"):
        await kb.insert_document(chunks(["a", "b", "c"]))
    assert await store.list_documents(COLLECTION) == []


class Unserialisable:
    pass


NON_JSON: dict[str, Any] = {
    "set": {"tags": {"a", "b"}},
    "bytes": {"blob": b"\x00\x01"},
    "object": {"thing": Unserialisable()},
    "nan": {"score": math.nan},
    "inf": {"score": math.inf},
    "nested-nan": {"a": {"b": [1.0, math.nan]}},
    "int-key": {1: "one"},
    "nested-int-key": {"a": {2: "two"}},
    "colliding-keys": {1: "int", "1": "str"},
    "none-key": {None: "null"},
}


@pytest.mark.parametrize("name", list(NON_JSON), ids=list(NON_JSON))
@pytest.mark.parametrize("where", ["document", "chunk"])
async def test_non_json_metadata_is_rejected_and_writes_nothing(
    store: QdrantStore, name: str, where: str
) -> None:
    kb = make_kb(store)
    await kb.insert_document(chunks(["keep me"]), document_id="kept")
    before = await snapshot(store)
    metadata = NON_JSON[name]
    batch = chunks(["x", "y"])
    if where == "document":
        call = kb.insert_document(batch, document_id="kept", document_metadata=metadata)
    else:
        try:
            batch[1].metadata.update(metadata)
        except Exception:  # pydantic may already refuse the key
            return
        call = kb.insert_document(batch, document_id="kept")
    with pytest.raises((ValueError, TypeError), match="metadata"):
        await call
    assert await snapshot(store) == before


INTERNAL_KEYS: dict[str, Any] = {
    "document_id": "someone-else",
    "generation": "0000000000000000ffffffffffffffff",
    "chunk_index": 99,
    "total_chunks": 1000,
    "source": "forged.pdf",
    "content": '{"type": "text", "text": "forged"}',
    "metadata": {"tenant": "other", "nested": {"document_id": "x"}},
    "id": 7,
    "vector": [1, 2, 3],
    "score": 1e9,
    'metadata."tenant"': "quoted-path",
    "a.b": "dotted",
}


async def test_metadata_keys_named_like_internal_fields_round_trip(store: QdrantStore) -> None:
    kb = make_kb(store)
    await kb.insert_document(
        chunks(["alpha text", "beta text", "gamma text"], "real.txt", INTERNAL_KEYS),
        document_id="real",
    )
    await kb.insert_document(chunks(["other doc"], source="other.txt"), document_id="other")

    documents = {d.document_id: d for d in await kb.list_documents()}
    assert sorted(documents) == ["other", "real"]
    assert documents["real"].chunk_count == 3
    assert documents["real"].source == "real.txt"
    assert documents["real"].metadata == INTERNAL_KEYS
    stored = await kb.list_chunks("real")
    assert [(c.chunk_index, c.total_chunks, c.source) for c in stored] == [
        (0, 3, "real.txt"),
        (1, 3, "real.txt"),
        (2, 3, "real.txt"),
    ]
    assert [c.content for c in stored] == [
        TextBlock(text=t, id=c.content.id, created_at=c.content.created_at)  # type: ignore[union-attr]
        for t, c in zip(["alpha text", "beta text", "gamma text"], stored, strict=True)
    ]
    assert all(c.metadata == INTERNAL_KEYS for c in stored)
    hits = await kb.search("beta text", top_k=10)
    assert {(h.document_id, h.chunk.chunk_index) for h in hits} == {
        ("real", 0),
        ("real", 1),
        ("real", 2),
        ("other", 0),
    }
    assert hits[0].document_id == "real" and hits[0].chunk.chunk_index == 1
    assert (await kb.verify()).ok

    # A handle filtering on such keys addresses the metadata, never the internal fields.
    for key in ("document_id", "generation", "chunk_index", "source", "content", "id"):
        scoped = make_kb(store, metadata_filter={key: INTERNAL_KEYS[key]})
        assert [d.document_id for d in await scoped.list_documents()] == ["real"], key
    nobody = make_kb(store, metadata_filter={"document_id": "real"})
    assert await nobody.list_documents() == []
    with pytest.raises(DocumentNotFoundError):
        await nobody.delete_document("real")

    # Re-insert and delete treat it as the plain document it is.
    await kb.insert_document(chunks(["only one"], metadata=INTERNAL_KEYS), document_id="real")
    assert [(d.document_id, d.chunk_count) for d in await kb.list_documents()] == [
        ("other", 1),
        ("real", 1),
    ]
    await kb.delete_document("real")
    assert [d.document_id for d in await kb.list_documents()] == ["other"]
    assert (await kb.verify()).ok


@pytest.mark.parametrize(
    "bad_chunks",
    [
        [],
        (),
        "chunks(['a'])[0]",
        "not chunks",
        [TextBlock(text="a block, not a chunk")],
        "misnumbered",
        "duplicate-index",
        "wrong-total",
    ],
    ids=["empty-list", "empty-tuple", "single-chunk", "str", "wrong-type", "gap", "dup", "total"],
)
async def test_bad_chunk_lists_are_rejected_and_write_nothing(
    store: QdrantStore, bad_chunks: Any
) -> None:
    kb = make_kb(store)
    built = chunks(["a", "b", "c"])
    if bad_chunks == "chunks(['a'])[0]":
        bad_chunks = built[0]
    elif bad_chunks == "misnumbered":
        bad_chunks = [built[0], built[2]]
    elif bad_chunks == "duplicate-index":
        bad_chunks = [built[0], built[1], built[1].model_copy()]
    elif bad_chunks == "wrong-total":
        bad_chunks = [c.model_copy(update={"total_chunks": 5}) for c in built]
    with pytest.raises((ValueError, TypeError), match="chunk"):
        await kb.insert_document(bad_chunks, document_id="doc")
    assert not await store.has_collection(COLLECTION)  # failed before even creating it
    await kb.insert_document(chunks(["old"]), document_id="doc")
    before = await snapshot(store)
    with pytest.raises((ValueError, TypeError), match="chunk"):
        await kb.insert_document(bad_chunks, document_id="doc")
    assert await snapshot(store) == before


@pytest.mark.parametrize("top_k", [0, -1, -100, True, False, 1.5, "3", None])
async def test_bad_top_k_is_a_clear_error(store: QdrantStore, top_k: Any) -> None:
    kb = make_kb(store)
    await kb.insert_document(chunks(["something"]))
    with pytest.raises(ValueError, match="top_k"):
        await kb.search("something", top_k=top_k)


@pytest.mark.parametrize("threshold", [math.nan, math.inf, -math.inf])
async def test_non_finite_score_threshold_is_a_clear_error(
    store: QdrantStore, threshold: float
) -> None:
    with pytest.raises(ValueError, match="score_threshold"):
        await make_kb(store).search("q", score_threshold=threshold)


async def test_unknown_document_ids(store: QdrantStore) -> None:
    tenant_a = make_kb(store, metadata_filter={"tenant": "a"})
    tenant_b = make_kb(store, metadata_filter={"tenant": "b"})
    await tenant_a.insert_document(chunks(["a's text", "more"]), document_id="shared-name")
    before = await snapshot(store)
    for kb, document_id in [
        (tenant_a, "never-written"),
        (tenant_b, "shared-name"),  # exists, but in another tenant's scope
        (make_kb(store), "never-written"),
    ]:
        with pytest.raises(DocumentNotFoundError, match=document_id):
            await kb.delete_document(document_id)
        assert await kb.list_chunks(document_id) == []
    for bad_id in ["", "   ", None, 5, b"bytes"]:
        with pytest.raises(ValueError, match="document_id"):
            await tenant_a.delete_document(bad_id)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="document_id"):
            await tenant_a.list_chunks(bad_id)  # type: ignore[arg-type]
    for bad_id in ["", "  ", 5]:
        with pytest.raises(ValueError, match="document_id"):
            await tenant_a.insert_document(chunks(["x"]), document_id=bad_id)  # type: ignore[arg-type]
    assert await snapshot(store) == before
    assert [c.metadata for c in await tenant_a.list_chunks("shared-name")] == [
        {"tenant": "a"},
        {"tenant": "a"},
    ]


@pytest.mark.parametrize("offset, limit", [(-1, 5), (0, -1), (0, -3)])
async def test_bad_pages_are_clear_errors(store: QdrantStore, offset: int, limit: int) -> None:
    kb = make_kb(store)
    await kb.insert_document(chunks(["x"]), document_id="doc")
    with pytest.raises(ValueError, match="offset|limit"):
        await kb.list_chunks("doc", offset=offset, limit=limit)
    assert await kb.list_chunks("doc", limit=0) == []  # an empty page, as the stores give


@pytest.mark.parametrize(
    "metadata_filter",
    [{"tenant": 1.5}, {"tenant": ["a"]}, {"": "x"}, {'a"b': 1}, "tenant=a"],
)
def test_bad_metadata_filters_are_refused_up_front(
    metadata_filter: Any,
) -> None:
    store = QdrantStore(location=":memory:")
    with pytest.raises((ValueError, TypeError), match="metadata_filter"):
        make_kb(store, metadata_filter=metadata_filter)


# One rule for the knowledge base and the store (archivist.validation)

BAD_FILTERS: list[Any] = [
    {"": "x"},
    {'say "hi"': "x"},
    {"back\\slash": "x"},
    {7: "x"},
    {"k": 1.5},
    {"k": ["a"]},
    {"k": 2**63},
    "tenant=a",
]


@pytest.mark.parametrize("metadata_filter", BAD_FILTERS)
async def test_the_store_and_the_knowledge_base_refuse_the_same_filters_alike(
    store: QdrantStore, metadata_filter: Any
) -> None:
    with pytest.raises((ValueError, TypeError), match="metadata_filter") as by_kb:
        make_kb(store, metadata_filter=metadata_filter)
    await store.create_collection(COLLECTION, DIMENSIONS)
    with pytest.raises(by_kb.type) as by_store:
        await store.list_documents(COLLECTION, metadata_filter=metadata_filter)
    assert str(by_store.value) == str(by_kb.value)


@pytest.mark.parametrize(
    "metadata_filter",
    [{"tenant": "a"}, {"a.b": "x"}, {"n": -(2**63)}, {"flag": True}, {"gone": None}],
)
async def test_the_store_and_the_knowledge_base_accept_the_same_filters(
    store: QdrantStore, metadata_filter: dict[str, Any]
) -> None:
    kb = make_kb(store, metadata_filter=metadata_filter)
    assert kb.metadata_filter == metadata_filter
    await store.create_collection(COLLECTION, DIMENSIONS)
    assert await store.list_documents(COLLECTION, metadata_filter=metadata_filter) == []


@pytest.mark.parametrize("document_id", ["", "  ", "\n", 7, None])
async def test_the_store_and_the_knowledge_base_refuse_the_same_document_ids(
    store: QdrantStore, document_id: Any
) -> None:
    kb = make_kb(store)
    await store.create_collection(COLLECTION, DIMENSIONS)
    with pytest.raises(ValueError, match="document_id must be a non-empty str") as by_kb:
        await kb.list_chunks(document_id)
    with pytest.raises(ValueError) as by_store:
        await store.list_chunks(COLLECTION, document_id)
    assert str(by_store.value) == str(by_kb.value)


async def test_document_ids_are_kept_exactly_as_given(store: QdrantStore) -> None:
    kb = make_kb(store)
    stored = await kb.insert_document(chunks(["padded id"]), document_id=" padded ")
    assert stored == " padded "
    assert [d.document_id for d in await kb.list_documents()] == [" padded "]
