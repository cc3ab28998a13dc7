import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from kb_helpers import CountingModel

from archivist.embedding import EmbeddingModelBase, EmbeddingResponse, EmbeddingUsage
from archivist.errors import InvalidVectorError
from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag import ApproxTokenChunker, Chunk, KnowledgeBase, TextParser
from archivist.rag.knowledge.knowledge_base import DocumentNotFoundError
from archivist.rag.store.qdrant import QdrantStore
from archivist.validation import check_limit

FACTS = {
    "cats.md": "Cats sleep twelve to sixteen hours per day, mostly during daylight.",
    "rockets.md": "Rockets reach orbit by burning liquid fuel in several stages.",
    "bread.md": "Sourdough bread rises because wild yeast ferments the dough overnight.",
}


def _chunks(text: str, source: str = "doc.md", n: int = 1, **metadata: object) -> list[Chunk]:
    return [
        Chunk(
            content=TextBlock(text=f"{text} (part {i})" if n > 1 else text),
            source=source,
            chunk_index=i,
            total_chunks=n,
            metadata=dict(metadata),
        )
        for i in range(n)
    ]


def _kb(embedder: EmbeddingModelBase, store: QdrantStore, **kwargs: object) -> KnowledgeBase:
    params: dict[str, object] = {
        "name": "demo-kb",
        "description": "A toy corpus.",
        "embedding_model": embedder,
        "vector_store": store,
        "collection": "demo-kb",
    }
    params.update(kwargs)
    return KnowledgeBase(**params)  # type: ignore[arg-type]


async def _index_facts(kb: KnowledgeBase) -> dict[str, str]:
    ids = {}
    for name, text in FACTS.items():
        ids[name] = await kb.insert_document(
            _chunks(text, source=name), document_metadata={"filename": name}
        )
    return ids


async def test_seed_flow_parse_chunk_insert_search_list_delete(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    sections = await TextParser().parse(
        file=b"# Cats\nCats sleep 12-16 hours per day.\n", filename="cats.md"
    )
    chunks = await ApproxTokenChunker(chunk_size=256, overlap=32).chunk(sections)
    kb = _kb(embedder, store)
    assert not await store.has_collection("demo-kb")
    document_id = await kb.insert_document(chunks, document_metadata={"filename": "cats.md"})
    assert await store.has_collection("demo-kb")
    assert await store.collection_dimensions("demo-kb") == embedder.dimensions
    await kb.insert_document(_chunks(FACTS["rockets.md"], "rockets.md"))

    results = await kb.search(queries=["When do cats sleep?"], top_k=3, score_threshold=None)
    assert results[0].document_id == document_id
    assert results[0].chunk.content.text == "# Cats\nCats sleep 12-16 hours per day."  # type: ignore[union-attr]
    assert results[0].chunk.metadata == {"filename": "cats.md"}
    assert results[0].score > results[1].score

    summaries = {s.document_id: s for s in await kb.list_documents()}
    assert summaries[document_id].source == "cats.md"
    assert summaries[document_id].chunk_count == 1
    assert summaries[document_id].metadata == {"filename": "cats.md"}

    await kb.delete_document(document_id)
    assert document_id not in {s.document_id for s in await kb.list_documents()}
    assert all(r.document_id != document_id for r in await kb.search("cats sleep"))


async def test_search_ranks_the_relevant_document_first(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    ids = await _index_facts(kb)
    for query, expected in [
        ("how long do cats nap", "cats.md"),
        ("space launch vehicles and propellant", "rockets.md"),
        ("baking with natural leavening", "bread.md"),
    ]:
        assert (await kb.search(query, top_k=1))[0].document_id == ids[expected]


async def test_threshold_dedupe_sort_and_top_k(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    await _index_facts(kb)
    # the same query twice finds the same chunks twice: they must come back once
    results = await kb.search(["cats sleep", "cats sleep", TextBlock(text="cat naps")], top_k=5)
    keys = [(r.document_id, r.chunk.chunk_index) for r in results]
    assert len(keys) == len(set(keys)) == 3
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert len(await kb.search(["cats sleep"], top_k=2)) == 2
    # a threshold is a similarity: thresholded searches rank by the dense side
    top = (await kb.search("cats sleep", mode="dense"))[0].score
    assert [r.score for r in await kb.search("cats sleep", score_threshold=top - 1e-4)] == [
        pytest.approx(top, abs=1e-4)
    ]
    assert await kb.search("cats sleep", score_threshold=1.01) == []


async def test_all_queries_are_embedded_in_one_call(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    counting = CountingModel(embedder)
    kb = _kb(counting, store)
    await _index_facts(kb)
    counting.calls.clear()
    await kb.search(["cats", "rockets", "bread", "yeast"], top_k=4)
    assert len(counting.calls) == 1
    assert counting.calls[0][1] == "query"
    assert len(counting.calls[0][0]) == 4


async def test_datablock_queries_are_dropped_for_text_only_models(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    counting = CountingModel(embedder)
    kb = _kb(counting, store)
    await _index_facts(kb)
    image = DataBlock(source=Base64Source(data="aGk=", media_type="image/png"))
    counting.calls.clear()
    assert await kb.search([image]) == []
    assert counting.calls == []  # nothing to embed, no call
    results = await kb.search([image, "cats sleep"], top_k=1)
    assert len(counting.calls[0][0]) == 1
    assert results[0].chunk.source == "cats.md"


async def test_reinsert_replaces_the_whole_document(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    doc = await kb.insert_document(_chunks("old text about cats", n=5), document_id="doc-1")
    assert doc == "doc-1"
    await kb.insert_document(_chunks("new text about dogs", n=2), document_id="doc-1")
    chunks = await kb.list_chunks("doc-1")
    assert [c.content.text for c in chunks] == [  # type: ignore[union-attr]
        "new text about dogs (part 0)",
        "new text about dogs (part 1)",
    ]
    [summary] = await kb.list_documents()
    assert summary.chunk_count == 2
    assert all("old" not in r.chunk.content.text for r in await kb.search("cats", top_k=10))  # type: ignore[union-attr]


class FailingModel(EmbeddingModelBase):
    """Delegates to a real model but fails (or returns bad vectors) on a chosen call."""

    def __init__(self, inner: EmbeddingModelBase, fail_on_call: int, mode: str = "raise") -> None:
        super().__init__(model="failing", dimensions=inner.dimensions, batch_size=10_000)
        self.inner, self.fail_on_call, self.mode, self.count = inner, fail_on_call, mode, 0

    async def __call__(
        self, inputs: Sequence[object], input_type: str = "document"
    ) -> EmbeddingResponse:  # type: ignore[override]
        self.count += 1
        response = await self.inner(inputs, input_type=input_type)  # type: ignore[arg-type]
        if self.count != self.fail_on_call:
            return response
        if self.mode == "raise":
            raise ConnectionError("embedding service went away")
        vectors = [list(v) for v in response.embeddings]
        if self.mode == "nan":
            vectors[-1][0] = math.nan
        elif self.mode == "short":
            vectors[-1] = vectors[-1][:10]
        elif self.mode == "count":
            vectors = vectors[:-1]
        return EmbeddingResponse(embeddings=vectors, usage=EmbeddingUsage())

    async def _embed_batch(self, batch, input_type):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")


async def test_failed_reinsert_leaves_the_old_version_whole(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store, write_batch_size=2)
    await kb.insert_document(_chunks("original cats text", n=3), document_id="doc")
    failing = _kb(FailingModel(embedder, fail_on_call=2), store, write_batch_size=2)
    with pytest.raises(ConnectionError):
        await failing.insert_document(_chunks("replacement", n=6), document_id="doc")
    texts = [c.content.text for c in await kb.list_chunks("doc")]  # type: ignore[union-attr]
    assert texts == [f"original cats text (part {i})" for i in range(3)]
    [summary] = await kb.list_documents()
    assert summary.chunk_count == 3


@pytest.mark.parametrize("mode", ["nan", "short", "count"])
async def test_bad_vectors_from_a_custom_embedder_write_nothing(
    embedder: EmbeddingModelBase, store: QdrantStore, mode: str
) -> None:
    kb = _kb(FailingModel(embedder, fail_on_call=1, mode=mode), store, write_batch_size=2)
    with pytest.raises(InvalidVectorError, match="doc-x") as raised:
        await kb.insert_document(_chunks("text", n=4), document_id="doc-x")
    assert not isinstance(raised.value, ValueError)  # the model's fault, not the caller's
    assert raised.value.document_id == "doc-x" and raised.value.problem
    assert await kb.list_documents() == []


async def test_large_documents_are_embedded_in_bounded_batches(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    counting = CountingModel(embedder)
    kb = _kb(counting, store, write_batch_size=64)
    await kb.insert_document(_chunks("short line", n=300), document_id="big")
    assert [len(inputs) for inputs, _ in counting.calls] == [64, 64, 64, 64, 44]
    assert {kind for _, kind in counting.calls} == {"document"}
    [summary] = await kb.list_documents()
    assert summary.chunk_count == 300
    page = await kb.list_chunks("big", offset=290, limit=30)
    assert [c.chunk_index for c in page] == list(range(290, 300))


@pytest.mark.parametrize("limit", [-1, 1.5, None, True, "3"])
async def test_page_limit_is_one_rule_for_the_knowledge_base_and_the_store(
    embedder: EmbeddingModelBase, store: QdrantStore, limit: object
) -> None:
    """`list_chunks` takes 0 (an empty page) up; the handle and the store refuse a bad
    `limit` with the one message of `check_limit`."""
    kb = _kb(embedder, store)
    await kb.insert_document(_chunks("short line", n=3), document_id="d")
    assert await kb.list_chunks("d", limit=0) == []
    assert await store.list_chunks(kb.collection, "d", limit=0) == []
    with pytest.raises(ValueError) as rule:
        check_limit(limit)
    with pytest.raises(ValueError) as by_kb:
        await kb.list_chunks("d", limit=limit)  # type: ignore[arg-type]
    with pytest.raises(ValueError) as by_store:
        await store.list_chunks(kb.collection, "d", limit=limit)  # type: ignore[arg-type]
    assert str(by_kb.value) == str(by_store.value) == str(rule.value)


async def test_metadata_precedence_and_caller_chunks_untouched(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store, metadata_filter={"tenant_id": "a"})
    chunks = _chunks("hello", a=2, tenant_id="b")
    before = [c.model_dump() for c in chunks]
    doc = await kb.insert_document(chunks, document_metadata={"a": 1, "b": 1, "tenant_id": "c"})
    assert [c.model_dump() for c in chunks] == before
    [stored] = await kb.list_chunks(doc)
    assert stored.metadata == {"a": 2, "b": 1, "tenant_id": "a"}


async def test_tenants_sharing_a_collection_never_cross(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    a = _kb(embedder, store, collection="shared", metadata_filter={"tenant_id": "tenant-a"})
    b = _kb(embedder, store, collection="shared", metadata_filter={"tenant_id": "tenant-b"})
    # the same document id in both tenants, and a chunk that claims to be tenant-b's
    await a.insert_document(_chunks(FACTS["cats.md"], tenant_id="tenant-b"), document_id="x")
    await b.insert_document(_chunks(FACTS["rockets.md"]), document_id="x")
    assert [c.metadata["tenant_id"] for c in await a.list_chunks("x")] == ["tenant-a"]
    assert [r.chunk.source for r in await b.search("cats sleeping", top_k=10)] == ["doc.md"]
    assert (await b.search("cats sleeping"))[0].chunk.content.text == FACTS["rockets.md"]  # type: ignore[union-attr]
    assert [s.chunk_count for s in await a.list_documents()] == [1]
    await a.delete_document("x")
    assert await a.list_documents() == []
    [left] = await b.list_documents()
    assert left.document_id == "x"
    with pytest.raises(DocumentNotFoundError):
        await a.delete_document("x")
    unscoped = _kb(embedder, store, collection="shared")
    assert [s.document_id for s in await unscoped.list_documents()] == ["x"]


async def test_dimension_mismatch_with_an_existing_collection(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    await store.create_collection("small", 8)
    kb = _kb(embedder, store, collection="small")
    with pytest.raises(ValueError, match=r"'small'.*8-d.*384-d"):
        await kb.insert_document(_chunks("x"))
    with pytest.raises(ValueError, match="small"):
        await kb.search("x")


async def test_datablock_chunks_are_skipped_for_text_only_models(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    image = DataBlock(source=Base64Source(data="aGk=", media_type="image/png"))
    chunks = [
        Chunk(content=TextBlock(text="slide text"), source="d.pptx", chunk_index=0, total_chunks=3),
        Chunk(content=image, source="d.pptx", chunk_index=1, total_chunks=3),
        Chunk(content=TextBlock(text="more text"), source="d.pptx", chunk_index=2, total_chunks=3),
    ]
    doc = await kb.insert_document(chunks)
    stored = await kb.list_chunks(doc)
    assert [(c.chunk_index, c.total_chunks) for c in stored] == [(0, 2), (1, 2)]
    lone = chunks[1].model_copy(update={"chunk_index": 0, "total_chunks": 1})
    with pytest.raises(ValueError, match="text-only"):
        await kb.insert_document([lone])


async def test_bad_arguments_are_clear_errors_and_write_nothing(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    with pytest.raises(ValueError, match="empty"):
        await kb.insert_document([])
    with pytest.raises(ValueError, match="document_metadata"):
        await kb.insert_document(_chunks("x"), document_metadata={"when": object()})
    with pytest.raises(ValueError, match=r"chunks\[0\].metadata"):
        await kb.insert_document(_chunks("x", bad=math.inf))
    with pytest.raises(TypeError, match=r"chunks\[1\]"):
        await kb.insert_document([*_chunks("x"), "not a chunk"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="document_id"):
        await kb.insert_document(_chunks("x"), document_id="  ")
    for top_k in (0, -1):
        with pytest.raises(ValueError, match="top_k"):
            await kb.search("x", top_k=top_k)
    with pytest.raises(TypeError, match=r"queries\[0\]"):
        await kb.search([42])  # type: ignore[list-item]
    with pytest.raises(DocumentNotFoundError, match="nope"):
        await kb.delete_document("nope")
    assert await kb.list_documents() == []
    with pytest.raises(ValueError, match="tenant"):
        _kb(embedder, store, metadata_filter={"tenant": 1.5})
    with pytest.raises(ValueError, match="back"):
        _kb(embedder, store, metadata_filter={"back\\slash": "x"})


async def test_insert_documents_shares_embedding_calls_and_writes_each_whole(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    from archivist.rag import NewDocument

    counting = CountingModel(embedder)
    kb = _kb(counting, store, write_batch_size=4)
    await kb.insert_document(_chunks("old version", n=3), document_id="b")
    counting.calls.clear()
    ids = await kb.insert_documents(
        [
            NewDocument(_chunks("cats sleep", n=2), document_id="a", document_metadata={"k": 1}),
            NewDocument(_chunks("new version", n=2), document_id="b"),
            NewDocument(_chunks("rockets fly", n=2)),
        ]
    )
    assert ids[:2] == ["a", "b"] and len(ids) == 3
    assert [len(inputs) for inputs, _ in counting.calls] == [4, 2]  # across documents
    counts = {s.document_id: s.chunk_count for s in await kb.list_documents()}
    assert counts == {"a": 2, "b": 2, ids[2]: 2}
    assert [c.content.text for c in await kb.list_chunks("b")] == [  # type: ignore[union-attr]
        "new version (part 0)",
        "new version (part 1)",
    ]
    assert (await kb.list_chunks("a"))[0].metadata == {"k": 1}


async def test_insert_documents_writes_each_document_whole_or_not_at_all(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    from archivist.rag import NewDocument

    kb = _kb(FailingModel(embedder, fail_on_call=2, mode="nan"), store, write_batch_size=2)
    docs = [NewDocument(_chunks(f"doc {i}", n=2), document_id=f"d{i}") for i in range(3)]
    with pytest.raises(InvalidVectorError, match="bad vector") as raised:
        await kb.insert_documents(docs)
    assert (raised.value.document_id, raised.value.chunk_index) == ("d1", 1)
    # the batch before the bad vector is written whole; the failing one and later ones not
    assert {s.document_id: s.chunk_count for s in await kb.list_documents()} == {"d0": 2}
    assert (await kb.verify()).ok
    with pytest.raises(ValueError, match="repeats"):
        await kb.insert_documents([docs[0], docs[0]])
    assert await kb.insert_documents([]) == []


async def test_ingest_isolates_a_failing_window_file_by_file(
    embedder: EmbeddingModelBase, store: QdrantStore, tmp_path: Path
) -> None:
    from archivist.rag import default_registry
    from archivist.rag.knowledge.ingest import Outcome, ingest_files

    files = []
    for i in range(4):
        path = tmp_path / f"note{i}.md"
        path.write_text(f"Note number {i} about topic {i}.")
        files.append(path)
    # the first (windowed) embedding call fails; the file-by-file retry succeeds
    kb = _kb(FailingModel(embedder, fail_on_call=1, mode="count"), store, write_batch_size=3)
    report = await ingest_files(
        kb, files, registry=default_registry(), chunker=ApproxTokenChunker()
    )
    assert [r.outcome for r in report.results] == [Outcome.INDEXED] * 4
    assert len(await kb.list_documents()) == 4


async def test_ingest_streams_a_large_file_in_bounded_embedding_calls(
    embedder: EmbeddingModelBase, store: QdrantStore, tmp_path: Path
) -> None:
    from archivist.rag import default_registry
    from archivist.rag.knowledge.ingest import Outcome, ingest_files

    small = tmp_path / "a-small.md"
    small.write_text("A short note.")
    large = tmp_path / "b-large.md"
    large.write_text("\n\n".join(f"Paragraph {i} of the long file." for i in range(40)))
    counting = CountingModel(embedder)
    kb = _kb(counting, store, write_batch_size=8)
    progress: list[tuple[str, int, int]] = []
    report = await ingest_files(
        kb,
        [small, large],
        registry=default_registry(),
        chunker=ApproxTokenChunker(16, 0),
        on_chunks=lambda path, done, total: progress.append((path, done, total)),
    )
    large_progress = [(done, total) for path, done, total in progress if path == str(large)]
    # the large file is written batch by batch, and the progress moves within it
    assert len(large_progress) > 1
    assert [done for done, _ in large_progress] == sorted(done for done, _ in large_progress)
    assert large_progress[-1][0] == large_progress[-1][1] == report.results[1].chunks
    assert [r.outcome for r in report.results] == [Outcome.INDEXED, Outcome.INDEXED]
    large_chunks = report.results[1].chunks
    assert large_chunks > 8
    assert max(len(inputs) for inputs, _ in counting.calls) <= 8
    assert sum(len(inputs) for inputs, _ in counting.calls) == large_chunks + 1
    counts = {s.source: s.chunk_count for s in await kb.list_documents()}
    assert counts == {"a-small.md": 1, "b-large.md": large_chunks}


async def test_searching_and_listing_never_create_the_collection(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    """A knowledge base without a collection (new, or deleted by another process) finds and
    lists nothing, and stays without one until something is written to it."""
    kb = _kb(embedder, store)
    assert await kb.search("When do cats sleep?") == []
    assert await kb.list_documents() == [] and await kb.get_document("cats") is None
    assert await kb.list_chunks("cats") == []
    assert not await store.has_collection("demo-kb") and not await kb.has_collection()
    await kb.insert_document(_chunks("Cats sleep 12-16 hours per day.", "cats.md"))
    await store.delete_collection("demo-kb")  # what another replica's deletion does
    assert await kb.search("When do cats sleep?") == []
    assert not await store.has_collection("demo-kb")


async def test_a_search_still_checks_the_collection_s_dimensions(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    from archivist.errors import ConfigurationError

    await store.create_collection("demo-kb", embedder.dimensions + 1)
    with pytest.raises(ConfigurationError, match="-d vectors"):
        await _kb(embedder, store).search("When do cats sleep?")
