"""The one HTTP layer, end to end: the real chat and embedding clients against a real HTTP
server on 127.0.0.1 (retry decisions, Retry-After waits on a fake clock, connection reuse
and closing, a borrowed client, use from several event loops)."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from provider_server import ProviderServer, Scripted, provider_server

from archivist.credential import DashScopeCredential, OpenAICredential
from archivist.embedding import (
    CachedEmbeddingModel,
    DashScopeEmbeddingModel,
    EmbeddingAPIError,
    EmbeddingModelBase,
    OpenAIEmbeddingModel,
)
from archivist.message import Msg
from archivist.model import ChatModelAPIError, ChatModelBase, OpenAIChatModel
from fake_clock import FakeClock

Model = EmbeddingModelBase | ChatModelBase


@dataclass(frozen=True)
class Client:
    """How to build one provider client against the server, and how it words an error."""

    make: Callable[..., Model]
    error_body: Callable[[str, str], Any]


def _openai_error(code: str, message: str) -> Any:
    return {"error": {"message": message, "type": "requests", "code": code}}


def _dashscope_error(code: str, message: str) -> Any:
    return {"code": code, "message": message, "request_id": "req-1"}


def _openai_embedding(server: ProviderServer, **settings: Any) -> Model:
    credential = OpenAICredential(api_key="sk-test", base_url=server.base_url + "/v1")
    return OpenAIEmbeddingModel("text-embedding-3-small", 4, credential=credential, **settings)


def _dashscope_embedding(server: ProviderServer, **settings: Any) -> Model:
    credential = DashScopeCredential(api_key="sk-test", base_url=server.base_url + "/api/v1")
    return DashScopeEmbeddingModel(credential, "text-embedding-v4", 4, **settings)


def _chat(server: ProviderServer, **settings: Any) -> Model:
    return OpenAIChatModel(
        "gpt-test", api_key="sk-test", base_url=server.base_url + "/v1", **settings
    )


CLIENTS = {
    "openai-embedding": Client(_openai_embedding, _openai_error),
    "dashscope-embedding": Client(_dashscope_embedding, _dashscope_error),
    "chat": Client(_chat, _openai_error),
}


async def call(model: Model, *, stream: bool = False) -> None:
    """One request through `model`, checking that its answer arrived whole."""
    if isinstance(model, EmbeddingModelBase):
        response = await model(["hello"])
        assert response.embeddings == [[5.0, 1.0, 0.5, 0.25]]
    elif stream:
        deltas = [d async for d in await model([Msg("user", "hi", "user")], stream=True)]
        assert "".join(d.text for d in deltas if d.text) == "ok"
    else:
        assert (await model([Msg("user", "hi", "user")])).text == "ok"


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with provider_server() as running:
        yield running


@pytest.fixture(params=sorted(CLIENTS))
def client(request: pytest.FixtureRequest) -> Client:
    return CLIENTS[request.param]


@pytest.mark.parametrize("code", ["insufficient_quota", "billing_hard_limit_reached", "Arrearage"])
async def test_a_fail_fast_code_with_status_429_makes_exactly_one_request(
    server: ProviderServer, client: Client, clock: FakeClock, code: str
) -> None:
    server.replies = [Scripted(429, client.error_body(code, "You exceeded your current quota"))]
    model = client.make(server, clock=clock)
    with pytest.raises((EmbeddingAPIError, ChatModelAPIError)) as caught:
        await call(model)
    assert caught.value.code == code
    assert "exceeded your current quota" in str(caught.value)
    assert len(server.paths) == 1
    assert clock.sleeps == []
    await model.aclose()


async def test_a_503_then_success_makes_two_requests(
    server: ProviderServer, client: Client, clock: FakeClock
) -> None:
    server.replies = [Scripted(503, client.error_body("overloaded", "try again later"))]
    model = client.make(server, clock=clock, retry_base_delay=0.5)
    await call(model)
    assert len(server.paths) == 2
    [wait] = clock.sleeps
    assert 0.25 <= wait <= 0.5
    await model.aclose()


async def test_persistent_503_gives_up_after_max_retries_with_a_note(
    server: ProviderServer, client: Client, clock: FakeClock
) -> None:
    server.replies = [Scripted(503, client.error_body("overloaded", "busy"))] * 3
    model = client.make(server, clock=clock, max_retries=2)
    with pytest.raises((EmbeddingAPIError, ChatModelAPIError)) as caught:
        await call(model)
    assert len(server.paths) == 3 and len(clock.sleeps) == 2
    assert any("gave up after 3 attempts" in note for note in caught.value.__notes__)
    await model.aclose()


def _http_date(clock: FakeClock, seconds: float) -> str:
    return email.utils.formatdate(clock.now() + seconds, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (lambda clock: {"Retry-After": "3"}, 3.0),
        (lambda clock: {"retry-after-ms": "250", "Retry-After": "9"}, 0.25),
        (lambda clock: {"Retry-After": _http_date(clock, 42)}, 42.0),
        (lambda clock: {"Retry-After": "1000"}, 60.0),
        (lambda clock: {"Retry-After": _http_date(clock, 1000)}, 60.0),
        (lambda clock: {"Retry-After": _http_date(clock, -30)}, 0.0),
    ],
    ids=["seconds", "milliseconds", "http-date", "capped", "http-date-capped", "date-passed"],
)
async def test_the_servers_retry_after_is_the_wait_capped_at_max_delay(
    server: ProviderServer,
    client: Client,
    clock: FakeClock,
    headers: Callable[[FakeClock], dict[str, str]],
    expected: float,
) -> None:
    body = client.error_body("rate_limit_exceeded", "slow down")
    server.replies = [Scripted(429, body, headers(clock))]
    model = client.make(server, clock=clock, retry_base_delay=100.0, retry_max_delay=60.0)
    await call(model)
    assert clock.sleeps == [expected]
    assert len(server.paths) == 2
    await model.aclose()


async def test_sequential_calls_share_one_connection_until_aclose(
    server: ProviderServer, client: Client, clock: FakeClock
) -> None:
    model = client.make(server, clock=clock)
    for _ in range(4):
        await call(model)
    await call(model, stream=True)
    assert len(server.paths) == 5
    assert server.accepted == 1
    assert server.open_connections() == 1
    await model.aclose()
    assert server.wait_until_closed()
    await call(model)  # a closed model opens a fresh client on its next use
    assert server.accepted == 2
    await model.aclose()


async def test_async_with_closes_the_models_connection(
    server: ProviderServer, client: Client, clock: FakeClock
) -> None:
    async with client.make(server, clock=clock) as model:
        await call(model)
        await call(model)
    assert server.accepted == 1
    assert server.wait_until_closed()


async def test_a_borrowed_client_is_used_and_left_open(
    server: ProviderServer, client: Client, clock: FakeClock
) -> None:
    async with httpx.AsyncClient() as borrowed:
        model = client.make(server, clock=clock, http_client=borrowed)
        await call(model)
        await model.aclose()
        assert not borrowed.is_closed
        await call(model)
        assert server.accepted == 1 and server.open_connections() == 1
    assert server.wait_until_closed()


def test_use_from_two_asyncio_runs_opens_a_client_per_loop(
    server: ProviderServer, client: Client, clock: FakeClock
) -> None:
    model = client.make(server, clock=clock)
    asyncio.run(call(model))
    asyncio.run(call(model))
    assert server.accepted == 2
    asyncio.run(model.aclose())
    # The first loop closed before the second run: its client could only be dropped, and
    # its socket is closed when the garbage collector reclaims it.
    gc.collect()
    assert server.wait_until_closed()


def test_a_client_of_a_loop_still_running_elsewhere_is_closed_on_that_loop(
    server: ProviderServer, client: Client, clock: FakeClock
) -> None:
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:
        model = client.make(server, clock=clock)
        asyncio.run_coroutine_threadsafe(call(model), other).result(timeout=30)
        assert server.accepted == 1

        async def from_this_thread() -> None:
            await call(model)
            assert server.accepted == 2
            assert server.wait_until_closed(count=1)  # the first client, closed on its loop
            assert server.open_connections() == 1
            await model.aclose()

        asyncio.run(from_this_thread())
        assert server.wait_until_closed()
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(timeout=30)
        other.close()


async def test_closing_a_cache_closes_the_wrapped_models_connection(
    server: ProviderServer, clock: FakeClock, tmp_path: Path
) -> None:
    inner = _openai_embedding(server, clock=clock)
    assert isinstance(inner, EmbeddingModelBase)
    async with CachedEmbeddingModel(inner, tmp_path) as cached:
        await call(cached)
        await call(cached)  # served from the cache
    assert len(server.paths) == 1
    assert server.wait_until_closed()
