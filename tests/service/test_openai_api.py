"""OpenAI's Files and Vector Stores API under `/openai/v1`, driven by the official `openai`
SDK against a real service: code written for OpenAI's file search runs unchanged, a vector
store is a knowledge base of the native API and a vector store file one of its documents."""

from __future__ import annotations

import os
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from service_helpers import client, new_key, wait_final

from factories import make_pdf

openai = pytest.importorskip("openai")
omit = openai.omit

POLL = 100
"""Milliseconds between the SDK's polls: quick jobs are seen at once."""

NOTES = {
    "leave.md": "# Leave\n\nEvery employee has 30 days of paid annual leave a year.\n",
    "parking.txt": "Parking: the garage under building B opens at 7am; badges open the gate.\n",
    "laptops.txt": "Laptops are replaced every three years; the help desk orders them.\n",
    "travel.md": "# Travel\n\nTrain tickets are booked through the travel office, first class never.\n",
}
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "openai.md"


def sdk(service: Any, key: str) -> Any:
    """The official client on the service's OpenAI routes, without the SDK's retries."""
    return openai.OpenAI(base_url=f"{service.url}/openai/v1", api_key=key, max_retries=0)


def fresh_key(service: Any) -> str:
    """A key of a tenant of its own: nothing of the other tests is in its lists."""
    return new_key(service.settings, f"oa-{uuid.uuid4().hex[:8]}")


@pytest.fixture(scope="module")
def acme(service: Any) -> Any:
    return sdk(service, service.keys["acme"])


def text_file(name: str, text: str) -> tuple[str, bytes, str]:
    return (name, text.encode(), "text/markdown" if name.endswith(".md") else "text/plain")


def store_with_notes(oa: Any, attributes: dict[str, dict[str, Any]] | None = None) -> Any:
    """A vector store holding NOTES, each file indexed (with its attributes, if any)."""
    store = oa.vector_stores.create(name=f"notes-{uuid.uuid4().hex[:6]}")
    for name, text in NOTES.items():
        done = oa.vector_stores.files.upload_and_poll(
            vector_store_id=store.id,
            file=text_file(name, text),
            attributes=(attributes or {}).get(name, omit),
            poll_interval_ms=POLL,
        )
        assert done.status == "completed", done.last_error
    return store


# Files


def test_a_file_round_trips(acme: Any) -> None:
    data = b"Invoices are paid within 30 days.\n"
    made = acme.files.create(file=("invoices.txt", data, "text/plain"), purpose="assistants")
    assert made.id.startswith("file-") and made.object == "file"
    assert (made.filename, made.bytes, made.purpose) == ("invoices.txt", len(data), "assistants")
    assert made.status == "processed" and made.created_at > 0
    got = acme.files.retrieve(made.id)
    assert (got.id, got.filename, got.bytes, got.purpose) == (
        made.id,
        made.filename,
        made.bytes,
        made.purpose,
    )
    assert acme.files.content(made.id).read() == data
    user = acme.files.create(file=("mine.txt", b"user data\n", "text/plain"), purpose="user_data")
    assert user.purpose == "user_data"
    deleted = acme.files.delete(made.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (made.id, "file", True)
    with pytest.raises(openai.NotFoundError):
        acme.files.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        acme.files.content(made.id)


def test_a_file_name_is_reduced_to_a_safe_base_name(acme: Any) -> None:
    made = acme.files.create(
        file=("../../etc/passwd.txt", b"x\n", "text/plain"), purpose="assistants"
    )
    assert made.filename == "passwd.txt"


def test_a_pdf_and_bytes_without_a_name_are_files(acme: Any) -> None:
    pdf = make_pdf(["The fire drill is on the first Monday of each quarter."])
    made = acme.files.create(file=("drill.pdf", pdf, "application/pdf"), purpose="assistants")
    assert made.bytes == len(pdf) and acme.files.content(made.id).read() == pdf
    raw = acme.files.create(file=b"plain bytes\n", purpose="assistants")
    assert raw.filename and acme.files.content(raw.id).read() == b"plain bytes\n"


def test_an_empty_file_is_refused(acme: Any) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        acme.files.create(file=("empty.txt", b"", "text/plain"), purpose="assistants")
    assert refused.value.param == "file"


@pytest.mark.parametrize("purpose", ["fine-tune", "batch", "vision", "nonsense"])
def test_other_purposes_are_refused(acme: Any, purpose: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        acme.files.create(file=("a.txt", b"a\n", "text/plain"), purpose=purpose)
    assert refused.value.param == "purpose"


def test_files_page_newest_first_and_filter_by_purpose(service: Any) -> None:
    oa = sdk(service, fresh_key(service))
    made = [
        oa.files.create(
            file=(f"f{n}.txt", f"file {n}\n".encode(), "text/plain"),
            purpose="user_data" if n % 5 == 0 else "assistants",
        ).id
        for n in range(25)
    ]
    newest_first = [f.id for f in oa.files.list(limit=10)]
    assert newest_first == made[::-1]
    assert [f.id for f in oa.files.list(limit=10, order="asc")] == made
    first = oa.files.list(limit=10)
    assert len(first.data) == 10 and first.has_more and first.has_next_page()
    assert [f.id for f in first.get_next_page().data] == made[::-1][10:20]
    assert [f.id for f in oa.files.list(after=made[20])] == made[:20][::-1]
    user = [f.id for f in oa.files.list(purpose="user_data", limit=2)]
    assert user == [made[n] for n in (20, 15, 10, 5, 0)]
    assert {f.purpose for f in oa.files.list(purpose="assistants")} == {"assistants"}


def test_a_page_goes_on_after_its_last_item_is_deleted(service: Any) -> None:
    oa = sdk(service, fresh_key(service))
    made = [
        oa.files.create(file=(f"g{n}.txt", b"g\n", "text/plain"), purpose="assistants").id
        for n in range(5)
    ]
    first = oa.files.list(limit=2)
    assert [f.id for f in first.data] == [made[4], made[3]]
    oa.files.delete(made[3])  # the cursor of the next page is gone
    assert [f.id for f in first.get_next_page().data] == [made[2], made[1]]


# Vector stores are knowledge bases


def test_a_vector_store_is_a_knowledge_base(service: Any) -> None:
    key = fresh_key(service)
    oa = sdk(service, key)
    with client(service.url, key) as http:
        store = oa.vector_stores.create(name="handbook", metadata={"team": "hr"})
        assert store.id.startswith("vs_") and store.object == "vector_store"
        assert (store.name, store.metadata, store.status) == (
            "handbook",
            {"team": "hr"},
            "completed",
        )
        counts = store.file_counts
        assert (counts.in_progress, counts.completed, counts.failed, counts.total) == (0, 0, 0, 0)
        assert store.usage_bytes == 0
        native = [kb["name"] for kb in http.get("/v1/knowledge-bases").json()["items"]]
        assert native == ["handbook"]

        made = http.post("/v1/knowledge-bases", json={"name": "manuals"})
        assert made.status_code == 201, made.text
        by_name = {vs.name: vs.id for vs in oa.vector_stores.list()}
        assert set(by_name) == {"handbook", "manuals"}
        assert oa.vector_stores.retrieve(by_name["manuals"]).name == "manuals"

        # A name no knowledge base may have, or one taken: the vector store keeps it.
        odd = oa.vector_stores.create(name="Team notes / 2026!")
        again = oa.vector_stores.create(name="handbook")
        assert (odd.name, again.name) == ("Team notes / 2026!", "handbook")
        assert len({odd.id, again.id, store.id}) == 3
        native = [kb["name"] for kb in http.get("/v1/knowledge-bases").json()["items"]]
        assert len(native) == len(set(native)) == 4
        assert sorted(vs.name for vs in oa.vector_stores.list()) == [
            "Team notes / 2026!",
            "handbook",
            "handbook",
            "manuals",
        ]

        updated = oa.vector_stores.update(store.id, name="handbook-2027", metadata={"team": "ops"})
        assert (updated.name, updated.metadata) == ("handbook-2027", {"team": "ops"})
        assert oa.vector_stores.retrieve(store.id).name == "handbook-2027"

        gone = oa.vector_stores.delete(odd.id)
        assert (gone.id, gone.object, gone.deleted) == (odd.id, "vector_store.deleted", True)
        with pytest.raises(openai.NotFoundError):
            oa.vector_stores.retrieve(odd.id)
        assert len(http.get("/v1/knowledge-bases").json()["items"]) == 3

        assert http.delete("/v1/knowledge-bases/manuals").status_code == 204
        with pytest.raises(openai.NotFoundError):
            oa.vector_stores.retrieve(by_name["manuals"])
        assert {vs.id for vs in oa.vector_stores.list()} == {store.id, again.id}


def test_a_vector_store_made_with_files_and_an_expiry(acme: Any) -> None:
    ids = [
        acme.files.create(file=text_file(name, text), purpose="assistants").id
        for name, text in list(NOTES.items())[:2]
    ]
    store = acme.vector_stores.create(
        name=f"with-files-{uuid.uuid4().hex[:6]}",
        file_ids=ids,
        expires_after={"anchor": "last_active_at", "days": 7},
    )
    assert store.file_counts.total == 2
    assert store.expires_after.days == 7 and store.expires_after.anchor == "last_active_at"
    assert store.expires_at == store.last_active_at + 7 * 86400
    for file_id in ids:
        acme.vector_stores.files.poll(file_id, vector_store_id=store.id, poll_interval_ms=POLL)
    done = acme.vector_stores.retrieve(store.id)
    assert (done.status, done.file_counts.completed) == ("completed", 2)
    kept = acme.vector_stores.update(store.id, expires_after=None)
    assert (kept.expires_after, kept.expires_at) == (None, None)
    acme.vector_stores.delete(store.id)
    assert [acme.files.retrieve(file_id).id for file_id in ids] == ids  # the Files stay


def test_documents_uploaded_natively_are_searched_too(service: Any) -> None:
    key = fresh_key(service)
    oa = sdk(service, key)
    with client(service.url, key) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "native"}).status_code == 201
        upload = http.post(
            "/v1/knowledge-bases/native/documents",
            files={"files": ("stapler.txt", b"The red stapler lives on the third floor.\n")},
        )
        assert upload.status_code == 202, upload.text
        [document] = wait_final(http, "native", timeout=60)
    [store] = oa.vector_stores.list()
    assert store.name == "native" and store.file_counts.total == 0  # no File behind it
    hits = oa.vector_stores.search(store.id, query="where is the red stapler?")
    assert [(h.file_id, h.filename) for h in hits.data] == [(document["id"], "stapler.txt")]


def test_vector_stores_made_at_once_under_one_name_are_all_made(service: Any) -> None:
    key = fresh_key(service)
    oa = sdk(service, key)
    with ThreadPoolExecutor(6) as pool:
        made = list(pool.map(lambda _: oa.vector_stores.create(name="same"), range(6)))
    assert [vs.name for vs in made] == ["same"] * 6 and len({vs.id for vs in made}) == 6
    with client(service.url, key) as http:
        native = [kb["name"] for kb in http.get("/v1/knowledge-bases").json()["items"]]
    assert len(native) == len(set(native)) == 6 and "same" in native


def test_vector_stores_page_through_every_one_once(service: Any) -> None:
    oa = sdk(service, fresh_key(service))
    made = [oa.vector_stores.create(name=f"vs-{n:02}").id for n in range(23)]
    assert [vs.id for vs in oa.vector_stores.list(limit=10)] == made[::-1]
    assert [vs.id for vs in oa.vector_stores.list(limit=10, order="asc")] == made
    first = oa.vector_stores.list(limit=10)
    assert len(first.data) == 10 and first.has_more
    last = oa.vector_stores.list(limit=10, after=made[3])
    assert [vs.id for vs in last.data] == made[:3][::-1] and not last.has_more


# Vector store files


def test_a_file_in_a_vector_store_is_a_document(service: Any) -> None:
    key = fresh_key(service)
    oa = sdk(service, key)
    store = oa.vector_stores.create(name="policies")
    text = "The office closes at 6pm on Fridays; the last one out locks the door.\n"
    done = oa.vector_stores.files.upload_and_poll(
        vector_store_id=store.id,
        file=text_file("closing.txt", text),
        attributes={"region": "eu", "year": 2026, "draft": False},
        poll_interval_ms=POLL,
    )
    assert done.object == "vector_store.file" and done.vector_store_id == store.id
    assert done.status == "completed" and done.last_error is None
    assert done.attributes == {"region": "eu", "year": 2026, "draft": False}
    assert done.usage_bytes > 0
    assert oa.files.retrieve(done.id).filename == "closing.txt"  # the id is the File's
    with client(service.url, key) as http:
        documents = http.get("/v1/knowledge-bases/policies/documents").json()["items"]
        assert [d["filename"] for d in documents] == ["closing.txt"]
        assert [d["status"] for d in documents] == ["ready"]

    parts = oa.vector_stores.files.content(done.id, vector_store_id=store.id)
    assert "closes at 6pm" in " ".join(p.text for p in parts)
    assert {p.type for p in parts} == {"text"}

    got = oa.vector_stores.files.retrieve(done.id, vector_store_id=store.id)
    assert (got.id, got.status, got.attributes) == (done.id, "completed", done.attributes)
    changed = oa.vector_stores.files.update(
        done.id, vector_store_id=store.id, attributes={"region": "us", "reviewed": True}
    )
    assert changed.attributes == {"region": "us", "reviewed": True}
    again = oa.vector_stores.files.poll(done.id, vector_store_id=store.id, poll_interval_ms=POLL)
    assert again.status == "completed"
    assert again.attributes == {"region": "us", "reviewed": True}
    for region, found in (("us", [done.id]), ("eu", [])):  # the chunks carry the new ones
        only = {"type": "eq", "key": "region", "value": region}
        hits = oa.vector_stores.search(store.id, query="when does the office close?", filters=only)
        assert [h.file_id for h in hits.data] == found
        assert all(h.attributes == {"region": "us", "reviewed": True} for h in hits.data)

    removed = oa.vector_stores.files.delete(done.id, vector_store_id=store.id)
    assert (removed.id, removed.object, removed.deleted) == (
        done.id,
        "vector_store.file.deleted",
        True,
    )
    with pytest.raises(openai.NotFoundError):
        oa.vector_stores.files.retrieve(done.id, vector_store_id=store.id)
    assert oa.files.retrieve(done.id).id == done.id  # the File stays
    with client(service.url, key) as http:
        assert http.get("/v1/knowledge-bases/policies/documents").json()["items"] == []
    assert list(oa.vector_stores.files.list(store.id)) == []
    assert oa.vector_stores.retrieve(store.id).file_counts.total == 0


def test_failed_files_say_why_and_the_counts_stay_true(acme: Any) -> None:
    store = acme.vector_stores.create(name=f"mixed-{uuid.uuid4().hex[:6]}")
    binary = acme.files.create(
        file=("x.bin", os.urandom(4096), "application/octet-stream"), purpose="assistants"
    )
    mislabelled = acme.files.create(
        file=("memo.pdf", b"Not a PDF at all.\n", "application/pdf"), purpose="assistants"
    )
    pdf = acme.files.create(
        file=("drill.pdf", make_pdf(["The fire drill is on the first Monday."]), "application/pdf"),
        purpose="assistants",
    )
    unsupported = acme.vector_stores.files.create_and_poll(
        binary.id, vector_store_id=store.id, poll_interval_ms=POLL
    )
    assert unsupported.status == "failed" and unsupported.id == binary.id
    assert unsupported.last_error.code == "unsupported_file" and unsupported.last_error.message
    not_pdf = acme.vector_stores.files.create_and_poll(
        mislabelled.id, vector_store_id=store.id, poll_interval_ms=POLL
    )
    assert not_pdf.status == "failed" and not_pdf.last_error.message
    assert not_pdf.last_error.code in {"unsupported_file", "invalid_file"}
    read = acme.vector_stores.files.create_and_poll(
        pdf.id, vector_store_id=store.id, poll_interval_ms=POLL
    )
    assert read.status == "completed", read.last_error

    counts = acme.vector_stores.retrieve(store.id).file_counts
    assert (counts.completed, counts.failed, counts.in_progress, counts.total) == (1, 2, 0, 3)
    assert acme.vector_stores.retrieve(store.id).usage_bytes > 0
    assert {f.id for f in acme.vector_stores.files.list(store.id, filter="failed")} == {
        binary.id,
        mislabelled.id,
    }
    assert [f.id for f in acme.vector_stores.files.list(store.id, filter="completed")] == [pdf.id]
    assert list(acme.vector_stores.files.list(store.id, filter="in_progress")) == []
    hits = acme.vector_stores.search(store.id, query="when is the fire drill?")
    assert hits.data and hits.data[0].file_id == pdf.id and hits.data[0].filename == "drill.pdf"


def test_vector_store_files_page_through_every_one_once(service: Any) -> None:
    oa = sdk(service, fresh_key(service))
    store = oa.vector_stores.create(name="many")
    ids = [
        oa.files.create(
            file=(f"m{n}.txt", f"memo {n}\n".encode(), "text/plain"), purpose="assistants"
        ).id
        for n in range(12)
    ]
    for file_id in ids:
        oa.vector_stores.files.create(store.id, file_id=file_id)
    newest_first = [f.id for f in oa.vector_stores.files.list(store.id, limit=5)]
    assert newest_first == ids[::-1]
    assert [f.id for f in oa.vector_stores.files.list(store.id, limit=5, order="asc")] == ids
    for file_id in ids:
        oa.vector_stores.files.poll(file_id, vector_store_id=store.id, poll_interval_ms=POLL)
    assert oa.vector_stores.retrieve(store.id).file_counts.completed == 12


def test_the_same_content_in_two_files_keeps_each_files_attributes(service: Any) -> None:
    oa = sdk(service, fresh_key(service))
    store = oa.vector_stores.create(name="twins")
    text = "The boiler room is in the basement, behind the blue door.\n"
    first, second = (
        oa.files.create(file=text_file(name, text), purpose="assistants") for name in "ab"
    )
    for made, region in ((first, "eu"), (second, "us")):
        done = oa.vector_stores.files.create_and_poll(
            made.id, vector_store_id=store.id, attributes={"region": region}, poll_interval_ms=POLL
        )
        assert done.status == "completed"
    for made, region in ((first, "eu"), (second, "us")):
        only = {"type": "eq", "key": "region", "value": region}
        hits = oa.vector_stores.search(store.id, query="boiler room", filters=only)
        assert [(h.file_id, h.filename, h.attributes) for h in hits.data] == [
            (made.id, made.filename, {"region": region})
        ]
    oa.vector_stores.files.delete(first.id, vector_store_id=store.id)
    hits = oa.vector_stores.search(store.id, query="boiler room")
    assert [(h.file_id, h.filename) for h in hits.data] == [(second.id, second.filename)]


def test_deleting_a_file_leaves_what_vector_stores_made_of_it(acme: Any) -> None:
    store = acme.vector_stores.create(name=f"kept-{uuid.uuid4().hex[:6]}")
    done = acme.vector_stores.files.upload_and_poll(
        vector_store_id=store.id,
        file=text_file("kept.txt", "The archive room key hangs behind the door.\n"),
        poll_interval_ms=POLL,
    )
    acme.files.delete(done.id)
    with pytest.raises(openai.NotFoundError):
        acme.files.retrieve(done.id)
    kept = acme.vector_stores.files.retrieve(done.id, vector_store_id=store.id)
    assert kept.status == "completed"
    hits = acme.vector_stores.search(store.id, query="where is the archive room key?")
    assert [hit.file_id for hit in hits.data] == [done.id]
    acme.vector_stores.files.delete(done.id, vector_store_id=store.id)
    assert acme.vector_stores.retrieve(store.id).file_counts.total == 0


# Chunking


def test_a_static_chunking_strategy_is_the_knowledge_bases_chunk_size(service: Any) -> None:
    key = fresh_key(service)
    oa = sdk(service, key)
    static = {
        "type": "static",
        "static": {"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 50},
    }
    store = oa.vector_stores.create(name="small-chunks", chunking_strategy=static)
    with client(service.url, key) as http:
        kb = http.get("/v1/knowledge-bases/small-chunks").json()
        assert (kb["chunk_size"], kb["overlap"]) == (200, 50)
    long_text = " ".join(f"Sentence {n} of the long memo about archives." for n in range(200))
    done = oa.vector_stores.files.upload_and_poll(
        vector_store_id=store.id, file=text_file("long.txt", long_text), poll_interval_ms=POLL
    )
    assert done.status == "completed"
    assert done.chunking_strategy.type == "static"
    assert (
        done.chunking_strategy.static.max_chunk_size_tokens,
        done.chunking_strategy.static.chunk_overlap_tokens,
    ) == (200, 50)
    assert len(list(oa.vector_stores.files.content(done.id, vector_store_id=store.id))) >= 1


@pytest.mark.parametrize(
    ("size", "overlap"),
    [(200, 101), (99, 10), (4097, 100), (200, -1)],
    ids=["overlap-over-half", "too-small", "too-large", "negative-overlap"],
)
def test_a_bad_chunking_strategy_is_refused(acme: Any, size: int, overlap: int) -> None:
    strategy = {
        "type": "static",
        "static": {"max_chunk_size_tokens": size, "chunk_overlap_tokens": overlap},
    }
    with pytest.raises(openai.BadRequestError):
        acme.vector_stores.create(name="never", chunking_strategy=strategy)


def test_without_a_strategy_files_report_the_knowledge_bases_sizes(service: Any) -> None:
    key = fresh_key(service)
    oa = sdk(service, key)
    store = oa.vector_stores.create(name="defaults", chunking_strategy={"type": "auto"})
    done = oa.vector_stores.files.upload_and_poll(
        vector_store_id=store.id, file=text_file("a.txt", "A short memo.\n"), poll_interval_ms=POLL
    )
    with client(service.url, key) as http:
        kb = http.get("/v1/knowledge-bases/defaults").json()
    assert done.chunking_strategy.type == "static"
    static = done.chunking_strategy.static
    assert (static.max_chunk_size_tokens, static.chunk_overlap_tokens) == (
        kb["chunk_size"],
        kb["overlap"],
    )
    other = {"type": "static", "static": {"max_chunk_size_tokens": 300, "chunk_overlap_tokens": 10}}
    made = oa.files.create(file=text_file("b.txt", "Another memo.\n"), purpose="assistants")
    with pytest.raises(openai.BadRequestError):  # sizes are the vector store's, not a file's
        oa.vector_stores.files.create(store.id, file_id=made.id, chunking_strategy=other)


# File batches


def test_file_batches(acme: Any) -> None:
    store = acme.vector_stores.create(name=f"batched-{uuid.uuid4().hex[:6]}")
    ids = [
        acme.files.create(file=text_file(name, text), purpose="assistants").id
        for name, text in NOTES.items()
    ]
    batch = acme.vector_stores.file_batches.create(store.id, file_ids=ids[:2])
    assert batch.object == "vector_store.files_batch" and batch.vector_store_id == store.id
    assert batch.file_counts.total == 2
    done = acme.vector_stores.file_batches.poll(
        batch.id, vector_store_id=store.id, poll_interval_ms=POLL
    )
    assert done.id == batch.id and done.status == "completed"
    assert (done.file_counts.completed, done.file_counts.in_progress) == (2, 0)
    assert acme.vector_stores.file_batches.retrieve(batch.id, vector_store_id=store.id).status == (
        "completed"
    )
    listed = acme.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id)
    assert {f.id for f in listed} == set(ids[:2])
    with pytest.raises(openai.ConflictError):
        acme.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)

    attributed = acme.vector_stores.file_batches.create_and_poll(
        store.id, file_ids=ids[2:], attributes={"source": "batch"}, poll_interval_ms=POLL
    )
    assert attributed.file_counts.completed == 2
    for file_id in ids[2:]:
        got = acme.vector_stores.files.retrieve(file_id, vector_store_id=store.id)
        assert got.attributes == {"source": "batch"}
    assert acme.vector_stores.retrieve(store.id).file_counts.completed == 4


def test_a_batch_with_attributes_per_file(acme: Any) -> None:
    store = acme.vector_stores.create(name=f"per-file-{uuid.uuid4().hex[:6]}")
    ids = [
        acme.files.create(file=text_file(name, text), purpose="assistants").id
        for name, text in list(NOTES.items())[:2]
    ]
    done = acme.vector_stores.file_batches.create_and_poll(
        store.id,
        files=[
            {"file_id": ids[0], "attributes": {"n": 0}},
            {"file_id": ids[1], "attributes": {"n": 1}},
        ],
        poll_interval_ms=POLL,
    )
    assert done.file_counts.completed == 2
    assert {f.id: f.attributes for f in acme.vector_stores.files.list(store.id)} == {
        ids[0]: {"n": 0},
        ids[1]: {"n": 1},
    }
    with pytest.raises(openai.BadRequestError):  # one or the other
        acme.vector_stores.file_batches.create(store.id, file_ids=ids, files=[{"file_id": ids[0]}])


def test_cancelling_a_batch_stops_what_is_left(acme: Any) -> None:
    store = acme.vector_stores.create(name=f"cancelled-{uuid.uuid4().hex[:6]}")
    ids = [
        acme.files.create(
            file=text_file(f"c{n}.txt", f"Circular {n}: rule {n} of the archive.\n"),
            purpose="assistants",
        ).id
        for n in range(20)
    ]
    batch = acme.vector_stores.file_batches.create(store.id, file_ids=ids)
    try:
        cancelled = acme.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)
    except openai.ConflictError:
        pytest.skip("the batch finished before it could be cancelled")
    assert cancelled.status == "cancelled" and cancelled.file_counts.in_progress == 0
    counts = cancelled.file_counts
    assert counts.cancelled > 0
    assert counts.cancelled + counts.completed + counts.failed == counts.total == 20
    polled = acme.vector_stores.file_batches.poll(
        batch.id, vector_store_id=store.id, poll_interval_ms=POLL
    )
    assert polled.status == "cancelled"
    statuses = [f.status for f in acme.vector_stores.files.list(store.id, limit=100)]
    assert statuses.count("cancelled") == counts.cancelled and "in_progress" not in statuses
    with pytest.raises(openai.ConflictError):
        acme.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)


def test_file_batches_upload_and_poll(acme: Any) -> None:
    store = acme.vector_stores.create(name=f"uploaded-{uuid.uuid4().hex[:6]}")
    files = [text_file(name, text) for name, text in NOTES.items()]
    done = acme.vector_stores.file_batches.upload_and_poll(
        store.id, files=files, poll_interval_ms=POLL
    )
    assert done.file_counts.completed == len(files) and done.file_counts.in_progress == 0
    names = {
        acme.files.retrieve(f.id).filename
        for f in acme.vector_stores.file_batches.list_files(done.id, vector_store_id=store.id)
    }
    assert names == set(NOTES)


# Search


def test_search_finds_scored_passages(acme: Any) -> None:
    store = store_with_notes(acme)
    page = acme.vector_stores.search(store.id, query="how many days of paid leave?")
    assert page.data and page.search_query
    top = page.data[0]
    assert top.filename == "leave.md" and acme.files.retrieve(top.file_id).filename == "leave.md"
    assert top.content[0].type == "text" and "30 days" in top.content[0].text
    scores = [hit.score for hit in page.data]
    assert all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    assert len(acme.vector_stores.search(store.id, query="leave", max_num_results=1).data) == 1
    both = acme.vector_stores.search(store.id, query=["parking garage", "laptop replacement"])
    assert {"parking.txt", "laptops.txt"} <= {hit.filename for hit in both.data}
    rewritten = acme.vector_stores.search(store.id, query="train tickets", rewrite_query=True)
    assert rewritten.data[0].filename == "travel.md"
    high = max(scores)
    strict = acme.vector_stores.search(
        store.id, query="how many days of paid leave?", ranking_options={"score_threshold": high}
    )
    assert [hit.score for hit in strict.data] and all(h.score >= high for h in strict.data)
    none = acme.vector_stores.search(
        store.id, query="how many days of paid leave?", ranking_options={"score_threshold": 1.0}
    )
    assert all(h.score >= 1.0 for h in none.data)


ATTRIBUTES = {
    "leave.md": {"region": "eu", "year": 2024, "public": True},
    "parking.txt": {"region": "us", "year": 2025, "public": False},
    "laptops.txt": {"region": "eu", "year": 2026, "public": False},
    "travel.md": {"region": "apac", "year": 2026, "public": True},
}


@pytest.fixture(scope="module")
def attributed(acme: Any) -> Any:
    return store_with_notes(acme, ATTRIBUTES)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"type": "eq", "key": "region", "value": "eu"}, {"leave.md", "laptops.txt"}),
        ({"type": "ne", "key": "region", "value": "eu"}, {"parking.txt", "travel.md"}),
        ({"type": "gt", "key": "year", "value": 2025}, {"laptops.txt", "travel.md"}),
        (
            {"type": "gte", "key": "year", "value": 2025},
            {"parking.txt", "laptops.txt", "travel.md"},
        ),
        ({"type": "lt", "key": "year", "value": 2025}, {"leave.md"}),
        ({"type": "lte", "key": "year", "value": 2025}, {"leave.md", "parking.txt"}),
        ({"type": "eq", "key": "public", "value": True}, {"leave.md", "travel.md"}),
        ({"type": "in", "key": "region", "value": ["us", "apac"]}, {"parking.txt", "travel.md"}),
        ({"type": "nin", "key": "region", "value": ["us", "apac"]}, {"leave.md", "laptops.txt"}),
        ({"type": "in", "key": "year", "value": [2024, 2025]}, {"leave.md", "parking.txt"}),
        ({"type": "eq", "key": "owner", "value": "nobody"}, set()),
        (
            {
                "type": "and",
                "filters": [
                    {"type": "eq", "key": "region", "value": "eu"},
                    {"type": "gte", "key": "year", "value": 2025},
                ],
            },
            {"laptops.txt"},
        ),
        (
            {
                "type": "or",
                "filters": [
                    {"type": "eq", "key": "region", "value": "us"},
                    {
                        "type": "and",
                        "filters": [
                            {"type": "eq", "key": "public", "value": True},
                            {"type": "lt", "key": "year", "value": 2025},
                        ],
                    },
                ],
            },
            {"parking.txt", "leave.md"},
        ),
    ],
    ids=[
        "eq",
        "ne",
        "gt",
        "gte",
        "lt",
        "lte",
        "bool",
        "in",
        "nin",
        "in-numbers",
        "no-such-key",
        "and",
        "or-nested",
    ],
)
def test_search_filters_on_attributes(
    acme: Any, attributed: Any, filters: dict[str, Any], expected: set[str]
) -> None:
    page = acme.vector_stores.search(
        attributed.id, query="office rules", filters=filters, max_num_results=50
    )
    assert {hit.filename for hit in page.data} == expected
    for hit in page.data:
        assert hit.attributes == ATTRIBUTES[hit.filename]


@pytest.mark.parametrize(
    "filters",
    [
        {"type": "near", "key": "region", "value": "eu"},
        {"type": "eq", "key": "region"},
        {"type": "eq", "key": "region", "value": {"nested": 1}},
        {"type": "in", "key": "region", "value": "eu"},
        {"type": "and", "filters": "region"},
        {"type": "xor", "filters": [{"type": "eq", "key": "region", "value": "eu"}]},
        {"type": "eq", "key": "the region", "value": "eu"},
    ],
    ids=[
        "unknown-op",
        "no-value",
        "object-value",
        "in-not-a-list",
        "filters-not-a-list",
        "xor",
        "key-char",
    ],
)
def test_a_bad_filter_is_refused(acme: Any, attributed: Any, filters: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError):
        acme.vector_stores.search(attributed.id, query="rules", filters=filters)


@pytest.mark.parametrize(
    "attributes",
    [
        {"has space": "x"},
        {"k" * 65: "x"},
        {f"k{n}": n for n in range(17)},
        {"long": "v" * 513},
        {"nested": {"a": 1}},
        {"list": [1, 2]},
        {"nothing": None},
    ],
    ids=["key-char", "key-long", "17-keys", "value-long", "nested", "list", "null"],
)
def test_bad_attributes_are_refused(acme: Any, attributed: Any, attributes: dict[str, Any]) -> None:
    made = acme.files.create(file=text_file("attr.txt", "attributes\n"), purpose="assistants")
    with pytest.raises(openai.BadRequestError):
        acme.vector_stores.files.create(attributed.id, file_id=made.id, attributes=attributes)
    leave = next(
        f
        for f in acme.vector_stores.files.list(attributed.id)
        if f.attributes == ATTRIBUTES["leave.md"]
    )
    with pytest.raises(openai.BadRequestError):
        acme.vector_stores.files.update(
            leave.id, vector_store_id=attributed.id, attributes=attributes
        )
    kept = acme.vector_stores.files.retrieve(leave.id, vector_store_id=attributed.id)
    assert kept.attributes == ATTRIBUTES["leave.md"]


def test_attributes_at_their_limits_are_kept(acme: Any, attributed: Any) -> None:
    limits: dict[str, Any] = {f"key_{n}-x": n for n in range(15)}
    limits["k" * 64] = "v" * 512
    made = acme.files.create(file=text_file("limits.txt", "limits\n"), purpose="assistants")
    done = acme.vector_stores.files.create_and_poll(
        made.id, vector_store_id=attributed.id, attributes=limits, poll_interval_ms=POLL
    )
    assert done.attributes == limits
    acme.vector_stores.files.delete(made.id, vector_store_id=attributed.id)


# The guide's example


def test_the_guides_example_runs(service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"^```python notest\n(.*?)^```$", GUIDE.read_text(), re.M | re.S)
    assert blocks, "docs/guides/openai.md has no python example"
    monkeypatch.setenv("ARCHIVIST_URL", service.url)
    monkeypatch.setenv("ARCHIVIST_KEY", fresh_key(service))
    printed = StringIO()
    with redirect_stdout(printed):
        exec(compile(blocks[0], str(GUIDE), "exec"), {"__name__": "__main__"})
    assert "leave.md: # Leave" in printed.getvalue(), printed.getvalue()  # the hit's line
