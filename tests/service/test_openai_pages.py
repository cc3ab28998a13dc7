"""Cursor pages of the OpenAI-compatible API: a cursor that names an item deleted meanwhile
never starts the list over."""

from __future__ import annotations

from typing import Any

from service_helpers import client

from archivist.service.openai_schemas import paginate

ITEMS = [{"id": f"id-{n}"} for n in range(1, 6)]  # oldest first; the ids sort as made


def ids(page: dict[str, object]) -> list[str]:
    return [item["id"] for item in page["data"]]  # type: ignore[attr-defined, index]


def test_a_page_goes_on_after_a_known_cursor_in_either_order() -> None:
    assert ids(paginate(ITEMS, after="id-2", before=None, limit=2, order="asc")) == ["id-3", "id-4"]
    newest = paginate(ITEMS, after="id-4", before=None, limit=10, order="desc")
    assert ids(newest) == ["id-3", "id-2", "id-1"] and newest["has_more"] is False
    assert ids(paginate(ITEMS, after=None, before="id-3", limit=10, order="asc")) == [
        "id-1",
        "id-2",
    ]


def test_a_deleted_cursor_is_placed_by_its_id_where_ids_sort_as_made() -> None:
    kept = [item for item in ITEMS if item["id"] != "id-3"]
    page = paginate(kept, after="id-3", before=None, limit=10, order="desc", sorted_ids=True)
    assert ids(page) == ["id-2", "id-1"]
    page = paginate(kept, after="id-3", before=None, limit=10, order="asc", sorted_ids=True)
    assert ids(page) == ["id-4", "id-5"]


def test_elsewhere_an_unknown_cursor_ends_the_list() -> None:
    page = paginate(ITEMS, after="gone", before=None, limit=10, order="desc")
    assert ids(page) == [] and page["has_more"] is False


def test_list_parameters_outside_their_bounds_are_unprocessable(service: Any) -> None:
    with client(service.url, service.keys["initech"]) as http:
        for query in ("limit=101", "limit=0", "order=sideways", f"after={'x' * 65}"):
            answer = http.get(f"/openai/v1/vector_stores?{query}")
            assert answer.status_code == 422, query
            assert answer.json()["error"]["type"] == "invalid_request_error"
        assert http.get("/openai/v1/vector_stores?limit=100&order=asc").status_code == 200
