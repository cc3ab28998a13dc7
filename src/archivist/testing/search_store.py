"""Conformance mixins for the search capabilities `grouping` and `search_filter`.

`GroupingTests` is for stores declaring `grouping` (`max_per_document` done by the engine or by
paging), `SearchFilterTests` for `search_filter`. A store's test class mixes them in beside the
core mixins of `archivist.testing.store`; they use the same `store` fixture (an entered store,
Cosine distance).
"""

from __future__ import annotations

from typing import Any

from archivist.testing.store import DIMENSIONS, StoreTests, record, unit


async def _one_long_document(store: Any, collection: str = "docs") -> None:
    """`long`: 12 chunks nearest the query unit(0); `d0`..`d5`: one chunk each, further off.

    Neighbouring similarities differ by more than 1e-3, so a store keeping float16 vectors
    orders them as exactly as one keeping float32."""
    await store.create_collection(collection, DIMENSIONS)
    long = [
        record("long", n, unit(0, 0.05 * n), total=12, text=f"tar strip components part {n}")
        for n in range(12)
    ]
    others = [
        record(f"d{n}", 0, unit(0, 0.7 + 0.2 * n), total=1, text=f"tar archive note {n}")
        for n in range(6)
    ]
    await store.insert(collection, long + others)


class GroupingTests(StoreTests):
    """`max_per_document`: at most that many chunks per document, and still `top_k` of them."""

    capability = "grouping"

    async def test_the_store_declares_grouping(self, store: Any) -> None:
        assert store.capabilities.grouping, "the store does not declare grouping"

    async def test_one_per_document_still_fills_top_k(self, store: Any) -> None:
        await _one_long_document(store)
        hits = await store.search("docs", unit(0), top_k=5, max_per_document=1)
        assert [hit.document_id for hit in hits] == ["long", "d0", "d1", "d2", "d3"]
        assert hits[0].chunk.chunk_index == 0

    async def test_a_document_keeps_its_best_chunks_up_to_the_cap(self, store: Any) -> None:
        await _one_long_document(store)
        hits = await store.search("docs", unit(0), top_k=4, max_per_document=2)
        assert [(h.document_id, h.chunk.chunk_index) for h in hits] == [
            ("long", 0),
            ("long", 1),
            ("d0", 0),
            ("d1", 0),
        ]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    async def test_fewer_documents_than_top_k_give_what_there_is(self, store: Any) -> None:
        await _one_long_document(store)
        hits = await store.search("docs", unit(0), top_k=10, max_per_document=1)
        assert sorted(hit.document_id for hit in hits) == sorted(
            ["long", *(f"d{n}" for n in range(6))]
        )

    async def test_grouping_works_in_every_mode(self, store: Any) -> None:
        await _one_long_document(store)
        for mode in await store.search_modes("docs"):
            hits = await store.search(
                "docs",
                None if mode == "sparse" else unit(0),
                top_k=4,
                max_per_document=1,
                query_text="tar strip components",
                mode=mode,
            )
            ids = [hit.document_id for hit in hits]
            assert len(ids) == 4 and len(set(ids)) == 4, (mode, ids)

    async def test_grouping_applies_within_the_metadata_filter(self, store: Any) -> None:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert(
            "docs",
            [record("a", n, unit(0), total=5, tenant="t1") for n in range(5)]
            + [record("b", n, unit(0, 0.1), total=5, tenant="t2") for n in range(5)]
            + [record("c", 0, unit(0, 0.3), total=1, tenant="t1")],
        )
        hits = await store.search(
            "docs", unit(0), top_k=3, metadata_filter={"tenant": "t1"}, max_per_document=1
        )
        assert [hit.document_id for hit in hits] == ["a", "c"]

    async def test_bad_max_per_document_is_rejected_naming_it(self, store: Any) -> None:
        await _one_long_document(store)
        for bad in (0, -1, 1.5, True):
            try:
                await store.search("docs", unit(0), top_k=3, max_per_document=bad)
            except ValueError as error:
                assert "max_per_document" in str(error)
            else:
                raise AssertionError(f"max_per_document={bad!r} was accepted")


async def _files(store: Any, collection: str = "docs") -> None:
    """Six documents with paths, dates and numbers; every dense vector near unit(0)."""
    await store.create_collection(collection, DIMENSIONS)
    files = [
        ("guide", "/docs/guide/intro.md", "2024-01-10T00:00:00+00:00", 3, "en"),
        ("notes", "/docs/notes/todo.MD", "2024-06-01T12:00:00+00:00", 7, "en"),
        ("tar", "/usr/share/man/man1/tar.1", "2025-02-01T00:00:00+00:00", 12, "en"),
        ("report", "/srv/reports/q1.pdf", "2023-03-03T00:00:00+00:00", 40, "zh"),
        ("readme", "/srv/readme.txt", None, 1, "en"),
    ]
    records = []
    for number, (name, path, modified, pages, lang) in enumerate(files):
        metadata: dict[str, Any] = {
            "path": path,
            "pages": pages,
            "lang": lang,
            "indexed_at": "2025-06-01T00:00:00+00:00",
        }
        if modified is not None:
            metadata["modified"] = modified
        records += [
            record(
                name,
                n,
                unit(0, 0.1 * number + 0.01 * n),
                total=2,
                source=path.rsplit("/")[-1],
                text=f"{name} manual part {n}",
                **metadata,
            )
            for n in range(2)
        ]
    # No path metadata: matched by its source alone.
    records.append(record("bare", 0, unit(0, 0.9), total=1, source="bare/loose.rst", lang="en"))
    await store.insert(collection, records)


async def _ids(store: Any, search_filter: Any, top_k: int = 20, **extra: Any) -> list[str]:
    from archivist.rag.store.search_filter import SearchFilter

    hits = await store.search(
        "docs",
        unit(0),
        top_k=top_k,
        search_filter=SearchFilter.model_validate(search_filter),
        **extra,
    )
    return sorted({hit.document_id for hit in hits})


class SearchFilterTests(StoreTests):
    """`search_filter`: paths, types, since and metadata ranges, applied before ranking."""

    capability = "search_filter"

    async def test_the_store_declares_search_filters(self, store: Any) -> None:
        assert store.capabilities.search_filter, "the store does not declare search_filter"

    async def test_path_globs_match_file_names_or_whole_paths(self, store: Any) -> None:
        await _files(store)
        assert await _ids(store, {"paths": ["*.md"]}) == ["guide"]
        assert await _ids(store, {"paths": ["/docs/*"]}) == ["guide", "notes"]
        assert await _ids(store, {"paths": ["man1/*", "*.pdf"]}) == ["report", "tar"]
        assert await _ids(store, {"paths": ["/srv/"]}) == ["readme", "report"]
        assert await _ids(store, {"paths": ["bare/*"]}) == ["bare"]
        assert await _ids(store, {"paths": ["*.nothing"]}) == []

    async def test_types_are_extensions_in_any_case(self, store: Any) -> None:
        await _files(store)
        assert await _ids(store, {"types": ["md"]}) == ["guide", "notes"]
        assert await _ids(store, {"types": [".PDF", "rst"]}) == ["bare", "report"]
        assert await _ids(store, {"types": ["md"], "paths": ["/docs/guide/*"]}) == ["guide"]

    async def test_since_uses_the_modification_time_else_the_index_time(self, store: Any) -> None:
        await _files(store)
        assert await _ids(store, {"since": "2024-05-01"}) == ["notes", "readme", "tar"]
        assert await _ids(store, {"since": "2025-03-01"}) == ["readme"]
        assert await _ids(store, {"since": "2026-01-01T00:00:00+02:00"}) == []

    async def test_where_matches_values_and_ranges(self, store: Any) -> None:
        await _files(store)
        assert await _ids(store, {"where": {"lang": "zh"}}) == ["report"]
        assert await _ids(store, {"where": {"pages": {"gte": 7, "lt": 40}}}) == ["notes", "tar"]
        assert await _ids(store, {"where": {"pages": {"gt": 39.5}, "lang": "zh"}}) == ["report"]
        dated = {"modified": {"lt": "2024-02-01"}}
        assert await _ids(store, {"where": dated}) == ["guide", "report"]
        assert await _ids(store, {"where": {"modified": None}}) == ["bare", "readme"]

    async def test_filters_apply_before_top_k(self, store: Any) -> None:
        await _files(store)
        # `bare` is furthest from the query; filtered to .rst it is still found.
        assert await _ids(store, {"types": ["rst"]}, top_k=1) == ["bare"]
        hits = await store.search(
            "docs",
            unit(0),
            top_k=3,
            max_per_document=1,
            search_filter=_filter({"where": {"lang": "en"}}),
        )
        assert len({hit.document_id for hit in hits}) == 3

    async def test_filters_combine_with_the_metadata_scope(self, store: Any) -> None:
        await _files(store)
        hits = await store.search(
            "docs",
            unit(0),
            top_k=20,
            metadata_filter={"lang": "zh"},
            search_filter=_filter({"types": ["md", "pdf"]}),
        )
        assert {hit.document_id for hit in hits} == {"report"}

    async def test_filters_work_in_every_mode(self, store: Any) -> None:
        await _files(store)
        for mode in await store.search_modes("docs"):
            hits = await store.search(
                "docs",
                None if mode == "sparse" else unit(0),
                top_k=20,
                query_text="manual",
                mode=mode,
                search_filter=_filter({"types": ["md"]}),
            )
            assert {hit.document_id for hit in hits} == {"guide", "notes"}, mode


def _filter(value: dict[str, Any]) -> Any:
    from archivist.rag.store.search_filter import SearchFilter

    return SearchFilter.model_validate(value)
