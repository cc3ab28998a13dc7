"""SearchFilter and the `--where` / date parsing: values read as people write them, and bad
values refused with the argument named."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from archivist.rag.store.search_filter import (
    MAX_MATCH_COMPARISONS,
    MAX_MATCH_DEPTH,
    AllOf,
    AnyOf,
    Compare,
    Range,
    SearchFilter,
    parse_where,
)


def test_where_reads_equality_as_json_when_it_parses() -> None:
    assert parse_where(["lang=en", "page=3", "draft=true", 'year="2020"']) == {
        "lang": "en",
        "page": 3,
        "draft": True,
        "year": "2020",
    }


def test_where_combines_bounds_of_one_key() -> None:
    where = parse_where(["pages>=3", "pages<10.5", "modified>2024-05-01"])
    assert where["pages"] == {"gte": 3.0, "lt": 10.5}
    assert where["modified"] == {"gt": datetime(2024, 5, 1, tzinfo=UTC)}
    assert SearchFilter(where=where).where["pages"] == Range(gte=3, lt=10.5)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("lang", "KEY=VALUE"),
        ("=en", "KEY=VALUE"),
        ("pages>=", "KEY=VALUE"),
        ("pages>=many", "neither a number nor a date"),
        ("pages>=nan", "not a usable number"),
    ],
)
def test_bad_where_expressions_name_the_argument(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match="--where") as error:
        parse_where([expression])
    assert message in str(error.value)


def test_a_key_given_twice_or_with_both_forms_is_refused() -> None:
    with pytest.raises(ValueError, match="already given"):
        parse_where(["lang=en", "lang=zh"])
    with pytest.raises(ValueError, match="already given"):
        parse_where(["pages=3", "pages>1"])


def test_since_takes_dates_and_date_times() -> None:
    assert SearchFilter(since="2024-05-01").since == datetime(2024, 5, 1, tzinfo=UTC)  # type: ignore[arg-type]
    offset = SearchFilter(since="2024-05-01T12:00:00+02:00").since  # type: ignore[arg-type]
    assert offset is not None and offset.utcoffset() is not None
    with pytest.raises(ValidationError, match="since"):
        SearchFilter(since="last tuesday")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="since"):
        SearchFilter(since="12")  # type: ignore[arg-type]


def test_types_are_extensions() -> None:
    assert SearchFilter(types=[".MD", "pdf"]).types == ("md", "pdf")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not a file extension"):
        SearchFilter(types=["*.md"])  # type: ignore[arg-type]


def test_bad_paths_keys_and_ranges_are_refused() -> None:
    with pytest.raises(ValidationError, match="path glob"):
        SearchFilter(paths=[""])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="metadata_filter key"):
        SearchFilter(where={'say "hi"': "x"})
    with pytest.raises(ValidationError, match="all numbers or all dates"):
        SearchFilter(where={"x": {"gte": 1, "lt": "2024-01-01"}})  # type: ignore[dict-item]
    with pytest.raises(ValidationError, match="at least one of"):
        SearchFilter(where={"x": {}})  # type: ignore[dict-item]
    with pytest.raises(ValidationError):
        SearchFilter(where={"x": 1.5})


def test_globs_without_a_slash_match_the_file_name() -> None:
    only_md = SearchFilter(paths=["*.md"])  # type: ignore[arg-type]
    assert only_md.path_matches("/a/b/readme.md")
    assert not only_md.path_matches("/a/b.md/readme.txt")
    under = SearchFilter(paths=["share/doc/*"])  # type: ignore[arg-type]
    assert under.path_matches("/usr/share/doc/tar/index.html")
    assert not under.path_matches("/usr/share/man/tar.1")


def test_match_reads_a_nested_condition_tree() -> None:
    within = SearchFilter.model_validate(
        {
            "match": {
                "any": [
                    {"key": "n", "op": "in", "value": ["a", 1, 2.5, True]},
                    {
                        "all": [
                            {"key": "n", "op": "gte", "value": 3},
                            {"key": "m", "op": "ne", "value": False},
                        ]
                    },
                ]
            }
        }
    )
    assert within.match == AnyOf(
        any=(
            Compare(key="n", op="in", value=("a", 1, 2.5, True)),
            AllOf(
                all=(Compare(key="n", op="gte", value=3), Compare(key="m", op="ne", value=False))
            ),
        )
    )
    assert not within.is_empty
    [listed, _] = within.match.any  # type: ignore[union-attr]
    assert [type(v) for v in listed.value] == [str, int, float, bool]  # type: ignore[union-attr]


@pytest.mark.parametrize("key", ["a.b", "tags[0]", "a]", "two words", "tab\t", "", 'q"', "b\\"])
def test_match_refuses_keys_that_are_not_plain_metadata_keys(key: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"match key {key!r} is invalid")):
        SearchFilter(match={"key": key, "op": "eq", "value": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("op", "value", "problem"),
    [
        ("gt", "3", "gt needs a number"),
        ("lte", True, "lte needs a number"),
        ("gte", [1, 2], "gte needs a number"),
        ("in", [], "in needs a non-empty list"),
        ("nin", "x", "nin needs a non-empty list"),
        ("eq", ["x"], "eq needs a single value"),
        ("ne", [1], "ne needs a single value"),
    ],
)
def test_match_refuses_values_the_operator_cannot_take_naming_the_key(
    op: str, value: object, problem: str
) -> None:
    with pytest.raises(ValidationError, match=f"match on 'pages': {problem}"):
        SearchFilter(match={"key": "pages", "op": op, "value": value})  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**63, None, {"x": 1}, [[1]]])
def test_match_refuses_values_that_are_not_scalars(value: object) -> None:
    with pytest.raises(ValidationError, match="is not supported"):
        SearchFilter(match={"key": "k", "op": "in", "value": [value]})  # type: ignore[arg-type]


def test_match_refuses_unknown_operators_fields_and_empty_groups() -> None:
    with pytest.raises(ValidationError, match="'eq', 'ne'"):
        SearchFilter(match={"key": "k", "op": "like", "value": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="Extra inputs"):
        SearchFilter(match={"key": "k", "op": "eq", "value": "x", "type": "eq"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="at least 1 item"):
        SearchFilter(match={"all": []})  # type: ignore[arg-type]


def test_match_nests_at_most_max_depth_groups() -> None:
    condition: dict[str, object] = {"key": "k", "op": "eq", "value": 1}
    for _ in range(MAX_MATCH_DEPTH):
        condition = {"any": [condition]}
    SearchFilter(match=condition)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=f"at most {MAX_MATCH_DEPTH} are allowed"):
        SearchFilter(match={"all": [condition]})  # type: ignore[arg-type]


def test_match_holds_at_most_max_comparisons() -> None:
    def group(size: int) -> dict[str, object]:
        return {"all": [{"key": "k", "op": "ne", "value": n} for n in range(size)]}

    SearchFilter(match={"any": [group(32), group(32)]})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=f"at most {MAX_MATCH_COMPARISONS} are allowed"):
        SearchFilter(match={"any": [group(32), group(33)]})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=f"at most {MAX_MATCH_COMPARISONS} items"):
        SearchFilter(match=group(MAX_MATCH_COMPARISONS + 1))  # type: ignore[arg-type]
