"""The conformance suite of `VectorStoreBase`, one mixin per part of the contract.

A store's test module combines the mixins of what it offers in a `Test...` class and provides a
`store` fixture yielding an entered store (Cosine distance). Every store takes the core mixins
(`CollectionTests`, `WriteTests`, `DenseSearchTests`, `ReplaceTests`); each capability a store
declares in `StoreCapabilities` has its own mixin, which first checks the declaration, so a store
opts in by inheriting and nothing is skipped. `DeclarationTests` checks that the mixins combined
are exactly the capabilities declared. The mixins are not named `Test...`, so pytest collects them
only through such subclasses. Limits of one engine (e.g. Qdrant's 64-bit integer index) are
tested with that engine, not here.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar

import pytest

from archivist.message import Base64Source, DataBlock, TextBlock, URLSource
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.rag.store.capabilities import StoreCapabilities

DIMENSIONS = 4


def unit(axis: int, lean: float = 0.0) -> list[float]:
    """A vector along `axis`, tilted by `lean` towards the next axis."""
    vector = [0.0] * DIMENSIONS
    vector[axis] = 1.0
    vector[(axis + 1) % DIMENSIONS] = lean
    return vector


def record(
    document_id: str,
    chunk_index: int,
    vector: Sequence[float] | None = None,
    *,
    total: int = 3,
    source: str | None = None,
    text: str | None = None,
    **metadata: Any,
) -> VectorRecord:
    """A text chunk of `document_id` with the given vector (default: along axis 0) and metadata."""
    return VectorRecord(
        vector=list(vector if vector is not None else unit(0)),
        document_id=document_id,
        chunk=Chunk(
            content=TextBlock(text=text if text is not None else f"{document_id}#{chunk_index}"),
            source=source if source is not None else f"{document_id}.txt",
            chunk_index=chunk_index,
            total_chunks=total,
            metadata=metadata,
        ),
    )


async def batches(*groups: list[VectorRecord]) -> AsyncIterator[list[VectorRecord]]:
    """The groups as an async iterable of batches."""
    for group in groups:
        await asyncio.sleep(0)
        yield group


async def failing_after(*groups: list[VectorRecord]) -> AsyncIterator[list[VectorRecord]]:
    """The groups, then a RuntimeError, as a batch source that breaks mid-document."""
    for group in groups:
        yield group
    raise RuntimeError("embedding service went away")


def texts(chunks: Sequence[Chunk]) -> list[str]:
    """The text of each (text) chunk."""
    return [chunk.content.text for chunk in chunks if isinstance(chunk.content, TextBlock)]


async def document_texts(
    store: VectorStoreBase,
    collection: str,
    document_id: str,
    metadata_filter: MetadataFilter | None = None,
) -> list[str]:
    """The texts of `document_id`'s stored chunks in chunk order, read through `search` (so
    stores without chunk listing can be checked too)."""
    hits = await store.search(collection, unit(0), 1000, metadata_filter)
    chunks = sorted(
        (hit.chunk for hit in hits if hit.document_id == document_id),
        key=lambda chunk: (chunk.chunk_index, texts([chunk])),
    )
    return texts(chunks)


def declared(capabilities: StoreCapabilities) -> set[str]:
    """The names of the capabilities declared ("search_modes" when more than dense)."""
    names = {name for name, value in capabilities if value is True}
    if capabilities.search_modes != {"dense"}:
        names.add("search_modes")
    return names


class StoreTests:
    """What every mixin shares: the `docs` collection. Subclasses provide the `store` fixture."""

    capability: ClassVar[str | None] = None
    """The `StoreCapabilities` field the mixin tests (None: the core contract)."""

    @pytest.fixture
    async def docs(self, store: VectorStoreBase) -> str:
        """An empty collection of DIMENSIONS-d vectors."""
        await store.create_collection("docs", DIMENSIONS)
        return "docs"


class CollectionTests(StoreTests):
    """Creating, checking and dropping collections."""

    async def test_created_collection_exists_with_its_dimensions(
        self, store: VectorStoreBase
    ) -> None:
        assert not await store.has_collection("fresh")
        assert await store.collection_dimensions("fresh") is None
        await store.create_collection("fresh", 7)
        assert await store.has_collection("fresh")
        assert await store.collection_dimensions("fresh") == 7

    async def test_creating_an_existing_collection_again_keeps_its_data(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("a", 0)])
        await store.create_collection(docs, DIMENSIONS)
        assert [summary.document_id for summary in await store.list_documents(docs)] == ["a"]

    async def test_creating_an_existing_collection_with_other_dimensions_fails(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        with pytest.raises(ValueError, match="dimensions"):
            await store.create_collection(docs, DIMENSIONS + 1)
        assert await store.collection_dimensions(docs) == DIMENSIONS

    async def test_deleted_collection_is_gone_with_its_data(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("a", 0)])
        await store.delete_collection(docs)
        assert not await store.has_collection(docs)
        await store.create_collection(docs, DIMENSIONS)
        assert await store.list_documents(docs) == []

    async def test_deleting_a_missing_collection_does_nothing(self, store: VectorStoreBase) -> None:
        await store.delete_collection("never-made")
        await store.delete_collection("never-made")
        assert not await store.has_collection("never-made")

    @pytest.mark.parametrize("name", ["", 3])
    async def test_unsafe_collection_names_are_rejected(
        self, store: VectorStoreBase, name: Any
    ) -> None:
        with pytest.raises(ValueError, match="collection name"):
            await store.create_collection(name, DIMENSIONS)

    @pytest.mark.parametrize("dimensions", [0, -3, 2.5, True])
    async def test_bad_dimensions_are_rejected(
        self, store: VectorStoreBase, dimensions: Any
    ) -> None:
        with pytest.raises(ValueError, match="dimensions"):
            await store.create_collection("odd", dimensions)
        assert not await store.has_collection("odd")

    async def test_concurrent_creation_creates_the_collection_once(
        self, store: VectorStoreBase
    ) -> None:
        async def create_then_write(document_id: str) -> None:
            await store.create_collection("raced", DIMENSIONS)
            await store.insert("raced", [record(document_id, 0)])

        await asyncio.gather(*(create_then_write(f"d{n}") for n in range(12)))
        summaries = await store.list_documents("raced")
        assert sorted(summary.document_id for summary in summaries) == sorted(
            f"d{n}" for n in range(12)
        )


class WriteTests(StoreTests):
    """Inserting, listing documents and deleting whole documents."""

    async def test_data_block_chunks_round_trip(self, store: VectorStoreBase, docs: str) -> None:
        inline = DataBlock(
            source=Base64Source(data="iVBORw0KGgo=", media_type="image/png"), name="p"
        )
        linked = DataBlock(
            source=URLSource(url="https://example.org/a.jpg", media_type="image/jpeg")
        )
        images = [
            VectorRecord(
                vector=unit(axis),
                document_id="deck",
                chunk=Chunk(content=block, source="deck.pptx", chunk_index=axis, total_chunks=2),
            )
            for axis, block in enumerate([inline, linked])
        ]
        await store.insert(docs, images)
        for image in images:
            [hit] = await store.search(docs, image.vector, top_k=1)
            assert hit.chunk == image.chunk

    async def test_empty_insert_does_nothing(self, store: VectorStoreBase, docs: str) -> None:
        await store.insert(docs, [])
        await store.insert("never-made", [])
        assert await store.list_documents(docs) == []
        assert not await store.has_collection("never-made")

    async def test_insert_into_a_missing_collection_fails(self, store: VectorStoreBase) -> None:
        with pytest.raises(ValueError, match="never-made"):
            await store.insert("never-made", [record("a", 0)])

    @pytest.mark.parametrize(
        "bad_vector",
        [[1.0, 0.0, 0.0], [1.0] * (DIMENSIONS + 1), [math.nan, 0, 0, 0], [0, math.inf, 0, 0]],
    )
    async def test_an_invalid_vector_rejects_the_whole_batch(
        self, store: VectorStoreBase, docs: str, bad_vector: list[float]
    ) -> None:
        await store.insert(docs, [record("kept", 0)])
        batch = [record("new", 0), record("new", 1, bad_vector), record("new", 2)]
        with pytest.raises(ValueError, match=r"records\[1\].*'new'"):
            await store.insert(docs, batch)
        assert [summary.document_id for summary in await store.list_documents(docs)] == ["kept"]

    async def test_delete_removes_every_chunk_of_the_document_only(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("gone", n) for n in range(3)] + [record("kept", 0)])
        await store.delete(docs, "gone")
        assert [summary.document_id for summary in await store.list_documents(docs)] == ["kept"]
        assert await document_texts(store, docs, "gone") == []

    async def test_listing_after_deleting_one_of_several_multi_chunk_documents(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs, [record("a", n) for n in range(3)] + [record("b", n) for n in range(2)]
        )
        await store.delete(docs, "a")
        [summary] = await store.list_documents(docs)
        assert (summary.document_id, summary.chunk_count) == ("b", 2)

    async def test_deleting_what_is_not_there_does_nothing(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("kept", 0)])
        await store.delete(docs, "never-written")
        await store.delete("never-made", "x")
        assert len(await store.list_documents(docs)) == 1

    async def test_list_documents_counts_chunks_and_summarises_from_chunk_zero(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs,
            [
                record("manual", 2, source="manual-v2.pdf", page=3),
                record("manual", 0, source="manual.pdf", page=1),
                record("manual", 1, source="manual.pdf", page=2),
                record("note", 0, total=1, source="note.md"),
            ],
        )
        summaries = {summary.document_id: summary for summary in await store.list_documents(docs)}
        assert set(summaries) == {"manual", "note"}
        assert summaries["manual"].chunk_count == 3
        assert summaries["manual"].source == "manual.pdf"
        assert summaries["manual"].metadata == {"page": 1}
        assert summaries["note"].chunk_count == 1
        assert summaries["note"].source == "note.md"

    async def test_list_documents_within_a_filter(self, store: VectorStoreBase, docs: str) -> None:
        await store.insert(
            docs,
            [record("a1", 0, tenant="a"), record("a1", 1, tenant="a"), record("b1", 0, tenant="b")],
        )
        [summary] = await store.list_documents(docs, metadata_filter={"tenant": "a"})
        assert (summary.document_id, summary.chunk_count) == ("a1", 2)
        assert await store.list_documents("never-made") == []

    async def test_one_documents_summary_agrees_with_the_listing(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs,
            [
                record("manual", 1, source="manual.pdf", page=2, tenant="a"),
                record("manual", 0, source="manual.pdf", page=1, tenant="a"),
                record("note", 0, total=1, source="note.md", tenant="a"),
            ],
        )
        await store.insert(docs, [record("manual", 0, source="other.pdf", page=9, tenant="b")])
        within = {"tenant": "a"}
        summary = await store.document_summary(docs, "manual", within)
        listed = {s.document_id: s for s in await store.list_documents(docs, within)}
        assert summary == listed["manual"]
        assert summary is not None and summary.chunk_count == 2
        assert summary.metadata == {"page": 1, "tenant": "a"}
        assert await store.document_summary(docs, "note", {"tenant": "b"}) is None
        assert await store.document_summary(docs, "absent") is None
        assert await store.document_summary("never-made", "manual") is None


class DenseSearchTests(StoreTests):
    """Dense search by vector within a metadata filter, with the argument checks."""

    async def test_search_ranks_by_similarity_best_first(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs,
            [
                record("far", 0, unit(2)),
                record("near", 0, unit(0, 0.1)),
                record("middle", 0, unit(0, 1.0)),
            ],
        )
        results = await store.search(docs, unit(0), top_k=3)
        assert [result.document_id for result in results] == ["near", "middle", "far"]
        scores = [result.score for result in results]
        assert scores[0] > scores[1] > scores[2]

    async def test_searches_rank_alike_during_and_after_a_bulk_load(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("far", 0, unit(2)), record("middle", 0, unit(0, 1.0))])
        expected = ["near", "middle", "far"]
        async with store.bulk_load(docs):
            await store.insert(docs, [record("near", 0, unit(0, 0.1))])
            during = await store.search(docs, unit(0), top_k=3)
            assert [result.document_id for result in during] == expected
        after = await store.search(docs, unit(0), top_k=3)
        assert [result.document_id for result in after] == expected
        await store.end_bulk_load(docs)  # a second end does no harm

    async def test_top_k_caps_the_results(self, store: VectorStoreBase, docs: str) -> None:
        await store.insert(docs, [record("d", n, unit(n % DIMENSIONS, n / 10)) for n in range(9)])
        assert len(await store.search(docs, unit(0), top_k=4)) == 4
        assert len(await store.search(docs, unit(0), top_k=50)) == 9

    @pytest.mark.parametrize("top_k", [0, -1, 1.5, True])
    async def test_bad_top_k_is_rejected(
        self, store: VectorStoreBase, docs: str, top_k: Any
    ) -> None:
        with pytest.raises(ValueError, match="top_k"):
            await store.search(docs, unit(0), top_k=top_k)

    async def test_query_vector_of_wrong_size_or_not_finite_is_rejected(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("a", 0)])
        for bad in ([1.0, 0.0], [math.nan, 0.0, 0.0, 0.0], [math.inf, 0.0, 0.0, 0.0]):
            with pytest.raises(ValueError, match="query_vector"):
                await store.search(docs, bad)

    async def test_search_of_a_missing_collection_finds_nothing(
        self, store: VectorStoreBase
    ) -> None:
        assert await store.search("never-made", unit(0)) == []

    async def test_a_found_chunk_is_the_chunk_that_was_stored(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        stored = record("a", 1, total=4, source="guide.pdf", page=2, tags=["x", "y"], note=None)
        await store.insert(docs, [stored])
        [found] = await store.search(docs, stored.vector, top_k=1)
        assert found.document_id == "a"
        assert found.chunk == stored.chunk

    async def test_filters_are_type_strict(self, store: VectorStoreBase, docs: str) -> None:
        await store.insert(
            docs,
            [
                record("text-one", 0, kind="1"),
                record("int-one", 0, kind=1),
                record("true", 0, kind=True),
                record("int-zero", 0, kind=0),
                record("false", 0, kind=False),
            ],
        )

        async def found(value: str | int | bool) -> list[str]:
            results = await store.search(docs, unit(0), top_k=10, metadata_filter={"kind": value})
            return sorted(result.document_id for result in results)

        assert await found("1") == ["text-one"]
        assert await found(1) == ["int-one"]
        assert await found(True) == ["true"]
        assert await found(0) == ["int-zero"]
        assert await found(False) == ["false"]

    async def test_all_filter_keys_must_match(self, store: VectorStoreBase, docs: str) -> None:
        await store.insert(
            docs,
            [
                record("both", 0, tenant="a", lang="en"),
                record("tenant-only", 0, tenant="a", lang="fr"),
                record("lang-only", 0, tenant="b", lang="en"),
            ],
        )
        results = await store.search(docs, unit(0), metadata_filter={"tenant": "a", "lang": "en"})
        assert [result.document_id for result in results] == ["both"]
        assert await store.search(docs, unit(0), metadata_filter={"missing": "x"}) == []

    async def test_filter_keys_with_dots_are_literal_keys(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs,
            [record("dotted", 0, **{"a.b": "x"}), record("nested", 0, a={"b": "x"})],  # type: ignore[arg-type]
        )
        results = await store.search(docs, unit(0), metadata_filter={"a.b": "x"})
        assert [result.document_id for result in results] == ["dotted"]

    async def test_filter_is_applied_before_top_k(self, store: VectorStoreBase, docs: str) -> None:
        close = [record("a", n, unit(0, n / 100), tenant="a") for n in range(6)]
        await store.insert(docs, [*close, record("b", 0, unit(2), tenant="b")])
        [result] = await store.search(docs, unit(0), top_k=1, metadata_filter={"tenant": "b"})
        assert result.document_id == "b"

    @pytest.mark.parametrize("bad_filter", [{"k": 1.5}, {"k": ["a"]}, {"k": {"x": 1}}])
    async def test_unsupported_filter_values_are_rejected_naming_the_key(
        self, store: VectorStoreBase, docs: str, bad_filter: dict[str, Any]
    ) -> None:
        await store.insert(docs, [record("a", 0, k="v")])
        with pytest.raises(ValueError, match="'k'"):
            await store.search(docs, unit(0), metadata_filter=bad_filter)
        with pytest.raises(ValueError, match="'k'"):
            await store.list_documents(docs, metadata_filter=bad_filter)
        assert await document_texts(store, docs, "a") == ["a#0"]

    @pytest.mark.parametrize("bad_key", ["", 7])
    async def test_unsupported_filter_keys_are_rejected(
        self, store: VectorStoreBase, docs: str, bad_key: Any
    ) -> None:
        with pytest.raises(ValueError, match="metadata_filter key"):
            await store.list_documents(docs, metadata_filter={bad_key: "v"})


class ReplaceTests(StoreTests):
    """`replace_document`: the new version whole, or the old one untouched (the base
    class's default passes these)."""

    async def test_replace_document_leaves_no_stale_chunks(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs, [record("d", n, unit(1), total=5, text=f"old {n}") for n in range(5)]
        )
        new = [record("d", n, unit(0), total=2, text=f"new {n}") for n in range(2)]
        written = await store.replace_document(docs, "d", batches(new[:1], new[1:]))
        assert written == 2
        assert await document_texts(store, docs, "d") == ["new 0", "new 1"]
        assert [(s.document_id, s.chunk_count) for s in await store.list_documents(docs)] == [
            ("d", 2)
        ]
        hits = await store.search(docs, unit(1), top_k=10)
        assert sorted(texts([hit.chunk for hit in hits])) == ["new 0", "new 1"]

    async def test_a_failing_batch_source_leaves_the_old_version_whole(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        old = [record("d", n, text=f"old {n}") for n in range(3)]
        await store.insert(docs, old)
        new = [record("d", n, text=f"new {n}") for n in range(2)]
        with pytest.raises(RuntimeError, match="went away"):
            await store.replace_document(docs, "d", failing_after(new[:1], new[1:]))
        assert await document_texts(store, docs, "d") == ["old 0", "old 1", "old 2"]
        assert [s.chunk_count for s in await store.list_documents(docs)] == [3]

    async def test_an_invalid_later_batch_leaves_the_old_version_whole(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("d", n, text=f"old {n}") for n in range(2)])
        good = [record("d", 0, text="new 0")]
        bad = [record("d", 1, [math.nan] * DIMENSIONS, text="new 1")]
        with pytest.raises(ValueError, match="records"):
            await store.replace_document(docs, "d", batches(good, bad))
        assert await document_texts(store, docs, "d") == ["old 0", "old 1"]

    async def test_replace_document_refuses_foreign_records(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("d", 0, text="old")])
        with pytest.raises(ValueError, match="another document"):
            await store.replace_document(docs, "d", batches([record("e", 0)]))
        with pytest.raises(ValueError, match="twice"):
            await store.replace_document(docs, "d", batches([record("d", 0)], [record("d", 0)]))
        assert await document_texts(store, docs, "d") == ["old"]
        assert [s.document_id for s in await store.list_documents(docs)] == ["d"]

    async def test_replace_document_with_nothing_removes_the_document(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("d", 0), record("kept", 0)])
        assert await store.replace_document(docs, "d", batches()) == 0
        assert [summary.document_id for summary in await store.list_documents(docs)] == ["kept"]

    async def test_concurrent_replacements_of_one_document_leave_one_whole_version(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        def version(name: str) -> AsyncIterator[list[VectorRecord]]:
            groups = [[record("d", n, total=6, text=f"{name} {n}")] for n in range(6)]
            return batches(*groups)

        await asyncio.gather(
            store.replace_document(docs, "d", version("first")),
            store.replace_document(docs, "d", version("second")),
        )
        names = {text.split()[0] for text in await document_texts(store, docs, "d")}
        assert len(names) == 1
        assert len(await document_texts(store, docs, "d")) == 6


class ScopedDeleteTests(StoreTests):
    """`scoped_delete`: deletes and replaces within a metadata filter, so tenants share a
    collection."""

    capability = "scoped_delete"

    async def test_the_store_declares_scoped_delete(self, store: VectorStoreBase) -> None:
        assert store.capabilities.scoped_delete, "the store does not declare scoped_delete"

    async def test_delete_with_a_filter_touches_only_matching_chunks(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("x", 0, tenant="a"), record("x", 1, tenant="b")])
        await store.delete(docs, "x", metadata_filter={"tenant": "a"})
        hits = await store.search(docs, unit(0), top_k=10)
        assert [hit.chunk.metadata for hit in hits] == [{"tenant": "b"}]

    @pytest.mark.parametrize("bad_filter", [{"k": 1.5}, {"k": ["a"]}, {"k": {"x": 1}}])
    async def test_a_delete_with_an_unsupported_filter_is_rejected_naming_the_key(
        self, store: VectorStoreBase, docs: str, bad_filter: dict[str, Any]
    ) -> None:
        await store.insert(docs, [record("a", 0, k="v")])
        with pytest.raises(ValueError, match="'k'"):
            await store.delete(docs, "a", metadata_filter=bad_filter)
        assert await document_texts(store, docs, "a") == ["a#0"]

    async def test_a_scoped_replace_refuses_records_outside_the_scope(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("d", 0, tenant="a", text="old")])
        with pytest.raises(ValueError, match="another document"):
            await store.replace_document(
                docs, "d", batches([record("e", 0, tenant="a")]), {"tenant": "a"}
            )
        with pytest.raises(ValueError, match="metadata_filter"):
            await store.replace_document(
                docs, "d", batches([record("d", 0, tenant="b")]), {"tenant": "a"}
            )
        assert await document_texts(store, docs, "d") == ["old"]
        assert await store.list_documents(docs, {"tenant": "b"}) == []

    async def test_tenants_sharing_a_collection_and_a_document_id_stay_apart(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        tenant_a, tenant_b = {"tenant": "a"}, {"tenant": "b"}
        a_chunks = [record("x", n, unit(0), text=f"a {n}", tenant="a") for n in range(3)]
        b_chunks = [record("x", n, unit(0), text=f"b {n}", tenant="b") for n in range(2)]
        await store.replace_document(docs, "x", batches(a_chunks), tenant_a)
        await store.replace_document(docs, "x", batches(b_chunks), tenant_b)

        assert await document_texts(store, docs, "x", tenant_a) == ["a 0", "a 1", "a 2"]
        hits = await store.search(docs, unit(0), top_k=10, metadata_filter=tenant_b)
        assert sorted(texts([hit.chunk for hit in hits])) == ["b 0", "b 1"]
        [summary] = await store.list_documents(docs, tenant_b)
        assert (summary.document_id, summary.chunk_count, summary.metadata) == ("x", 2, tenant_b)

        await store.replace_document(docs, "x", batches(a_chunks[:1]), tenant_a)
        assert await document_texts(store, docs, "x", tenant_b) == ["b 0", "b 1"]
        await store.delete(docs, "x", tenant_a)
        assert await document_texts(store, docs, "x", tenant_a) == []
        assert await document_texts(store, docs, "x", tenant_b) == ["b 0", "b 1"]


class ChunkListingTests(StoreTests):
    """`chunk_listing`: paging through a document's chunks and windows of them."""

    capability = "chunk_listing"

    async def test_the_store_declares_chunk_listing(self, store: VectorStoreBase) -> None:
        assert store.capabilities.chunk_listing, "the store does not declare chunk_listing"

    async def test_list_chunks_in_order_with_offset_and_limit(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        order = [4, 0, 6, 2, 1, 5, 3]
        await store.insert(docs, [record("d", n, total=7) for n in order])
        assert [c.chunk_index for c in await store.list_chunks(docs, "d")] == list(range(7))
        page = await store.list_chunks(docs, "d", offset=2, limit=3)
        assert [chunk.chunk_index for chunk in page] == [2, 3, 4]
        assert texts(page) == ["d#2", "d#3", "d#4"]
        assert [c.chunk_index for c in await store.list_chunks(docs, "d", offset=5)] == [5, 6]
        assert await store.list_chunks(docs, "d", offset=7) == []
        assert await store.list_chunks(docs, "d", limit=0) == []

    async def test_list_chunks_within_a_filter(self, store: VectorStoreBase, docs: str) -> None:
        await store.insert(
            docs, [record("d", 0, lang="en"), record("d", 1, lang="fr"), record("d", 2, lang="en")]
        )
        chunks = await store.list_chunks(docs, "d", metadata_filter={"lang": "en"})
        assert [chunk.chunk_index for chunk in chunks] == [0, 2]

    async def test_chunk_window_gives_the_chunks_between_two_indexes(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs,
            [record("d", n, total=8, lang="en" if n != 4 else "fr") for n in range(8)]
            + [record("e", n, total=8) for n in range(8)],
        )
        window = await store.chunk_window(docs, "d", 2, 5)
        assert [(c.chunk_index, c.source) for c in window] == [(n, "d.txt") for n in (2, 3, 4, 5)]
        assert [c.chunk_index for c in await store.chunk_window(docs, "d", 6, 20)] == [6, 7]
        scoped = await store.chunk_window(docs, "d", 3, 5, metadata_filter={"lang": "en"})
        assert [c.chunk_index for c in scoped] == [3, 5]
        assert await store.chunk_window(docs, "missing", 0, 3) == []

    @pytest.mark.parametrize(("offset", "limit"), [(-1, 5), (0, -1), (1.5, 5), (0, None)])
    async def test_list_chunks_rejects_bad_paging(
        self, store: VectorStoreBase, docs: str, offset: Any, limit: Any
    ) -> None:
        with pytest.raises(ValueError, match=r"offset|limit"):
            await store.list_chunks(docs, "d", offset=offset, limit=limit)

    async def test_data_block_chunks_are_listed_whole(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        inline = DataBlock(
            source=Base64Source(data="iVBORw0KGgo=", media_type="image/png"), name="p"
        )
        linked = DataBlock(
            source=URLSource(url="https://example.org/a.jpg", media_type="image/jpeg")
        )
        await store.insert(
            docs,
            [
                VectorRecord(
                    vector=unit(axis),
                    document_id="deck",
                    chunk=Chunk(
                        content=block, source="deck.pptx", chunk_index=axis, total_chunks=2
                    ),
                )
                for axis, block in enumerate([inline, linked])
            ],
        )
        chunks = await store.list_chunks(docs, "deck")
        assert [chunk.content for chunk in chunks] == [inline, linked]


class AtomicReplaceTests(StoreTests):
    """`atomic_replace`: the new version is written beside the old one, which stays whole and
    readable until the new one is complete."""

    capability = "atomic_replace"

    async def test_the_store_declares_atomic_replace(self, store: VectorStoreBase) -> None:
        assert store.capabilities.atomic_replace, "the store does not declare atomic_replace"

    async def test_readers_see_a_whole_version_throughout_a_replace(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        old = [f"old {n}" for n in range(3)]
        new = [f"new {n}" for n in range(3)]
        await store.insert(docs, [record("d", n, total=3, text=old[n]) for n in range(3)])
        seen: list[list[str]] = []

        async def slowly() -> AsyncIterator[list[VectorRecord]]:
            for n in range(3):
                seen.append(await document_texts(store, docs, "d"))
                yield [record("d", n, total=3, text=new[n])]

        replacing = asyncio.ensure_future(store.replace_document(docs, "d", slowly()))
        while not replacing.done():
            seen.append(await document_texts(store, docs, "d"))
            await asyncio.sleep(0)
        assert await replacing == 3
        for observed in seen:
            assert set(old) <= set(observed) or set(new) <= set(observed), observed
        assert await document_texts(store, docs, "d") == new

    async def test_a_cancelled_replace_leaves_the_old_version(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("d", n, text=f"old {n}") for n in range(3)])
        started = asyncio.Event()

        async def stalls() -> AsyncIterator[list[VectorRecord]]:
            yield [record("d", 0, text="new 0")]
            started.set()
            await asyncio.Event().wait()
            yield [record("d", 1, text="new 1")]

        replacing = asyncio.ensure_future(store.replace_document(docs, "d", stalls()))
        await started.wait()
        await asyncio.sleep(0.05)
        replacing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await replacing
        assert await document_texts(store, docs, "d") == ["old 0", "old 1", "old 2"]


class GenerationTests(StoreTests):
    """`generations`: every write of a document is told apart, for `verify` and `repair`."""

    capability = "generations"

    async def test_the_store_declares_generations(self, store: VectorStoreBase) -> None:
        assert store.capabilities.generations, "the store does not declare generations"

    async def test_a_replaced_document_is_one_whole_generation(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.replace_document(docs, "d", batches([record("d", n) for n in range(3)]))
        [first] = await store.document_generations(docs, document_id="d")
        assert (first.chunk_indexes, first.total_chunks, first.complete) == ([0, 1, 2], [3], True)
        await store.replace_document(docs, "d", batches([record("d", 0, total=1)]))
        [second] = await store.document_generations(docs)
        assert second.generation > first.generation
        assert (second.document_id, second.chunk_indexes) == ("d", [0])

    async def test_generations_are_listed_within_the_filter(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(docs, [record("x", n, tenant="a") for n in range(3)])
        await store.insert(docs, [record("x", 0, total=1, tenant="b")])
        [only] = await store.document_generations(docs, {"tenant": "b"})
        assert (only.document_id, only.chunk_indexes, only.total_chunks) == ("x", [0], [1])
        assert await store.document_generations("never-made") == []

    async def test_repair_keeps_the_newest_complete_version(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        whole = [record("d", n, text=f"whole {n}") for n in range(3)]
        await store.replace_document(docs, "d", batches(whole))
        assert await store.repair_document(docs, "d") == []
        # A second write holding one chunk of two: what an interrupted write leaves.
        await store.insert(docs, [record("d", 0, total=2, text="partial", part="new")])
        assert len(await store.document_generations(docs, document_id="d")) == 2
        [removed] = await store.repair_document(docs, "d")
        assert (removed.chunk_indexes, removed.total_chunks) == ([0], [2])
        [kept] = await store.document_generations(docs, document_id="d")
        assert kept.complete
        assert await document_texts(store, docs, "d") == ["whole 0", "whole 1", "whole 2"]


class RelevanceTests(StoreTests):
    """`relevance`: hits carry a probability of relevance, higher for nearer chunks."""

    capability = "relevance"

    async def test_the_store_declares_relevance(self, store: VectorStoreBase) -> None:
        assert store.capabilities.relevance, "the store does not declare relevance"

    async def test_hits_carry_relevance_ordered_like_similarity(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        await store.insert(
            docs,
            [
                record("near", 0, unit(0), total=1, text="pandas eat bamboo"),
                record("far", 0, unit(2), total=1, text="rockets burn kerosene"),
            ],
        )
        hits = await store.search(docs, unit(0), 2, query_text="pandas bamboo")
        assert [hit.document_id for hit in hits] == ["near", "far"]
        near, far = (hit.relevance for hit in hits)
        assert near is not None and far is not None
        assert 0.0 <= far < near <= 1.0

    async def test_relevance_reads_the_direction_of_the_vectors(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        """Relevance reads the cosine of the vectors' directions: scaling the query vector
        changes neither the hits nor their relevance, in any mode that uses it."""
        await store.insert(
            docs,
            [
                record("long", 0, [3.0, 4.0, 0.0, 0.0], total=1, text="pandas eat bamboo"),
                record("short", 0, [0.1, 0.0, 0.1, 0.0], total=1, text="pandas sleep"),
            ],
        )
        text = "pandas bamboo"
        for mode in await store.search_modes(docs):
            if mode == "sparse":
                continue
            found = [
                [
                    (h.document_id, h.relevance)
                    for h in await store.search(docs, query, 2, query_text=text, mode=mode)
                ]
                for query in ([2.0, 0.0, 0.0, 0.0], [0.01, 0.0, 0.0, 0.0])
            ]
            assert [d for d, _ in found[0]] == [d for d, _ in found[1]], mode
            for (_, big), (_, small) in zip(*found, strict=True):
                assert big is not None and small is not None
                assert big == pytest.approx(small, abs=1e-3), mode

    async def test_relevance_never_rises_down_a_result_list(
        self, store: VectorStoreBase, docs: str
    ) -> None:
        """Hits come best first by what they show: in every mode, over corpora of random
        vectors and texts, relevance never rises from one hit to the next."""
        rng = random.Random(45)
        words = [
            "pandas",
            "bamboo",
            "rocket",
            "kerosene",
            "bread",
            "yeast",
            "port",
            "8731",
            "404",
            "v2.0.11",
            "forest",
        ]
        await store.insert(
            docs,
            [
                record(
                    f"d{n}",
                    0,
                    [rng.uniform(-1, 1) for _ in range(DIMENSIONS)],
                    total=1,
                    text=" ".join(rng.choices(words, k=rng.randint(1, 12))),
                )
                for n in range(60)
            ],
        )
        modes = await store.search_modes(docs)
        for _ in range(20):
            query = [rng.uniform(-1, 1) for _ in range(DIMENSIONS)]
            text = " ".join(rng.choices(words, k=rng.randint(1, 4)))
            for mode in modes:
                hits = await store.search(
                    docs, None if mode == "sparse" else query, 10, query_text=text, mode=mode
                )
                shown = [hit.relevance for hit in hits]
                assert all(value is not None for value in shown), mode
                assert shown == sorted(shown, reverse=True), (mode, text, shown)  # type: ignore[type-var]


class DeclarationTests(StoreTests):
    """The capability mixins a test class combines are exactly the capabilities its store
    declares: nothing declared goes untested, nothing tested is undeclared."""

    async def test_declared_capabilities_are_the_tested_ones(self, store: VectorStoreBase) -> None:
        tested = {
            klass.__dict__["capability"]
            for klass in type(self).__mro__
            if klass.__dict__.get("capability") is not None
        }
        assert declared(store.capabilities) == tested


class VectorStoreConformance(
    CollectionTests,
    WriteTests,
    DenseSearchTests,
    ReplaceTests,
    ScopedDeleteTests,
    ChunkListingTests,
):
    """The core mixins with scoped delete and chunk listing: what a store kept by the
    knowledge base's tenants needs (the suite of earlier releases, kept under its name)."""
