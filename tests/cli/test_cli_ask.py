"""`archivist ask`: without a model it prints passages; with one it answers over real HTTP."""

import io
import json
import re
import threading
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from archivist.cli.main import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DASHSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert main(["index", str(SAMPLES / "archivist-guide.pdf")]) == 0
    return tmp_path


class _OpenAIChatStandIn(BaseHTTPRequestHandler):
    """A loopback stand-in of the OpenAI chat-completions endpoint, streaming by SSE."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Tenants are "}}]},
            {"choices": [{"index": 0, "delta": {"content": "isolated by filters [1]."}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload.encode())))
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def chat_server() -> Iterator[str]:
    _OpenAIChatStandIn.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIChatStandIn)
    # shutdown() returns at the loop's next poll: the default 0.5 s would idle every test
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_ask_without_a_model_prints_cited_passages(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "How are tenants isolated?", "-k", "2"]) == 0
    out, err = capsys.readouterr()
    assert "[1] archivist-guide.pdf, page 3, chunk" in out
    assert re.search(r"\(relevance [01]\.\d\d\)", out)  # the measure `search` shows
    assert "metadata_filter" in out
    assert "Cite them" not in out  # the instruction meant for a model is not shown
    assert "No chat model is configured" in err and "OPENAI_API_KEY" in err


def test_ask_with_a_model_on_a_loopback_stand_in_server(
    indexed: Path, chat_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["ask", "How are tenants isolated?", "--base-url", chat_server, "--model", "local",
         "--api-key", "sk-test"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0
    assert "--api-key is visible to other users" in err
    answer, _ = out.split("Sources:")
    assert answer.strip() == "Tenants are isolated by filters [1]."  # only the answer
    assert "Cite them" not in out and "searched the knowledge base" not in out
    assert "Sources:" in out and "[1] archivist-guide.pdf, page 3" in out
    [request] = _OpenAIChatStandIn.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "local" and request["body"]["stream"] is True
    sent = json.dumps(request["body"]["messages"])
    assert "archivist-guide.pdf, page 3" in sent  # the static hint reached the model


def test_without_a_model_the_explanation_comes_once_before_the_passages(indexed: Path) -> None:
    both = io.StringIO()  # stdout and stderr as a terminal shows them: in order, together
    with redirect_stdout(both), redirect_stderr(both):
        code = main(["ask", "How are tenants isolated?", "-k", "2"])
    shown = both.getvalue()
    assert code == 0
    assert shown.count("No chat model is configured") == 1
    explanation, passages = shown.split("[1] archivist-guide.pdf", 1)
    assert explanation.startswith("No chat model is configured, so here are the passages")
    for way in ("OPENAI_API_KEY", "--base-url URL --model NAME", "archivist chat-server"):
        assert way in explanation
    assert "[2] " in passages and "chat model" not in passages


def test_asking_an_empty_knowledge_base_says_so(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rm", str(SAMPLES / "archivist-guide.pdf")]) == 0
    capsys.readouterr()
    assert main(["ask", "How are tenants isolated?"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "No chat model" not in err
    assert err.strip() == (
        "archivist: error: knowledge base 'default' is empty; add files with: "
        "archivist index PATH --kb default"
    )
