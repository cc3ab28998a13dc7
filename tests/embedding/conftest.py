"""Local stand-ins for the providers' embedding APIs, and a fake clock for retry waits.

The stand-ins speak the documented wire formats (DashScope native text and multimodal
embedding, OpenAI `/embeddings`) through `httpx.MockTransport`, so the real HTTP clients
run unchanged against them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from archivist.embedding import LocalEmbeddingModel, OnnxEmbeddingModel
from fake_clock import FakeClock

Reply = httpx.Response | Callable[[httpx.Request], httpx.Response]


def fake_vector(content: str, dimensions: int) -> list[float]:
    """A deterministic unit vector for `content`, so tests can predict every answer."""
    seed = int.from_bytes(hashlib.sha256(content.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return [float(x) for x in vector / np.linalg.norm(vector)]


class StandIn:
    """Records every request; serves queued `replies` first, then the normal answer.
    Models made for it wait on its fake `clock`."""

    api_key = "sk-stand-in"

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.requests: list[httpx.Request] = []
        self.replies: list[Reply] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.replies:
            reply = self.replies.pop(0)
            return reply(request) if callable(reply) else reply
        return self.answer(request)

    def answer(self, request: httpx.Request) -> httpx.Response:
        raise NotImplementedError

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle))


class DashScopeStandIn(StandIn):
    """DashScope's native API: text-embedding and multimodal-embedding services."""

    base_url = "https://dashscope.stand-in/api/v1"
    max_texts = 10

    def answer(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return httpx.Response(
                401,
                json={
                    "code": "InvalidApiKey",
                    "message": "Invalid API-key provided.",
                    "request_id": "req-401",
                },
            )
        body = json.loads(request.content)
        dimension = body.get("parameters", {}).get("dimension", 1024)
        path = request.url.path
        if path.endswith("/services/embeddings/text-embedding/text-embedding"):
            texts = body["input"]["texts"]
            if len(texts) > self.max_texts:
                return httpx.Response(
                    400,
                    json={
                        "code": "InvalidParameter",
                        "message": f"batch size is invalid, it should not be larger than "
                        f"{self.max_texts}.",
                        "request_id": "req-400",
                    },
                )
            entries = [
                {"text_index": i, "embedding": fake_vector(text, dimension)}
                for i, text in enumerate(texts)
            ]
            usage = {"total_tokens": sum(len(t.split()) for t in texts)}
        elif path.endswith("/services/embeddings/multimodal-embedding/multimodal-embedding"):
            entries = []
            for i, content in enumerate(body["input"]["contents"]):
                ((kind, value),) = content.items()
                entries.append(
                    {"index": i, "embedding": fake_vector(value, dimension), "type": kind}
                )
            usage = {"input_tokens": 7 * len(entries), "image_count": 1}
        else:
            return httpx.Response(404, json={"code": "NotFound", "message": "no such path"})
        # The order of entries is not promised: answer in reverse to prove we sort by index.
        return httpx.Response(
            200,
            json={"output": {"embeddings": entries[::-1]}, "usage": usage, "request_id": "r"},
        )


class OpenAIStandIn(StandIn):
    """The OpenAI `/embeddings` wire format."""

    base_url = "http://openai.stand-in/v1"

    def answer(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return httpx.Response(
                401,
                json={
                    "error": {
                        "message": "Incorrect API key provided.",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )
        if request.url.path != "/v1/embeddings":
            return httpx.Response(404, json={"error": {"message": "Not found"}})
        body = json.loads(request.content)
        dimensions = body.get("dimensions", 8)
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, dimensions)}
            for i, text in enumerate(body["input"])
        ]
        tokens = sum(len(t.split()) for t in body["input"])
        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": data[::-1],
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


@pytest.fixture
def dashscope_stand_in(clock: FakeClock) -> DashScopeStandIn:
    return DashScopeStandIn(clock)


@pytest.fixture
def openai_stand_in(clock: FakeClock) -> OpenAIStandIn:
    return OpenAIStandIn(clock)


@pytest.fixture
def clock() -> FakeClock:
    """Records the waits the retry loop asks for instead of sleeping them."""
    return FakeClock()


@pytest.fixture(scope="session")
def default_model() -> Iterator[OnnxEmbeddingModel]:
    """The real offline default model, loaded once for the session."""
    model = LocalEmbeddingModel()
    assert isinstance(model, OnnxEmbeddingModel)
    yield model


@pytest.fixture
def vector_for() -> Callable[[str, int], list[float]]:
    """The stand-ins' deterministic vector for a content string."""
    return fake_vector
