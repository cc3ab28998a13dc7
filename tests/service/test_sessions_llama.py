"""A scripted conversation over HTTP against a real local chat server (llama.cpp serving Gemma 3
270M from a PyPI package): `archivist serve --chat-base-url`, the answer streams, its citations
point at stored chunks of the right document, the history survives a restart of the service,
another tenant cannot see the session, and the chat server dying mid-answer is an `error`
event. Heavy: the model answers at a few tokens per second on two cores."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse
from service_helpers import ServeProcess, client, free_port, new_key, wait_final

from archivist.service import ServiceSettings
from cli.llama_server import LlamaServer

pytestmark = pytest.mark.heavy
pytest.importorskip("xllamacpp", reason="xllamacpp ships wheels for x86_64 Linux only")

FACT = "On the planet Zorbia the sky is bright green, because of the copper dust in the air."
OTHER = "Parking: staff park in the north garage, level two, from seven in the morning."
TEMPLATE_MARKERS = ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<bos>")


def timed_events(
    http: httpx.Client, session: str, question: str
) -> list[tuple[float, str, dict[str, Any]]]:
    body = {"content": question, "knowledge_bases": ["planets"], "top_k": 1}
    started = time.monotonic()
    with connect_sse(http, "POST", f"/v1/sessions/{session}/messages", json=body) as source:
        assert source.response.status_code == 200
        return [
            (time.monotonic() - started, event.event, json.loads(event.data))
            for event in source.iter_sse()
        ]


def test_conversation_over_http_with_a_real_chat_server(tmp_path: Path) -> None:
    llama = LlamaServer(tmp_path / "gguf")
    home = tmp_path / "home"
    settings = ServiceSettings(home=home)
    keys = {tenant: new_key(settings, tenant) for tenant in ("acme", "globex")}
    flags = (
        *("--chat-base-url", llama.base_url, "--chat-model", "gemma"),
        *("--chat-timeout", "300", "--chat-max-tokens", "12"),
    )
    serve = ServeProcess(home, free_port(), *flags)
    try:
        serve.start()
        with client(serve.url, keys["acme"], timeout=600) as acme:
            assert acme.post("/v1/knowledge-bases", json={"name": "planets"}).status_code == 201
            upload = acme.post(
                "/v1/knowledge-bases/planets/documents",
                files=[
                    ("files", ("zorbia.txt", FACT.encode(), "text/plain")),
                    ("files", ("parking.txt", OTHER.encode(), "text/plain")),
                ],
            )
            ids = {item["filename"]: item["id"] for item in upload.json()["items"]}
            wait_final(acme, "planets")
            session = acme.post("/v1/sessions", json={"title": "Zorbia"}).json()["id"]

            events = timed_events(acme, session, "What colour is the Zorbian sky?")
            names = [name for _, name, _ in events]
            assert names[0] == "retrieval" and names[-1] == "done", names
            deltas = [(at, data["text"]) for at, name, data in events if name == "delta"]
            assert len(deltas) >= 3, "the answer did not stream"
            assert deltas[0][0] < events[-1][0], "the first piece came only with the end"
            done = events[-1][2]
            answer = done["content"]
            assert answer.strip() and answer == "".join(text for _, text in deltas)
            assert not [m for m in TEMPLATE_MARKERS if m in answer], answer
            [cited] = done["citations"]
            assert cited["document_id"] == ids["zorbia.txt"]
            chunks = acme.get(
                f"/v1/knowledge-bases/planets/documents/{cited['document_id']}/chunks"
            ).json()["items"]
            assert cited["chunk_index"] in [c["chunk_index"] for c in chunks]
            assert "bright green" in chunks[cited["chunk_index"]]["text"]

            second = timed_events(acme, session, "Where do staff park?")
            assert second[-1][1] == "done", second[-1]
            history = acme.get(f"/v1/sessions/{session}").json()["messages"]
            assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]

        serve.stop()
        serve = ServeProcess(home, free_port(), *flags)
        serve.start()
        with (
            client(serve.url, keys["acme"], timeout=600) as acme,
            client(serve.url, keys["globex"]) as globex,
        ):
            after = acme.get(f"/v1/sessions/{session}").json()["messages"]
            assert after == history
            assert after[1]["content"] == answer
            assert globex.get(f"/v1/sessions/{session}").status_code == 404

            # the chat server dies while it answers: the stream ends with an error event
            body = {"content": "Tell me about Zorbia.", "knowledge_bases": ["planets"]}
            seen: list[str] = []
            with connect_sse(acme, "POST", f"/v1/sessions/{session}/messages", json=body) as source:
                for event in source.iter_sse():
                    seen.append(event.event)
                    if event.event == "delta" and seen.count("delta") == 1:
                        llama.kill()
                    if event.event == "error":
                        assert json.loads(event.data)["status"] == 502
            assert seen[-1] == "error" and "done" not in seen
            assert len(acme.get(f"/v1/sessions/{session}").json()["messages"]) == 4
    finally:
        serve.stop()
        llama.kill()
