"""Errors of the OpenAI routes, as the official SDK raises them: OpenAI's error body, each
status its SDK class, and another tenant's objects answering 404 on every route exactly like
ids that never existed."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_helpers import client, new_key, running_service

from archivist.service import ServiceSettings
from archivist.service.quota import Quota

openai = pytest.importorskip("openai")

POLL = 100


def sdk(url: str, key: str) -> Any:
    return openai.OpenAI(base_url=f"{url}/openai/v1", api_key=key, max_retries=0)


def assert_openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """`response` is `status` with OpenAI's error body; its inner error."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str) and error["type"]
    return error


@dataclass
class Owned:
    """One tenant's objects: a file in a vector store, added by a finished batch."""

    store: str
    file: str
    batch: str


@pytest.fixture(scope="module")
def acme(service: Any) -> Any:
    return sdk(service.url, service.keys["acme"])


@pytest.fixture(scope="module")
def globex(service: Any) -> Any:
    return sdk(service.url, service.keys["globex"])


@pytest.fixture(scope="module")
def owned(acme: Any) -> Owned:
    store = acme.vector_stores.create(name=f"secret-{uuid.uuid4().hex[:6]}")
    made = acme.files.create(
        file=("merger.txt", b"Project Bluebird: acme buys globex in March.\n", "text/plain"),
        purpose="assistants",
    )
    batch = acme.vector_stores.file_batches.create_and_poll(
        store.id, file_ids=[made.id], attributes={"secret": True}, poll_interval_ms=POLL
    )
    assert batch.file_counts.completed == 1
    return Owned(store.id, made.id, batch.id)


def every_route(
    oa: Any, store: str, file: str, batch: str, own: str
) -> dict[str, Callable[[], Any]]:
    """A call of every route on `store`, `file` and `batch`; `own` is a File of the caller's."""
    vsf, batches = oa.vector_stores.files, oa.vector_stores.file_batches
    return {
        "files.retrieve": lambda: oa.files.retrieve(file),
        "files.content": lambda: oa.files.content(file).read(),
        "files.delete": lambda: oa.files.delete(file),
        "vs.retrieve": lambda: oa.vector_stores.retrieve(store),
        "vs.update": lambda: oa.vector_stores.update(store, name="mine"),
        "vs.delete": lambda: oa.vector_stores.delete(store),
        "vs.search": lambda: oa.vector_stores.search(store, query="Bluebird"),
        "vs.files.create": lambda: vsf.create(store, file_id=own),
        "vs.files.list": lambda: vsf.list(store),
        "vs.files.retrieve": lambda: vsf.retrieve(file, vector_store_id=store),
        "vs.files.update": lambda: vsf.update(file, vector_store_id=store, attributes={"a": "b"}),
        "vs.files.delete": lambda: vsf.delete(file, vector_store_id=store),
        "vs.files.content": lambda: vsf.content(file, vector_store_id=store),
        "vs.file_batches.create": lambda: batches.create(store, file_ids=[own]),
        "vs.file_batches.retrieve": lambda: batches.retrieve(batch, vector_store_id=store),
        "vs.file_batches.cancel": lambda: batches.cancel(batch, vector_store_id=store),
        "vs.file_batches.list_files": lambda: batches.list_files(batch, vector_store_id=store),
    }


ROUTES = list(
    every_route(openai.OpenAI(api_key="unused", base_url="http://unused"), "", "", "", "")
)


def takes(route: str) -> set[str]:
    """Which ids a call of `route` names: "store", "file", "batch"."""
    if route.startswith("files."):
        return {"file"}
    if route.startswith("vs.file_batches."):
        return {"store", "file"} if route.endswith(".create") else {"store", "batch"}
    if route.startswith("vs.files."):
        return {"store"} if route.endswith(".list") else {"store", "file"}
    return {"store"}


# The error body


def test_errors_have_openais_body(service: Any) -> None:
    base = f"{service.url}/openai/v1"
    with client(base, service.keys["acme"]) as http:
        error = assert_openai_error(http.get("/files/file-nothing"), 404)
        assert "file-nothing" in error["message"]
        assert_openai_error(http.get("/vector_stores/vs_nothing"), 404)
        assert_openai_error(
            http.post(
                "/vector_stores", content=b"{not json", headers={"content-type": "application/json"}
            ),
            422,
        )
    with client(base) as anonymous:
        assert_openai_error(anonymous.get("/files"), 401)
        assert_openai_error(anonymous.get("/vector_stores"), 401)
    with client(base, "ak_not-a-key") as wrong:
        assert_openai_error(wrong.get("/vector_stores"), 401)


def test_the_sdk_reads_the_body(acme: Any) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        acme.vector_stores.retrieve("vs_nothing")
    assert missing.value.status_code == 404 and missing.value.type
    assert "vs_nothing" in missing.value.message
    assert isinstance(missing.value.body, dict) and set(missing.value.body) >= {"message", "type"}


# 401


@pytest.mark.parametrize("key", ["ak_not-a-key", None], ids=["wrong", "none"])
def test_a_missing_or_wrong_key_is_an_authentication_error(service: Any, key: str | None) -> None:
    oa = sdk(service.url, key or "unused")
    # None: the request goes without an Authorization header at all
    unsent = {} if key else {"extra_headers": {"Authorization": openai.Omit()}}
    with pytest.raises(openai.AuthenticationError):
        oa.files.list(**unsent)
    with pytest.raises(openai.AuthenticationError):
        oa.vector_stores.list(**unsent)
    with pytest.raises(openai.AuthenticationError):
        oa.files.create(file=("a.txt", b"a\n", "text/plain"), purpose="assistants", **unsent)
    with pytest.raises(openai.AuthenticationError):
        oa.vector_stores.search("vs_nothing", query="a", **unsent)


# 404


@pytest.mark.parametrize(
    ("route", "unknown"), [(route, what) for route in ROUTES for what in sorted(takes(route))]
)
def test_unknown_ids_are_not_found(acme: Any, owned: Owned, route: str, unknown: str) -> None:
    own = acme.files.create(file=("own.txt", b"own\n", "text/plain"), purpose="assistants").id
    ids = {"store": owned.store, "file": owned.file, "batch": owned.batch, "own": own}
    nothing = {"store": "vs_nothing", "file": "file-nothing", "batch": "vsfb_nothing"}[unknown]
    ids[unknown] = nothing
    if unknown == "file":
        ids["own"] = nothing
    with pytest.raises(openai.NotFoundError):
        every_route(acme, ids["store"], ids["file"], ids["batch"], ids["own"])[route]()
    assert_still_whole(acme, owned)


@pytest.mark.parametrize("route", ROUTES)
def test_another_tenants_ids_are_not_found(
    acme: Any, globex: Any, owned: Owned, route: str
) -> None:
    own = globex.files.create(file=("own.txt", b"own\n", "text/plain"), purpose="assistants").id
    with pytest.raises(openai.NotFoundError):
        every_route(globex, owned.store, owned.file, owned.batch, own)[route]()
    assert_still_whole(acme, owned)


def test_a_stores_files_and_batches_are_not_found_through_another_store(
    acme: Any, owned: Owned
) -> None:
    other = acme.vector_stores.create(name=f"other-{uuid.uuid4().hex[:6]}").id
    own = acme.files.create(file=("own.txt", b"own\n", "text/plain"), purpose="assistants").id
    for route, call in every_route(acme, other, owned.file, owned.batch, own).items():
        if route.startswith("vs.") and takes(route) - {"store"} and not route.endswith("create"):
            with pytest.raises(openai.NotFoundError):
                call()
    assert_still_whole(acme, owned)


def test_another_tenants_file_cannot_be_added_to_a_store(acme: Any, globex: Any) -> None:
    theirs = globex.files.create(
        file=("g.txt", b"globex notes\n", "text/plain"), purpose="assistants"
    )
    mine = acme.vector_stores.create(name=f"mine-{uuid.uuid4().hex[:6]}")
    with pytest.raises(openai.NotFoundError):
        acme.vector_stores.files.create(mine.id, file_id=theirs.id)
    with pytest.raises(openai.NotFoundError):
        acme.vector_stores.file_batches.create(mine.id, file_ids=[theirs.id])
    with pytest.raises(openai.NotFoundError):
        acme.vector_stores.create(name="with-theirs", file_ids=[theirs.id])
    assert acme.vector_stores.retrieve(mine.id).file_counts.total == 0


def test_lists_and_searches_show_only_the_tenants_own(
    service: Any, acme: Any, globex: Any, owned: Owned
) -> None:
    assert owned.file not in {f.id for f in globex.files.list()}
    assert owned.store not in {vs.id for vs in globex.vector_stores.list()}
    theirs = globex.vector_stores.create(name=f"theirs-{uuid.uuid4().hex[:6]}")
    globex.vector_stores.files.upload_and_poll(
        vector_store_id=theirs.id,
        file=("plans.txt", b"Globex plans a picnic in March.\n", "text/plain"),
        poll_interval_ms=POLL,
    )
    hits = globex.vector_stores.search(
        theirs.id, query="Project Bluebird merger", max_num_results=50
    )
    assert owned.file not in {hit.file_id for hit in hits.data}
    assert all("Bluebird" not in part.text for hit in hits.data for part in hit.content)
    acme_kb = acme.vector_stores.retrieve(owned.store).name
    with client(service.url, service.keys["globex"]) as http:
        names = {kb["name"] for kb in http.get("/v1/knowledge-bases").json()["items"]}
        assert acme_kb not in names
        assert http.get(f"/v1/knowledge-bases/{acme_kb}").status_code == 404


def assert_still_whole(acme: Any, owned: Owned) -> None:
    """Nothing of `owned` was changed by the calls that were refused."""
    assert acme.files.retrieve(owned.file).id == owned.file
    store = acme.vector_stores.retrieve(owned.store)
    assert store.name.startswith("secret-") and store.file_counts.completed == 1
    kept = acme.vector_stores.files.retrieve(owned.file, vector_store_id=owned.store)
    assert kept.attributes == {"secret": True}
    batch = acme.vector_stores.file_batches.retrieve(owned.batch, vector_store_id=owned.store)
    assert batch.status == "completed"


# 409, 413, 422


def test_cancelling_a_finished_batch_is_a_conflict(acme: Any, owned: Owned) -> None:
    with pytest.raises(openai.ConflictError):
        acme.vector_stores.file_batches.cancel(owned.batch, vector_store_id=owned.store)


def test_a_file_over_the_upload_limit_is_413(service: Any) -> None:
    oa = sdk(service.url, new_key(service.settings, f"big-{uuid.uuid4().hex[:6]}"))
    big = b"x" * (service.settings.max_upload_bytes + 1)
    with pytest.raises(openai.APIStatusError) as refused:
        oa.files.create(file=("big.txt", big, "text/plain"), purpose="assistants")
    assert refused.value.status_code == 413
    assert not isinstance(refused.value, openai.BadRequestError | openai.UnprocessableEntityError)
    assert set(refused.value.body) == {"message", "type", "param", "code"}
    assert list(oa.files.list()) == []


@pytest.mark.parametrize("count", [0, 51, -1])
def test_max_num_results_outside_1_to_50_is_unprocessable(
    acme: Any, owned: Owned, count: int
) -> None:
    with pytest.raises(openai.UnprocessableEntityError):
        acme.vector_stores.search(owned.store, query="Bluebird", max_num_results=count)


@pytest.mark.parametrize(
    "body",
    [{}, {"query": 5}, {"query": "x", "rewrite_query": "maybe"}],
    ids=["no-query", "int", "bool"],
)
def test_a_body_that_is_not_the_schema_is_unprocessable(
    acme: Any, owned: Owned, body: dict[str, Any]
) -> None:
    with pytest.raises(openai.UnprocessableEntityError):
        acme.post(f"/vector_stores/{owned.store}/search", body=body, cast_to=object)


# 403 and 429 on a service of small limits


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ServiceSettings]]:
    home: Path = tmp_path_factory.mktemp("limited-home")
    settings = ServiceSettings(
        home=home,
        quota=Quota(knowledge_bases=1, storage_bytes=100),
        rate_per_second=1,
        rate_burst=1,
    )
    with running_service(settings) as url:
        yield url, settings


def test_over_a_quota_is_permission_denied(limited: tuple[str, ServiceSettings]) -> None:
    url, settings = limited
    oa = sdk(url, new_key(settings, "small"))
    oa.vector_stores.create(name="one")
    time.sleep(1.2)  # the key's rate is 1 a second
    with pytest.raises(openai.PermissionDeniedError) as refused:
        oa.vector_stores.create(name="two")
    assert "knowledge bases" in refused.value.message
    time.sleep(1.2)
    assert [vs.name for vs in oa.vector_stores.list()] == ["one"]
    time.sleep(1.2)
    with pytest.raises(openai.PermissionDeniedError):
        oa.files.create(file=("big.txt", b"x" * 101, "text/plain"), purpose="assistants")
    time.sleep(1.2)
    assert list(oa.files.list()) == []


def test_over_the_rate_is_rate_limited(limited: tuple[str, ServiceSettings]) -> None:
    url, settings = limited
    oa = sdk(url, new_key(settings, "chatty"))
    with pytest.raises(openai.RateLimitError) as limited_error:
        for _ in range(5):
            oa.files.list()
    assert int(limited_error.value.response.headers["retry-after"]) >= 1
    assert set(limited_error.value.body) >= {"message", "type"}
