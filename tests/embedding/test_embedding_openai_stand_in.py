"""OpenAIEmbeddingModel against a local stand-in of the OpenAI `/embeddings` API."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from archivist.credential import OpenAICredential
from archivist.embedding import EmbeddingAPIError, EmbeddingError, OpenAIEmbeddingModel
from fake_clock import FakeClock

VectorFor = Callable[[str, int], list[float]]


def make_model(stand_in, **settings: object) -> OpenAIEmbeddingModel:
    credential = OpenAICredential(
        api_key=settings.pop("api_key", stand_in.api_key),
        base_url=stand_in.base_url,
        organization=settings.pop("organization", None),
    )
    settings.setdefault("retry_base_delay", 0.001)
    settings.setdefault("clock", stand_in.clock)  # type: ignore[attr-defined]
    return OpenAIEmbeddingModel(
        settings.pop("model", "text-embedding-3-small"),
        settings.pop("dimensions", 8),
        credential=credential,
        http_client=stand_in.client(),
        **settings,  # type: ignore[arg-type]
    )


async def test_stand_in_request_shape_and_index_order(
    openai_stand_in, vector_for: VectorFor
) -> None:
    model = make_model(openai_stand_in, dimensions=12, organization="org-1")
    response = await model(["one", "two", "three"])

    (request,) = openai_stand_in.requests
    assert request.url == "http://openai.stand-in/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-stand-in"
    assert request.headers["openai-organization"] == "org-1"
    assert openai_stand_in.bodies[0] == {
        "model": "text-embedding-3-small",
        "input": ["one", "two", "three"],
        "encoding_format": "float",
        "dimensions": 12,
    }
    # The stand-in answers in reverse order; `index` puts the vectors back.
    assert response.embeddings == [vector_for(t, 12) for t in ["one", "two", "three"]]
    assert response.usage.input_tokens == 3


async def test_stand_in_send_dimensions_false_omits_the_field(openai_stand_in) -> None:
    model = make_model(openai_stand_in, send_dimensions=False)
    await model(["a"])
    assert "dimensions" not in openai_stand_in.bodies[0]


async def test_stand_in_batches_split_at_batch_size(openai_stand_in) -> None:
    model = make_model(openai_stand_in, batch_size=4)
    response = await model([f"t{i}" for i in range(10)])
    assert [len(b["input"]) for b in openai_stand_in.bodies] == [4, 4, 2]
    assert len(response.embeddings) == 10


async def test_stand_in_prefixes_follow_input_type(openai_stand_in) -> None:
    model = make_model(openai_stand_in, query_prefix="query: ", document_prefix="passage: ")
    await model(["q"], input_type="query")
    await model(["d"], input_type="document")
    assert [b["input"] for b in openai_stand_in.bodies] == [["query: q"], ["passage: d"]]


async def test_stand_in_retry_after_ms_is_honoured(openai_stand_in, clock: FakeClock) -> None:
    openai_stand_in.replies = [
        httpx.Response(
            429,
            headers={"retry-after-ms": "250"},
            json={"error": {"message": "Rate limit reached", "type": "requests"}},
        )
    ]
    model = make_model(openai_stand_in)
    await model(["a"])
    assert clock.sleeps == [0.25]


async def test_stand_in_insufficient_quota_429_fails_fast(
    openai_stand_in, clock: FakeClock
) -> None:
    """A spent quota is a 429 that no wait cures: one call, no sleep, the provider's words."""
    openai_stand_in.replies = [
        httpx.Response(
            429,
            json={
                "error": {
                    "message": "You exceeded your current quota",
                    "code": "insufficient_quota",
                }
            },
        )
    ]
    model = make_model(openai_stand_in)
    with pytest.raises(EmbeddingAPIError, match="exceeded your current quota") as caught:
        await model(["a"])
    assert caught.value.code == "insufficient_quota"
    assert len(openai_stand_in.requests) == 1
    assert clock.sleeps == []


async def test_stand_in_503_is_retried(openai_stand_in, clock: FakeClock) -> None:
    openai_stand_in.replies = [httpx.Response(503, text="upstream unavailable")]
    model = make_model(openai_stand_in)
    response = await model(["a"])
    assert len(openai_stand_in.requests) == 2
    assert len(response.embeddings) == 1


async def test_stand_in_401_surfaces_the_provider_message(
    openai_stand_in, clock: FakeClock
) -> None:
    model = make_model(openai_stand_in, api_key="sk-wrong")
    with pytest.raises(EmbeddingAPIError, match="Incorrect API key provided") as caught:
        await model(["a"])
    assert (caught.value.status, caught.value.code) == (401, "invalid_api_key")
    assert len(openai_stand_in.requests) == 1
    assert clock.sleeps == []


async def test_stand_in_plain_string_errors_are_surfaced(openai_stand_in) -> None:
    openai_stand_in.replies = [httpx.Response(400, json={"error": "model not loaded"})]
    model = make_model(openai_stand_in)
    with pytest.raises(EmbeddingAPIError, match="model not loaded"):
        await model(["a"])


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (httpx.Response(200, content=b"not json"), "malformed JSON"),
        (httpx.Response(200, json={"object": "list"}), "data is missing"),
        (
            httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.0] * 8}]}),
            "returned 1 vectors for 2 inputs",
        ),
        (
            httpx.Response(
                200,
                json={
                    "data": [
                        {"index": 0, "embedding": [0.0] * 8},
                        {"index": 0, "embedding": [0.0] * 8},
                    ]
                },
            ),
            "index 0 repeats",
        ),
    ],
    ids=["not-json", "no-data", "wrong-count", "repeated-index"],
)
async def test_stand_in_malformed_answers_are_embedding_errors(
    openai_stand_in, reply: httpx.Response, message: str
) -> None:
    openai_stand_in.replies = [reply]
    model = make_model(openai_stand_in)
    with pytest.raises(EmbeddingError, match=message):
        await model(["a", "b"])


def test_base_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1/")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAIEmbeddingModel("nomic-embed-text", 768)
    assert model.endpoint == "http://localhost:11434/v1/embeddings"
    assert model.credential.api_key is None


def test_explicit_base_url_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://from-env/v1")
    model = OpenAIEmbeddingModel("m", 8, base_url="http://explicit:8000/v1")
    assert model.endpoint == "http://explicit:8000/v1/embeddings"


def test_default_base_url_is_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIEmbeddingModel("text-embedding-3-small", 1536)
    assert model.endpoint == "https://api.openai.com/v1/embeddings"


async def test_no_key_sends_no_auth_header(
    openai_stand_in, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAIEmbeddingModel(
        "m", 8, base_url=openai_stand_in.base_url, http_client=openai_stand_in.client()
    )
    with pytest.raises(EmbeddingAPIError):
        await model(["a"])
    assert "authorization" not in openai_stand_in.requests[0].headers
