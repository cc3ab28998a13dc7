"""The OpenAI routes through the SDK's `AsyncOpenAI`: the same calls as the sync client,
awaited, with its async pages and poll helpers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from service_helpers import new_key

openai = pytest.importorskip("openai")

POLL = 100


@pytest.fixture
async def oa(service: Any) -> AsyncIterator[Any]:
    """An async client of a tenant of its own."""
    key = new_key(service.settings, f"oa-async-{uuid.uuid4().hex[:8]}")
    async with openai.AsyncOpenAI(
        base_url=f"{service.url}/openai/v1", api_key=key, max_retries=0
    ) as made:
        yield made


async def test_files_and_a_vector_store(oa: Any) -> None:
    data = b"The cafeteria serves soup on Thursdays.\n"
    made = await oa.files.create(file=("menu.txt", data, "text/plain"), purpose="assistants")
    assert made.id.startswith("file-") and made.bytes == len(data)
    assert (await oa.files.content(made.id)).read() == data
    store = await oa.vector_stores.create(name="menu")
    done = await oa.vector_stores.files.create_and_poll(
        made.id, vector_store_id=store.id, attributes={"day": "thu"}, poll_interval_ms=POLL
    )
    assert done.status == "completed" and done.id == made.id
    page = await oa.vector_stores.search(
        store.id, query="when is there soup?", filters={"type": "eq", "key": "day", "value": "thu"}
    )
    assert page.data[0].file_id == made.id and "soup" in page.data[0].content[0].text
    parts = await oa.vector_stores.files.content(made.id, vector_store_id=store.id)
    assert "soup" in " ".join(p.text for p in parts.data)
    assert (await oa.vector_stores.delete(store.id)).deleted
    with pytest.raises(openai.NotFoundError):
        await oa.vector_stores.retrieve(store.id)


async def test_upload_helpers(oa: Any) -> None:
    store = await oa.vector_stores.create(name="helpers")
    one = await oa.vector_stores.files.upload_and_poll(
        vector_store_id=store.id,
        file=(
            "badges.md",
            b"# Badges\n\nLost badges are replaced at reception.\n",
            "text/markdown",
        ),
        poll_interval_ms=POLL,
    )
    assert one.status == "completed"
    files = [(f"room-{n}.txt", f"Meeting room {n} seats {n + 4}.\n".encode()) for n in range(3)]
    batch = await oa.vector_stores.file_batches.upload_and_poll(
        store.id, files=files, poll_interval_ms=POLL
    )
    assert batch.file_counts.completed == 3 and batch.file_counts.in_progress == 0
    listed = [
        f.id
        async for f in oa.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id)
    ]
    assert len(listed) == 3 and one.id not in listed
    counts = (await oa.vector_stores.retrieve(store.id)).file_counts
    assert (counts.completed, counts.total) == (4, 4)
    with pytest.raises(openai.ConflictError):
        await oa.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)


async def test_async_pages_give_every_one_once(oa: Any) -> None:
    stores = [(await oa.vector_stores.create(name=f"vs-{n:02}")).id for n in range(23)]
    assert [vs.id async for vs in oa.vector_stores.list(limit=10)] == stores[::-1]
    files = [
        (await oa.files.create(file=(f"{n}.txt", b"x\n", "text/plain"), purpose="user_data")).id
        for n in range(25)
    ]
    assert [f.id async for f in oa.files.list(limit=10, order="asc")] == files
    first = await oa.files.list(limit=10)
    assert [f.id for f in first.data] == files[::-1][:10] and first.has_more


async def test_errors_are_the_sdks_classes(oa: Any) -> None:
    with pytest.raises(openai.NotFoundError):
        await oa.files.retrieve("file-nothing")
    with pytest.raises(openai.BadRequestError):
        await oa.files.create(file=("a.txt", b"a\n", "text/plain"), purpose="fine-tune")
    store = await oa.vector_stores.create(name="errors")
    with pytest.raises(openai.UnprocessableEntityError):
        await oa.vector_stores.search(store.id, query="x", max_num_results=51)
    with pytest.raises(openai.BadRequestError):
        await oa.vector_stores.search(
            store.id, query="x", filters={"type": "near", "key": "a", "value": 1}
        )
