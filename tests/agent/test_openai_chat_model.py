"""OpenAIChatModel against a local stand-in of the OpenAI chat-completions API."""

from __future__ import annotations

import json

import pytest
from openai_stand_in import OpenAIStandIn, chunk, completion, usage_chunk

from archivist.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)
from archivist.model import (
    ChatDelta,
    ChatModelAPIError,
    ChatModelError,
    ChatModelResponseError,
    ChatResponse,
    OpenAIChatModel,
    accumulate,
)
from fake_clock import FakeClock

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def conversation() -> list[Msg]:
    return [
        Msg("system", "You are terse.", "system"),
        Msg(
            "user",
            [
                TextBlock(text="What is in this picture, and the weather in Paris?"),
                DataBlock(source=Base64Source(data="iVBORw0K", media_type="image/png")),
                DataBlock(
                    source=URLSource(url="https://example.com/cat.jpg", media_type="image/jpeg")
                ),
            ],
            "user",
        ),
        Msg(
            "bot",
            [
                TextBlock(text="Let me check."),
                ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
                ToolUseBlock(id="call_2", name="get_weather", input={"city": "Lyon"}),
            ],
            "assistant",
        ),
        Msg(
            "tool",
            [
                ToolResultBlock(id="call_1", name="get_weather", output="Sunny, 21°C"),
                ToolResultBlock(
                    id="call_2", name="get_weather", output=[TextBlock(text="Rain")], is_error=False
                ),
            ],
            "user",
        ),
        Msg("rag", [HintBlock(hint="Paris is in France.", source="kb")], "user"),
    ]


async def test_request_body_local_stand_in(stand_in: OpenAIStandIn) -> None:
    stand_in.reply_json(completion({"content": "A cat. Sunny in Paris."}))
    model = stand_in.model(generate_kwargs={"temperature": 0.2})

    await model(conversation(), tools=[WEATHER_TOOL], tool_choice="auto")

    (request,) = stand_in.requests
    assert request.method == "POST"
    assert str(request.url) == f"{stand_in.base_url}/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-stand-in"
    body = json.loads(request.content)
    assert body["model"] == "gpt-test"
    assert body["temperature"] == 0.2
    assert body["tools"] == [WEATHER_TOOL]
    assert body["tool_choice"] == "auto"
    assert "stream" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture, and the weather in Paris?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21°C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Rain"},
        {"role": "user", "content": '<hint source="kb">\nParis is in France.\n</hint>'},
    ]


async def test_named_tool_choice_and_no_tools_local_stand_in(stand_in: OpenAIStandIn) -> None:
    stand_in.reply_json(completion({"content": "x"}))
    stand_in.reply_json(completion({"content": "y"}))
    model = stand_in.model()

    await model([Msg("u", "hi", "user")], tools=[WEATHER_TOOL], tool_choice="get_weather")
    await model([Msg("u", "hi", "user")], tools=None, tool_choice="none")

    named, bare = stand_in.bodies()
    assert named["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    # tool_choice without tools is rejected by the API, so it is left out.
    assert "tools" not in bare and "tool_choice" not in bare


async def test_text_and_parallel_tool_calls_are_parsed_local_stand_in(
    stand_in: OpenAIStandIn,
) -> None:
    stand_in.reply_json(
        completion(
            {
                "content": "Checking both.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    },
                ],
            },
            finish_reason="tool_calls",
            usage={"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43},
        )
    )

    response = await stand_in.model()([Msg("u", "hi", "user")], tools=[WEATHER_TOOL])

    assert response.text == "Checking both."
    assert [(c.id, c.name, c.input) for c in response.tool_calls] == [
        ("call_a", "get_weather", {"city": "Paris"}),
        ("call_b", "get_time", {}),
    ]
    assert isinstance(response.content[0], TextBlock)
    assert response.stop_reason == "tool_calls"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 12)
    assert response.usage.total_tokens == 43


async def test_null_content_gives_no_text_block_local_stand_in(stand_in: OpenAIStandIn) -> None:
    stand_in.reply_json(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
                ],
            },
            finish_reason="tool_calls",
        )
    )
    response = await stand_in.model()([Msg("u", "hi", "user")])
    assert [type(b) for b in response.content] == [ToolUseBlock]
    assert response.tool_calls[0].input == {}


TEXT_STREAM = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hello"}),
    chunk({"content": ", wor"}),
    chunk({"content": "ld!"}),
    chunk({}, finish_reason="stop"),
    usage_chunk(9, 3),
]


@pytest.mark.parametrize("pieces", [[], [7, 8, 60, 61, 62, 200, 333], list(range(1, 2000, 5))])
async def test_streamed_text_local_stand_in(stand_in: OpenAIStandIn, pieces: list[int]) -> None:
    stand_in.reply_sse(TEXT_STREAM, pieces=pieces)

    stream = await stand_in.model()([Msg("u", "hi", "user")], stream=True)
    deltas = [d async for d in stream]

    assert [d.text for d in deltas if d.text] == ["Hello", ", wor", "ld!"]
    response = accumulate(deltas)
    assert response.text == "Hello, world!"
    assert response.stop_reason == "stop"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 3)
    body = stand_in.bodies()[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert stand_in.requests[0].headers["accept"] == "text/event-stream"


TOOL_STREAM = [
    chunk({"role": "assistant", "content": None}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_p",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_l",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city"'},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Pa'}}]}),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "Lyon"}'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ris"}'}}]}),
    chunk({}, finish_reason="tool_calls"),
    usage_chunk(20, 18),
]


async def test_streamed_tool_call_deltas_interleaved_by_index_local_stand_in(
    stand_in: OpenAIStandIn,
) -> None:
    stand_in.reply_sse(TOOL_STREAM, pieces=list(range(3, 3000, 17)))
    stand_in.reply_json(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_p",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_l",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
                    },
                ],
            },
            finish_reason="tool_calls",
            usage={"prompt_tokens": 20, "completion_tokens": 18, "total_tokens": 38},
        )
    )
    model = stand_in.model()

    streamed = accumulate(
        [d async for d in await model([Msg("u", "hi", "user")], [WEATHER_TOOL], stream=True)]
    )
    whole = await model([Msg("u", "hi", "user")], [WEATHER_TOOL])

    assert [(c.id, c.name, c.input) for c in streamed.tool_calls] == [
        ("call_p", "get_weather", {"city": "Paris"}),
        ("call_l", "get_weather", {"city": "Lyon"}),
    ]
    assert _semantic(streamed) == _semantic(whole)


def _semantic(response: ChatResponse) -> tuple[object, ...]:
    return (
        response.text,
        [(c.id, c.name, c.input) for c in response.tool_calls],
        response.usage,
        response.stop_reason,
    )


async def test_server_ignoring_stream_flag_still_streams_local_stand_in(
    stand_in: OpenAIStandIn,
) -> None:
    stand_in.reply_json(completion({"content": "all at once"}))
    deltas = [d async for d in await stand_in.model()([Msg("u", "hi", "user")], stream=True)]
    assert accumulate(deltas).text == "all at once"


async def test_429_with_retry_after_then_success_local_stand_in(
    stand_in: OpenAIStandIn, clock: FakeClock
) -> None:
    stand_in.reply_json(
        {
            "error": {
                "message": "Rate limit reached",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
        status=429,
        headers={"Retry-After": "7"},
    )
    stand_in.reply_json(completion({"content": "ok"}))

    response = await stand_in.model(retry_base_delay=100.0)([Msg("u", "hi", "user")])

    assert response.text == "ok"
    assert len(stand_in.requests) == 2
    assert clock.sleeps == [7.0]


async def test_retry_after_ms_is_preferred_local_stand_in(
    stand_in: OpenAIStandIn, clock: FakeClock
) -> None:
    stand_in.reply_json(
        {"error": {"message": "slow down"}},
        status=429,
        headers={"retry-after-ms": "250", "Retry-After": "1"},
    )
    stand_in.reply_json(completion({"content": "ok"}))
    await stand_in.model()([Msg("u", "hi", "user")])
    assert clock.sleeps == [0.25]


async def test_500_is_retried_with_growing_backoff_local_stand_in(
    stand_in: OpenAIStandIn, clock: FakeClock
) -> None:
    stand_in.reply_json({"error": {"message": "The server had an error"}}, status=500)
    stand_in.reply_raw(b"<html>Bad gateway</html>", status=502, content_type="text/html")
    stand_in.reply_json(completion({"content": "recovered"}))

    response = await stand_in.model(retry_base_delay=1.0, max_retries=3)([Msg("u", "hi", "user")])

    assert response.text == "recovered"
    assert len(stand_in.requests) == 3
    # Backoff with jitter: attempt n waits within [base * 2^n / 2, base * 2^n].
    assert 0.5 <= clock.sleeps[0] <= 1.0
    assert 1.0 <= clock.sleeps[1] <= 2.0


async def test_retries_exhausted_raise_the_last_error_local_stand_in(
    stand_in: OpenAIStandIn, clock: FakeClock
) -> None:
    for _ in range(2):
        stand_in.reply_json(
            {"error": {"message": "overloaded", "type": "server_error"}}, status=503
        )

    with pytest.raises(ChatModelAPIError) as caught:
        await stand_in.model(max_retries=1)([Msg("u", "hi", "user")])

    assert caught.value.status_code == 503
    assert "overloaded" in str(caught.value)
    assert len(stand_in.requests) == 2
    assert len(clock.sleeps) == 1


async def test_401_is_raised_at_once_with_the_provider_message_local_stand_in(
    stand_in: OpenAIStandIn, clock: FakeClock
) -> None:
    stand_in.reply_json(
        {
            "error": {
                "message": "Incorrect API key provided: sk-stan***. Find your key in settings.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        status=401,
    )

    with pytest.raises(ChatModelAPIError) as caught:
        await stand_in.model()([Msg("u", "hi", "user")])

    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"
    assert caught.value.message.startswith("Incorrect API key provided")
    assert "Incorrect API key provided" in str(caught.value)
    assert len(stand_in.requests) == 1
    assert clock.sleeps == []


async def test_insufficient_quota_429_is_not_retried_local_stand_in(
    stand_in: OpenAIStandIn, clock: FakeClock
) -> None:
    stand_in.reply_json(
        {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}},
        status=429,
    )
    with pytest.raises(ChatModelAPIError, match="exceeded your current quota"):
        await stand_in.model()([Msg("u", "hi", "user")])
    assert len(stand_in.requests) == 1


async def test_error_status_on_stream_request_is_raised_local_stand_in(
    stand_in: OpenAIStandIn,
) -> None:
    stand_in.reply_json({"error": {"message": "model not found"}}, status=404)
    with pytest.raises(ChatModelAPIError, match="model not found"):
        async for _ in await stand_in.model()([Msg("u", "hi", "user")], stream=True):
            pass


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"this is not json", "not valid JSON"),
        (b'{"id": "x", "object": "chat.completion"}', "no choices"),
        (b'{"choices": [{"index": 0, "finish_reason": "stop"}]}', "no message"),
        (
            json.dumps(
                completion(
                    {
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": "{oops"},
                            }
                        ],
                    }
                )
            ).encode(),
            "tool 'f' that are not valid JSON",
        ),
    ],
)
async def test_malformed_response_raises_a_clear_error_local_stand_in(
    stand_in: OpenAIStandIn, raw: bytes, expected: str
) -> None:
    stand_in.reply_raw(raw)
    with pytest.raises(ChatModelResponseError, match=expected):
        await stand_in.model()([Msg("u", "hi", "user")])


async def test_malformed_stream_chunk_raises_local_stand_in(stand_in: OpenAIStandIn) -> None:
    stand_in.reply_raw(
        b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\ndata: {broken\n\n',
        content_type="text/event-stream",
    )
    with pytest.raises(ChatModelResponseError, match="stream chunk is not valid JSON"):
        async for _ in await stand_in.model()([Msg("u", "hi", "user")], stream=True):
            pass


async def test_stream_cut_short_raises_local_stand_in(stand_in: OpenAIStandIn) -> None:
    stand_in.reply_sse([chunk({"content": "Hel"})], done=False)
    with pytest.raises(ChatModelResponseError, match="incomplete"):
        async for _ in await stand_in.model()([Msg("u", "hi", "user")], stream=True):
            pass


async def test_error_event_inside_stream_raises_local_stand_in(stand_in: OpenAIStandIn) -> None:
    stand_in.reply_sse(
        [
            chunk({"content": "Hel"}),
            {"error": {"message": "upstream overloaded", "code": "overloaded"}},
        ]
    )
    with pytest.raises(ChatModelAPIError, match="upstream overloaded"):
        async for _ in await stand_in.model()([Msg("u", "hi", "user")], stream=True):
            pass


async def test_sse_comments_multiline_data_and_crlf_local_stand_in(stand_in: OpenAIStandIn) -> None:
    first = json.dumps(chunk({"content": "a"}), indent=1).replace("\n", "\ndata: ")
    raw = (
        ": keep-alive\r\n\r\n"
        f"data: {first}\r\n\r\n"
        f"event: message\ndata: {json.dumps(chunk({'content': 'b'}, finish_reason='stop'))}\n\n"
        "data: [DONE]\n\n"
    )
    stand_in.reply_raw(raw.encode(), content_type="text/event-stream; charset=utf-8")
    deltas = [d async for d in await stand_in.model()([Msg("u", "hi", "user")], stream=True)]
    assert "".join(d.text for d in deltas) == "ab"


async def test_key_and_url_come_from_the_environment_local_stand_in(
    stand_in: OpenAIStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env-host.test/api/v1/")
    stand_in.reply_json(completion({"content": "ok"}))
    model = OpenAIChatModel(
        "gpt-test", http_client=httpx.AsyncClient(transport=httpx.MockTransport(stand_in.handle))
    )

    await model([Msg("u", "hi", "user")])

    (request,) = stand_in.requests
    assert str(request.url) == "http://env-host.test/api/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-from-env"


async def test_no_key_sends_no_authorization_local_stand_in(
    stand_in: OpenAIStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stand_in.reply_json(completion({"content": "ok"}))
    await stand_in.model(api_key=None)([Msg("u", "hi", "user")])
    assert "authorization" not in stand_in.requests[0].headers


async def test_connection_failure_is_retried_then_reported(clock: FakeClock) -> None:
    import httpx

    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    model = OpenAIChatModel(
        "gpt-test",
        api_key="k",
        base_url="http://nowhere.test/v1",
        max_retries=2,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(refuse)),
        clock=clock,
    )
    with pytest.raises(ChatModelError, match="could not reach"):
        await model([Msg("u", "hi", "user")])
    assert len(attempts) == 3
    assert len(clock.sleeps) == 2


def test_accumulating_a_delta_stream_rebuilds_the_calls() -> None:
    deltas = [
        ChatDelta(text="a"),
        ChatDelta(tool_calls=[]),
        ChatDelta(text="b", stop_reason="tool_calls"),
    ]
    assert accumulate(deltas).text == "ab"
    assert accumulate(deltas).stop_reason == "tool_calls"


async def test_credential_supplies_key_url_and_organization_local_stand_in(
    stand_in: OpenAIStandIn,
) -> None:
    import httpx

    from archivist.credential import OpenAICredential

    credential = OpenAICredential(
        api_key="sk-cred", base_url="http://cred-host.test/v1", organization="org-7"
    )
    client = httpx.AsyncClient(transport=httpx.MockTransport(stand_in.handle))
    stand_in.reply_json(completion({"content": "ok"}))
    stand_in.reply_json(completion({"content": "ok"}))

    await OpenAIChatModel("m", credential=credential, http_client=client)([Msg("u", "hi", "user")])
    await OpenAIChatModel("m", credential=credential, api_key="sk-explicit", http_client=client)(
        [Msg("u", "hi", "user")]
    )

    by_credential, overridden = stand_in.requests
    assert str(by_credential.url) == "http://cred-host.test/v1/chat/completions"
    assert by_credential.headers["authorization"] == "Bearer sk-cred"
    assert by_credential.headers["openai-organization"] == "org-7"
    assert overridden.headers["authorization"] == "Bearer sk-explicit"
    assert str(overridden.url) == "http://cred-host.test/v1/chat/completions"
    assert "sk-cred" not in repr(OpenAIChatModel("m", credential=credential).credential)


@pytest.mark.parametrize(
    "bad_chunk",
    [
        chunk({"tool_calls": [{"index": "first", "function": {"name": "f"}}]}),
        {"choices": ["not an object"]},
        {"choices": [{"index": 0, "delta": {"content": "x"}}], "usage": {"prompt_tokens": "many"}},
    ],
)
async def test_stream_chunk_with_wrong_field_types_raises_local_stand_in(
    stand_in: OpenAIStandIn, bad_chunk: dict[str, object]
) -> None:
    stand_in.reply_sse([bad_chunk])
    with pytest.raises(ChatModelResponseError, match="malformed stream chunk"):
        async for _ in await stand_in.model()([Msg("u", "hi", "user")], stream=True):
            pass
