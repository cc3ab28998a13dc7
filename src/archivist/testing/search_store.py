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
    """`search_filter`: paths, types, since, metadata ranges and `match` conditions, applied
    before ranking."""

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

    async def test_match_eq_compares_type_and_value(self, store: Any) -> None:
        await _attributes(store)
        assert await _matching(store, "n", "eq", 3) == ["float3", "int3"]
        assert await _matching(store, "n", "eq", 3.0) == ["float3", "int3"]
        assert await _matching(store, "n", "eq", 2.5) == ["float2.5"]
        assert await _matching(store, "n", "eq", "3") == ["text3"]
        assert await _matching(store, "n", "eq", True) == ["true"]
        assert await _matching(store, "n", "eq", 1) == ["list"]  # an item of the list
        assert await _matching(store, "n", "eq", 0) == ["zero"]
        assert await _matching(store, "n", "eq", False) == ["false"]
        assert await _matching(store, "color", "eq", "red") == ["float3", "int3"]
        assert await _matching(store, "color", "eq", "Red") == []

    async def test_match_ne_holds_for_other_values_and_absent_keys(self, store: Any) -> None:
        await _attributes(store)
        others = sorted(set(_ATTRIBUTES) - {"int3", "float3"})
        assert await _matching(store, "n", "ne", 3) == others
        assert await _matching(store, "n", "ne", True) == sorted(set(_ATTRIBUTES) - {"true"})
        assert await _matching(store, "n", "ne", 5) == sorted(set(_ATTRIBUTES) - {"list"})
        assert await _matching(store, "missing", "ne", "x") == sorted(_ATTRIBUTES)

    async def test_match_in_and_nin_take_lists_of_mixed_types(self, store: Any) -> None:
        await _attributes(store)
        assert await _matching(store, "n", "in", [3, "3", True]) == [
            "float3",
            "int3",
            "text3",
            "true",
        ]
        assert await _matching(store, "n", "in", ["3"]) == ["text3"]
        assert await _matching(store, "color", "in", ["red", "blue"]) == [
            "float2.5",
            "float3",
            "int3",
        ]
        assert await _matching(store, "n", "nin", [3, "3", False, 0, 5]) == [
            "absent",
            "float2.5",
            "null",
            "true",
        ]

    async def test_match_ranges_compare_numbers_only(self, store: Any) -> None:
        await _attributes(store)
        assert await _matching(store, "n", "gt", 2.5) == ["float3", "int3", "list"]
        assert await _matching(store, "n", "gte", 2.5) == ["float2.5", "float3", "int3", "list"]
        assert await _matching(store, "n", "lt", 1) == ["zero"]
        assert await _matching(store, "n", "lte", 1) == ["list", "zero"]
        assert await _matching(store, "n", "gte", 3) == ["float3", "int3", "list"]
        assert await _matching(store, "n", "lt", 3.0) == ["float2.5", "list", "zero"]
        assert await _matching(store, "missing", "gte", -1e9) == []

    async def test_match_nests_all_and_any(self, store: Any) -> None:
        await _attributes(store)
        either = {
            "any": [
                {"all": [_compare("n", "gte", 2.5), _compare("n", "lt", 3)]},
                _compare("n", "eq", "3"),
                {"all": [_compare("color", "eq", "red"), _compare("n", "ne", 3.0)]},
            ]
        }
        # Each comparison reads a list on its own: [1, 5] has an item >= 2.5 and one < 3.
        assert await _ids(store, {"match": either}) == ["float2.5", "list", "text3"]
        both: dict[str, list[Any]] = {
            "all": [{"any": [_compare("n", "eq", 3), _compare("n", "eq", True)]}]
        }
        both["all"].append({"any": [_compare("color", "nin", ["red"])]})
        assert await _ids(store, {"match": both}) == ["true"]
        assert await _ids(store, {"match": {"all": [_compare("color", "eq", "red")]}}) == [
            "float3",
            "int3",
        ]

    async def test_match_combines_with_the_other_filters(self, store: Any) -> None:
        await _attributes(store)
        within: dict[str, Any] = {"where": {"color": "red"}, "match": _compare("n", "eq", 3.0)}
        assert await _ids(store, within) == ["float3", "int3"]
        within = {"types": ["md"], "match": _compare("n", "gte", 0)}
        assert await _ids(store, within) == ["int3", "zero"]
        hits = await store.search(
            "docs",
            unit(0),
            top_k=20,
            metadata_filter={"color": "red"},
            search_filter=_filter({"match": _compare("n", "ne", 3)}),
        )
        assert hits == []

    async def test_match_applies_before_top_k(self, store: Any) -> None:
        await store.create_collection("docs", DIMENSIONS)
        near = [
            record(f"near{n}", 0, unit(0, 0.01 * n), total=1, text="tar manual", rank=n)
            for n in range(40)
        ]
        far = [
            record(f"far{n}", 0, unit(2, 0.01 * n), total=1, text="tar manual", rank=100 + n)
            for n in range(3)
        ]
        await store.insert("docs", near + far)
        condition = {"match": _compare("rank", "gte", 100)}
        found = await _found_in_every_mode(store, condition, "tar manual", top_k=3)
        for mode, ids in found.items():
            assert ids == ["far0", "far1", "far2"], mode

    async def test_filters_work_in_every_mode(self, store: Any) -> None:
        await _files(store)
        for mode, ids in (await _found_in_every_mode(store, {"types": ["md"]}, "manual")).items():
            assert ids == ["guide", "notes"], mode


_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "int3": {"n": 3, "color": "red"},
    "float3": {"n": 3.0, "color": "red"},
    "float2.5": {"n": 2.5, "color": "blue"},
    "text3": {"n": "3", "color": "green"},
    "true": {"n": True},
    "false": {"n": False},
    "zero": {"n": 0},
    "list": {"n": [1, 5]},
    "null": {"n": None},
    "absent": {},
}
"""Documents (one chunk each) by the chunk metadata matched in the `match` tests."""


async def _attributes(store: Any) -> None:
    """The `_ATTRIBUTES` documents, every dense vector near unit(0); `int3` and `zero` are
    Markdown files."""
    await store.create_collection("docs", DIMENSIONS)
    await store.insert(
        "docs",
        [
            record(
                name,
                0,
                unit(0, 0.05 * number),
                total=1,
                source=f"{name}.md" if name in ("int3", "zero") else f"{name}.txt",
                text=f"attribute manual {number}",
                **metadata,
            )
            for number, (name, metadata) in enumerate(_ATTRIBUTES.items())
        ],
    )


def _compare(key: str, op: str, value: Any) -> dict[str, Any]:
    return {"key": key, "op": op, "value": value}


async def _matching(store: Any, key: str, op: str, value: Any) -> list[str]:
    """The documents matching one comparison, in every search mode alike."""
    condition = {"match": _compare(key, op, value)}
    found = await _found_in_every_mode(store, condition, "attribute manual")
    assert len({tuple(ids) for ids in found.values()}) == 1, (key, op, value, found)
    return found["dense"]


async def _found_in_every_mode(
    store: Any, search_filter: dict[str, Any], query_text: str, top_k: int = 20
) -> dict[str, list[str]]:
    """By search mode: the documents found within `search_filter` near unit(0) and
    `query_text`."""
    return {
        mode: sorted(
            {
                hit.document_id
                for hit in await store.search(
                    "docs",
                    None if mode == "sparse" else unit(0),
                    top_k=top_k,
                    query_text=query_text,
                    mode=mode,
                    search_filter=_filter(search_filter),
                )
            }
        )
        for mode in await store.search_modes("docs")
    }


def _filter(value: dict[str, Any]) -> Any:
    from archivist.rag.store.search_filter import SearchFilter

    return SearchFilter.model_validate(value)
