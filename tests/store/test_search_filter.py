"""SearchFilter and the `--where` / date parsing: values read as people write them, and bad
values refused with the argument named."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from archivist.rag.store.search_filter import Range, SearchFilter, parse_where


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
