"""Chat sessions over HTTP: records per tenant, answers streamed as Server-Sent Events from an
OpenAI-compatible chat server (here a loopback stand-in that can also fail on demand: 429,
a stall, a cut stream, a server that is gone), and the client walking away mid-answer."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from chat_stand_in import ChatStandIn, Reply, chat_stand_in
from httpx_sse import connect_sse
from service_helpers import client, new_key, running_service, wait_final

from archivist.service import ServiceSettings

FACT = "On the planet Zorbia the sky is bright green, because of the copper dust in the air."
OTHER = "Parking: staff park in the north garage, level two, from seven in the morning."


@dataclass
class ChatService:
    url: str
    keys: dict[str, str]
    chat: ChatStandIn
    document_id: str


@pytest.fixture(scope="module")
def chat_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatService]:
    home: Path = tmp_path_factory.mktemp("chat-home")
    with chat_stand_in() as chat:
        settings = ServiceSettings(
            home=home,
            chat_base_url=chat.base_url,
            chat_model="stand-in",
            chat_timeout=2.0,
            chat_run_seconds=20.0,
        )
        keys = {tenant: new_key(settings, tenant) for tenant in ("acme", "globex")}
        with running_service(settings) as url, client(url, keys["acme"]) as http:
            assert http.post("/v1/knowledge-bases", json={"name": "planets"}).status_code == 201
            upload = http.post(
                "/v1/knowledge-bases/planets/documents",
                files=[
                    ("files", ("zorbia.txt", FACT.encode(), "text/plain")),
                    ("files", ("parking.txt", OTHER.encode(), "text/plain")),
                ],
            )
            assert upload.status_code == 202
            wait_final(http, "planets")
            document_id = next(
                item["id"] for item in upload.json()["items"] if item["filename"] == "zorbia.txt"
            )
            yield ChatService(url, keys, chat, document_id)


def ask(http: httpx.Client, session_id: str, **body: Any) -> list[tuple[str, dict[str, Any]]]:
    """POST a message and read every event of the answer."""
    body.setdefault("knowledge_bases", ["planets"])
    with connect_sse(http, "POST", f"/v1/sessions/{session_id}/messages", json=body) as source:
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(event.event, json.loads(event.data)) for event in source.iter_sse()]


def new_session(http: httpx.Client, title: str = "") -> str:
    response = http.post("/v1/sessions", json={"title": title} if title else {})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_sessions_are_created_listed_read_and_deleted_per_tenant(chat_service) -> None:
    with (
        client(chat_service.url, chat_service.keys["acme"]) as acme,
        client(chat_service.url, chat_service.keys["globex"]) as globex,
    ):
        created = acme.post("/v1/sessions", json={"title": "Zorbia questions"})
        assert created.status_code == 201
        session = created.json()
        assert set(session) == {"id", "title", "created_at"}
        assert session["title"] == "Zorbia questions"
        untitled = new_session(acme)

        listed = [s["id"] for s in acme.get("/v1/sessions").json()["items"]]
        assert session["id"] in listed and untitled in listed
        assert session["id"] not in [s["id"] for s in globex.get("/v1/sessions").json()["items"]]

        detail = acme.get(f"/v1/sessions/{session['id']}").json()
        assert detail["messages"] == [] and detail["title"] == "Zorbia questions"

        # another tenant's session id is unknown to globex, whatever it does with it
        assert globex.get(f"/v1/sessions/{session['id']}").status_code == 404
        assert globex.delete(f"/v1/sessions/{session['id']}").status_code == 404
        asked = globex.post(
            f"/v1/sessions/{session['id']}/messages",
            json={"content": "hi", "knowledge_bases": ["planets"]},
        )
        assert asked.status_code == 404
        assert acme.get(f"/v1/sessions/{session['id']}").status_code == 200

        assert acme.delete(f"/v1/sessions/{untitled}").status_code == 204
        assert acme.get(f"/v1/sessions/{untitled}").status_code == 404
        assert acme.delete(f"/v1/sessions/{untitled}").status_code == 404
        assert httpx.get(f"{chat_service.url}/v1/sessions").status_code == 401
        paths = httpx.get(f"{chat_service.url}/openapi.json").json()["paths"]
        assert "/v1/sessions/{session_id}/messages" in paths


def test_bad_message_requests_are_refused_before_any_model_call(chat_service) -> None:
    chat = chat_service.chat
    before = len(chat.requests)
    with (
        client(chat_service.url, chat_service.keys["acme"]) as acme,
        client(chat_service.url, chat_service.keys["globex"]) as globex,
    ):
        session = new_session(acme)
        url = f"/v1/sessions/{session}/messages"
        unknown = acme.post(url, json={"content": "q", "knowledge_bases": ["planets", "nope"]})
        assert unknown.status_code == 404 and "'nope'" in unknown.json()["detail"]
        globex_session = new_session(globex)  # globex cannot reach acme's knowledge base
        foreign = globex.post(
            f"/v1/sessions/{globex_session}/messages",
            json={"content": "q", "knowledge_bases": ["planets"]},
        )
        assert foreign.status_code == 404
        for body in (
            {"content": "", "knowledge_bases": ["planets"]},
            {"content": "q", "knowledge_bases": []},
            {"content": "q", "knowledge_bases": ["planets"], "mode": "telepathic"},
            {"content": "q", "knowledge_bases": ["planets"], "top_k": 0},
            {"content": "q"},
            {"content": "x" * 8001, "knowledge_bases": ["planets"]},
            {"content": "q", "knowledge_bases": ["planets"], "extra": 1},
        ):
            assert acme.post(url, json=body).status_code == 422, body
        assert acme.post("/v1/sessions", json={"title": "t" * 201}).status_code == 422
        for hostile in ("..%2F..%2Fetc", "%00", "x" * 300, "' OR 1=1 --"):
            assert acme.get(f"/v1/sessions/{hostile}").status_code == 404, hostile
    assert len(chat.requests) == before


def test_static_answer_streams_with_citations_and_joins_the_history(chat_service) -> None:
    chat = chat_service.chat
    chat.replies += [
        Reply(pieces=["The sky ", "is bright ", "green [1]."]),
        Reply(pieces=["Copper ", "dust [1]."]),
    ]
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        session = new_session(acme, "sky")
        events = ask(acme, session, content="What colour is the Zorbian sky?", top_k=1)
        names = [name for name, _ in events]
        assert names == ["retrieval", "delta", "delta", "delta", "done"]
        hits = events[0][1]["hits"]
        assert hits[0]["filename"] == "zorbia.txt"
        assert hits[0]["document_id"] == chat_service.document_id
        assert {"score", "chunk_index", "text", "citation", "metadata"} <= set(hits[0])
        assert "".join(data["text"] for name, data in events if name == "delta") == (
            "The sky is bright green [1]."
        )
        done = events[-1][1]
        assert done["content"] == "The sky is bright green [1]."
        [cited] = done["citations"]
        assert cited["document_id"] == chat_service.document_id
        assert cited["citation"].startswith("zorbia.txt")
        chunk = acme.get(
            f"/v1/knowledge-bases/planets/documents/{cited['document_id']}/chunks",
            params={"offset": cited["chunk_index"], "limit": 1},
        ).json()["items"][0]
        assert chunk["chunk_index"] == cited["chunk_index"]
        assert "bright green" in chunk["text"]
        # the model saw the passage, after the question
        sent = chat.requests[-1]["messages"]
        assert sent[0]["role"] == "system"
        assert "What colour is the Zorbian sky?" in json.dumps(sent)
        assert "bright green" in sent[-1]["content"]

        events = ask(acme, session, content="Why?", top_k=1)
        assert events[-1] == ("done", {**events[-1][1], "content": "Copper dust [1]."})
        sent = chat.requests[-1]["messages"]
        contents = [m["content"] for m in sent if m["role"] in ("user", "assistant")]
        assert contents[:3] == [
            "What colour is the Zorbian sky?",
            "The sky is bright green [1].",
            "Why?",
        ]

        history = acme.get(f"/v1/sessions/{session}").json()["messages"]
        assert [(m["role"], m["content"]) for m in history] == [
            ("user", "What colour is the Zorbian sky?"),
            ("assistant", "The sky is bright green [1]."),
            ("user", "Why?"),
            ("assistant", "Copper dust [1]."),
        ]
        assert history[1]["citations"][0]["document_id"] == chat_service.document_id
        assert history[0]["citations"] == []


def test_agentic_answer_reports_the_tool_call_and_its_retrieval(chat_service) -> None:
    chat = chat_service.chat
    chat.replies += [
        Reply(tool_call={"name": "search_knowledge", "arguments": {"query": "north garage"}}),
        Reply(pieces=["Level two [1]."]),
    ]
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        session = new_session(acme)
        events = ask(acme, session, content="Where do staff park?", mode="agentic", top_k=1)
    names = [name for name, _ in events]
    assert names == ["tool_call", "retrieval", "delta", "done"]
    assert events[0][1]["name"] == "search_knowledge"
    assert events[0][1]["input"] == {"query": "north garage"}
    assert events[1][1]["hits"][0]["filename"] == "parking.txt"
    assert events[-1][1]["citations"][0]["filename"] == "parking.txt"
    tools = chat.requests[-2]["tools"]
    assert [t["function"]["name"] for t in tools] == ["search_knowledge"]
    assert "planets" in tools[0]["function"]["description"]
    assert chat.requests[-1]["messages"][-1]["role"] == "tool"


def test_both_modes_retrieve_first_and_offer_the_tool(chat_service) -> None:
    chat = chat_service.chat
    chat.replies.append(Reply(pieces=["Green."]))
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        events = ask(acme, new_session(acme), content="Zorbian sky colour?", mode="both")
    assert [name for name, _ in events] == ["retrieval", "delta", "done"]
    assert [t["function"]["name"] for t in chat.requests[-1]["tools"]] == ["search_knowledge"]


def _failed_answer(chat_service, *replies: Reply) -> tuple[list[tuple[str, Any]], str]:
    chat_service.chat.replies += list(replies)
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        session = new_session(acme)
        started = time.monotonic()
        events = ask(acme, session, content="What colour is the Zorbian sky?")
        assert time.monotonic() - started < 15
        assert acme.get(f"/v1/sessions/{session}").json()["messages"] == []  # nothing stored
    assert events[-1][0] == "error"
    assert "done" not in [name for name, _ in events]
    return events, events[-1][1]["detail"]


def test_rate_limited_chat_server_is_an_error_event_with_its_status(chat_service) -> None:
    limited = Reply(status=429, headers={"Retry-After": "0"})
    events, detail = _failed_answer(chat_service, limited, limited)
    assert events[-1][1]["status"] == 429
    assert "429" in detail


def test_a_stalled_chat_server_is_an_error_event_not_a_hung_request(chat_service) -> None:
    events, detail = _failed_answer(chat_service, Reply(pieces=["never"], delay=5.0))
    assert events[-1][1]["status"] == 504
    assert "in time" in detail


def test_a_stream_cut_mid_answer_is_an_error_event_after_the_deltas(chat_service) -> None:
    cut = Reply(pieces=["The sky ", "is ", "bright ", "green."], cut_after=3)
    events, detail = _failed_answer(chat_service, cut)
    assert [name for name, _ in events][:3] == ["retrieval", "delta", "delta"]
    assert events[-1][1]["status"] == 502
    assert "127.0.0.1" not in detail  # the tenant is not told where the chat server runs


def test_a_broken_answer_is_an_error_event_and_its_words_stay_out_of_the_log(
    chat_service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    secret = "Zorbian copper ledger 7731"
    events, detail = _failed_answer(chat_service, Reply(raw=f"{{{secret} is not JSON"))
    assert events[-1][1]["status"] == 502 and "broken" in detail
    logged = [record.getMessage() for record in caplog.records]
    assert any("bad chat model answer" in line for line in logged)
    assert not [line for line in logged if secret in line]


def test_closing_the_request_cancels_the_run(chat_service) -> None:
    chat = chat_service.chat
    cancelled = chat.cancelled
    chat.replies.append(Reply(pieces=[f"word{i} " for i in range(40)], delay=0.3))
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        session = new_session(acme)
        body = {"content": "Tell me everything.", "knowledge_bases": ["planets"]}
        with connect_sse(acme, "POST", f"/v1/sessions/{session}/messages", json=body) as source:
            for event in source.iter_sse():
                if event.event == "delta":
                    break  # the answer has started; walk away
        deadline = time.monotonic() + 10
        while chat.cancelled == cancelled and time.monotonic() < deadline:
            time.sleep(0.1)
        assert chat.cancelled == cancelled + 1, "the chat server kept generating"
        assert acme.get(f"/v1/sessions/{session}").json()["messages"] == []


def test_one_answer_at_a_time_per_session(chat_service) -> None:
    chat = chat_service.chat
    chat.replies.append(Reply(pieces=["slow ", "answer"], delay=0.5))
    chat.replies.append(Reply(pieces=["next"]))
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        session = new_session(acme)
        body = {"content": "First?", "knowledge_bases": ["planets"]}
        with connect_sse(acme, "POST", f"/v1/sessions/{session}/messages", json=body) as source:
            events = source.iter_sse()
            assert next(events).event == "retrieval"
            busy = acme.post(f"/v1/sessions/{session}/messages", json=body)
            assert busy.status_code == 409 and "still answering" in busy.json()["detail"]
            assert [e.event for e in events][-1] == "done"
        assert ask(acme, session, content="Second?")[-1][1]["content"] == "next"


def test_concurrent_messages_to_one_session_get_one_answer_and_409s(chat_service) -> None:
    """Four posts at once: the session is marked answering in the database before any of
    them is answered, so exactly one runs."""
    chat = chat_service.chat
    chat.replies.extend(Reply(pieces=["only ", "one"], delay=0.3) for _ in range(4))
    body = {"content": "Now?", "knowledge_bases": ["planets"]}
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        session = new_session(acme)

    def post() -> int:
        with client(chat_service.url, chat_service.keys["acme"]) as http:
            path = f"/v1/sessions/{session}/messages"
            with http.stream("POST", path, json=body) as response:
                response.read()
                return response.status_code

    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(lambda _: post(), range(4)))
    chat.replies.clear()
    assert statuses == [200, 409, 409, 409]
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        history = acme.get(f"/v1/sessions/{session}").json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]


def test_an_answer_past_the_size_limit_is_cut_and_the_chat_stream_closed(chat_service) -> None:
    """A chat server that will not stop (here 4 MiB, a piece at a time): the service relays
    256 KiB, closes the server's stream, says why, and keeps the cut text."""
    chat = chat_service.chat
    cancelled = chat.cancelled
    chat.replies.append(Reply(pieces=["é" * 2048] * 1024, delay=0.001))
    with client(chat_service.url, chat_service.keys["acme"]) as acme:
        session = new_session(acme)
        events = ask(acme, session, content="Say it all.")
        relayed = "".join(data["text"] for name, data in events if name == "delta")
        assert len(relayed.encode()) == 256 * 1024
        name, error = events[-1]
        assert name == "error" and "262,144-byte limit" in error["detail"]
        deadline = time.monotonic() + 10
        while chat.cancelled == cancelled and time.monotonic() < deadline:
            time.sleep(0.1)
        assert chat.cancelled == cancelled + 1, "the chat server kept sending"
        history = acme.get(f"/v1/sessions/{session}").json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["content"] == relayed


def test_a_chat_server_that_is_down_is_an_error_event(chat_service) -> None:
    chat_service.chat.stop()  # last test of the module: the port now refuses connections
    events, detail = _failed_answer(chat_service)
    assert events[-1][1]["status"] == 502
    assert "could not be reached" in detail


def test_without_a_chat_model_asking_is_409_naming_the_option(service) -> None:
    with client(service.url, service.keys["acme"]) as acme:
        session = new_session(acme)
        answer = acme.post(
            f"/v1/sessions/{session}/messages",
            json={"content": "anything", "knowledge_bases": ["whatever"]},
        )
    assert answer.status_code == 409
    assert "--chat-base-url" in answer.json()["detail"]


def test_the_page_is_told_whether_questions_are_answered(service, chat_service) -> None:
    with client(service.url, service.keys["acme"]) as plain:
        info = plain.get("/v1/supported-types").json()
    assert info["answers"] is False
    hint = info["answers_hint"]
    assert "archivist serve --chat-base-url" in hint and "--chat-model" in hint
    assert "archivist chat-server" in hint
    with client(chat_service.url, chat_service.keys["acme"]) as answered:
        info = answered.get("/v1/supported-types").json()
    assert info["answers"] is True and info["answers_hint"] is None
