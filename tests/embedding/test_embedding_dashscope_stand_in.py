"""DashScopeEmbeddingModel against a local stand-in of DashScope's native embedding API."""

from __future__ import annotations

import base64
from collections.abc import Callable

import httpx
import pytest

from archivist.credential import DashScopeCredential
from archivist.embedding import (
    DashScopeEmbeddingModel,
    EmbeddingAPIError,
    EmbeddingError,
    TransientEmbeddingError,
    is_multimodal_model,
)
from archivist.message import Base64Source, DataBlock, TextBlock, URLSource
from fake_clock import FakeClock

VectorFor = Callable[[str, int], list[float]]


def make_model(stand_in: object, **settings: object) -> DashScopeEmbeddingModel:
    credential = DashScopeCredential(
        api_key=settings.pop("api_key", stand_in.api_key),  # type: ignore[attr-defined]
        base_url=stand_in.base_url,  # type: ignore[attr-defined]
    )
    settings.setdefault("retry_base_delay", 0.001)
    settings.setdefault("clock", stand_in.clock)  # type: ignore[attr-defined]
    return DashScopeEmbeddingModel(
        credential,
        http_client=stand_in.client(),  # type: ignore[attr-defined]
        **settings,  # type: ignore[arg-type]
    )


async def test_stand_in_text_request_carries_model_dimension_and_text_type(
    dashscope_stand_in, vector_for: VectorFor
) -> None:
    model = make_model(dashscope_stand_in, model="text-embedding-v4", dimensions=64)
    response = await model(["first", TextBlock(text="second")], input_type="query")

    (request,) = dashscope_stand_in.requests
    assert request.method == "POST"
    assert request.url.path == "/api/v1/services/embeddings/text-embedding/text-embedding"
    assert request.headers["authorization"] == "Bearer sk-stand-in"
    assert dashscope_stand_in.bodies[0] == {
        "model": "text-embedding-v4",
        "input": {"texts": ["first", "second"]},
        "parameters": {"dimension": 64, "text_type": "query", "output_type": "dense"},
    }
    # The stand-in answers in reverse order; text_index puts the vectors back.
    assert response.embeddings == [vector_for("first", 64), vector_for("second", 64)]
    assert response.usage.input_tokens == 2


async def test_stand_in_documents_are_sent_as_document(dashscope_stand_in) -> None:
    model = make_model(dashscope_stand_in)
    await model(["a"])
    assert dashscope_stand_in.bodies[0]["parameters"]["text_type"] == "document"
    assert dashscope_stand_in.bodies[0]["parameters"]["dimension"] == 1024


async def test_stand_in_batches_split_at_ten_texts(
    dashscope_stand_in, vector_for: VectorFor
) -> None:
    model = make_model(dashscope_stand_in, dimensions=16)
    texts = [f"text {i}" for i in range(23)]
    response = await model(texts)
    assert [len(b["input"]["texts"]) for b in dashscope_stand_in.bodies] == [10, 10, 3]
    assert response.embeddings == [vector_for(t, 16) for t in texts]


async def test_stand_in_429_waits_for_retry_after_then_succeeds(
    dashscope_stand_in, clock: FakeClock
) -> None:
    dashscope_stand_in.replies = [
        httpx.Response(
            429,
            headers={"Retry-After": "3"},
            json={"code": "Throttling.RateQuota", "message": "Requests rate limit exceeded"},
        )
    ]
    model = make_model(dashscope_stand_in, dimensions=8)
    response = await model(["a"])
    assert clock.sleeps == [3.0]
    assert len(dashscope_stand_in.requests) == 2
    assert len(response.embeddings) == 1


async def test_stand_in_500_is_retried(dashscope_stand_in, clock: FakeClock) -> None:
    dashscope_stand_in.replies = [
        httpx.Response(500, json={"code": "InternalError", "message": "try again"})
    ]
    model = make_model(dashscope_stand_in, dimensions=8)
    response = await model(["a"])
    assert len(dashscope_stand_in.requests) == 2
    assert len(clock.sleeps) == 1
    assert len(response.embeddings) == 1


async def test_stand_in_timeout_is_retried(dashscope_stand_in, clock: FakeClock) -> None:
    def time_out(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    dashscope_stand_in.replies = [time_out]
    model = make_model(dashscope_stand_in, dimensions=8)
    await model(["a"])
    assert len(dashscope_stand_in.requests) == 2
    assert len(clock.sleeps) == 1


async def test_stand_in_persistent_429_gives_up_after_max_retries(
    dashscope_stand_in, clock: FakeClock
) -> None:
    busy = httpx.Response(429, json={"code": "Throttling", "message": "busy"})
    dashscope_stand_in.replies = [busy] * 10
    model = make_model(dashscope_stand_in, dimensions=8, max_retries=2)
    with pytest.raises(TransientEmbeddingError, match="busy") as caught:
        await model(["a"])
    assert caught.value.status == 429
    assert len(dashscope_stand_in.requests) == 3


async def test_stand_in_401_is_raised_at_once_with_the_provider_message(
    dashscope_stand_in, clock: FakeClock
) -> None:
    model = make_model(dashscope_stand_in, api_key="sk-wrong")
    with pytest.raises(EmbeddingAPIError, match="Invalid API-key provided") as caught:
        await model(["a"])
    assert caught.value.status == 401
    assert caught.value.code == "InvalidApiKey"
    assert len(dashscope_stand_in.requests) == 1
    assert clock.sleeps == []


async def test_stand_in_400_is_raised_at_once(dashscope_stand_in, clock: FakeClock) -> None:
    model = make_model(dashscope_stand_in, batch_size=11)
    with pytest.raises(EmbeddingAPIError, match="should not be larger than 10") as caught:
        await model([str(i) for i in range(11)])
    assert caught.value.code == "InvalidParameter"
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (httpx.Response(200, content=b"<html>gateway</html>"), "malformed JSON"),
        (httpx.Response(200, json={"usage": {}}), "output is missing"),
        (httpx.Response(200, json={"output": {"embeddings": "nope"}}), "not a list"),
        (
            httpx.Response(
                200, json={"output": {"embeddings": [{"text_index": 0, "embedding": [0.1]}]}}
            ),
            "returned 1 vectors for 2 inputs",
        ),
        (
            httpx.Response(
                200,
                json={
                    "output": {
                        "embeddings": [
                            {"text_index": 0, "embedding": ["0.1"] * 8},
                            {"text_index": 1, "embedding": [0.1] * 8},
                        ]
                    }
                },
            ),
            "not a list of numbers",
        ),
    ],
    ids=["not-json", "no-output", "not-a-list", "wrong-count", "strings"],
)
async def test_stand_in_malformed_answers_are_embedding_errors(
    dashscope_stand_in, clock: FakeClock, reply: httpx.Response, message: str
) -> None:
    dashscope_stand_in.replies = [reply]
    model = make_model(dashscope_stand_in, dimensions=8)
    with pytest.raises(EmbeddingError, match=message):
        await model(["a", "b"])
    assert len(dashscope_stand_in.requests) == 1


async def test_stand_in_wrong_dimension_is_an_embedding_error(dashscope_stand_in) -> None:
    model = make_model(dashscope_stand_in, dimensions=8, send_dimension=False)
    with pytest.raises(EmbeddingError, match="1024 dimensions, expected 8"):
        await model(["a"])


@pytest.mark.parametrize(
    "name",
    [
        "multimodal-embedding-v1",
        "tongyi-embedding-vision-plus",
        "tongyi-embedding-vision-flash",
        "qwen3-vl-embedding",
        "qwen2.5-vl-embedding",
    ],
)
def test_multimodal_model_names_are_recognised(name: str) -> None:
    assert is_multimodal_model(name)
    model = DashScopeEmbeddingModel(DashScopeCredential(api_key="k"), model=name)
    assert model.supports_multimodal


@pytest.mark.parametrize("name", ["text-embedding-v4", "text-embedding-v3", "qwen3-embedding"])
def test_text_model_names_are_text_only(name: str) -> None:
    assert not is_multimodal_model(name)


async def test_stand_in_multimodal_model_embeds_a_data_block(
    dashscope_stand_in, vector_for: VectorFor
) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    image = DataBlock(source=Base64Source(data=png, media_type="image/png"), name="fig.png")
    remote = DataBlock(source=URLSource(url="https://example.org/cat.jpg", media_type="image/jpeg"))
    model = make_model(
        dashscope_stand_in, model="tongyi-embedding-vision-plus", dimensions=32, batch_size=3
    )
    response = await model(["a caption", image, remote], input_type="query")

    (request,) = dashscope_stand_in.requests
    assert request.url.path == (
        "/api/v1/services/embeddings/multimodal-embedding/multimodal-embedding"
    )
    data_url = f"data:image/png;base64,{png}"
    assert dashscope_stand_in.bodies[0] == {
        "model": "tongyi-embedding-vision-plus",
        "input": {
            "contents": [
                {"text": "a caption"},
                {"image": data_url},
                {"image": "https://example.org/cat.jpg"},
            ]
        },
        "parameters": {"dimension": 32},
    }
    assert response.embeddings == [
        vector_for("a caption", 32),
        vector_for(data_url, 32),
        vector_for("https://example.org/cat.jpg", 32),
    ]
    assert response.usage.input_tokens == 21


async def test_stand_in_multimodal_v1_sends_one_item_per_request_and_no_dimension(
    dashscope_stand_in,
) -> None:
    image = DataBlock(source=Base64Source(data="AAAA", media_type="image/png"))
    model = make_model(dashscope_stand_in, model="multimodal-embedding-v1")
    response = await model([image, "text"])
    assert [b["input"]["contents"] for b in dashscope_stand_in.bodies] == [
        [{"image": "data:image/png;base64,AAAA"}],
        [{"text": "text"}],
    ]
    assert all(b["parameters"] == {} for b in dashscope_stand_in.bodies)
    assert [len(v) for v in response.embeddings] == [1024, 1024]


async def test_stand_in_text_model_rejects_a_data_block_before_any_request(
    dashscope_stand_in,
) -> None:
    image = DataBlock(source=Base64Source(data="AAAA", media_type="image/png"))
    model = make_model(dashscope_stand_in)
    with pytest.raises(ValueError, match=r"inputs\[1\] is a DataBlock"):
        await model(["a", image])
    assert dashscope_stand_in.requests == []


async def test_stand_in_multimodal_model_rejects_unsupported_media(dashscope_stand_in) -> None:
    audio = DataBlock(source=Base64Source(data="AAAA", media_type="audio/wav"))
    model = make_model(dashscope_stand_in, model="qwen3-vl-embedding")
    with pytest.raises(ValueError, match=r"inputs\[0\].*audio/wav"):
        await model([audio])
    assert dashscope_stand_in.requests == []


async def test_stand_in_multimodal_model_rejects_a_base64_video_before_any_request(
    dashscope_stand_in,
) -> None:
    video = DataBlock(source=Base64Source(data="AAAA", media_type="video/mp4"), name="clip.mp4")
    model = make_model(dashscope_stand_in, model="tongyi-embedding-vision-plus", dimensions=32)
    with pytest.raises(ValueError, match=r"inputs\[1\]: DataBlock clip.mp4 .*video by URL only"):
        await model(["caption", video])
    assert dashscope_stand_in.requests == []


async def test_stand_in_multimodal_model_sends_a_video_url(dashscope_stand_in) -> None:
    url = "https://example.org/clip.mp4"
    video = DataBlock(source=URLSource(url=url, media_type="video/mp4"))
    model = make_model(dashscope_stand_in, model="tongyi-embedding-vision-plus", dimensions=32)
    await model([video])
    assert dashscope_stand_in.bodies[0]["input"]["contents"] == [{"video": url}]


def test_credential_type_is_checked() -> None:
    with pytest.raises(TypeError, match="credential"):
        DashScopeEmbeddingModel("sk-plain-string")  # type: ignore[arg-type]
