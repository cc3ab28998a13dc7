"""`archivist ask` in static mode against a real OpenAI-compatible server: llama.cpp serving a
small local model (Gemma 3 270M, shipped by a PyPI package) on 127.0.0.1. The answer streams,
the sources print, `--timeout` applies, and a server killed mid-answer gives exit 3 and one
line. Heavy: loading and running the model takes tens of seconds on two cores."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.llama_server import LlamaServer

pytestmark = pytest.mark.heavy
pytest.importorskip("xllamacpp", reason="xllamacpp ships wheels for x86_64 Linux only")

QUESTION = "What colour is the Zorbian sky?"
FACT = "On the planet Zorbia the sky is bright green, because of the copper dust in the air.\n"


TEMPLATE_MARKERS = ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<bos>")
"""Chat-template control text that must never reach an answer."""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gguf")


@pytest.fixture
def server(model_dir: Path) -> Iterator[LlamaServer]:
    running = LlamaServer(model_dir)
    yield running
    running.kill()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DASHSCOPE_API_KEY"}
    }
    environment["ARCHIVIST_HOME"] = str(tmp_path / "home")
    environment["OPENAI_API_KEY"] = "sk-local"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "zorbia.txt").write_text(FACT)
    indexed = subprocess.run(
        [sys.executable, "-m", "archivist", "index", str(notes)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert indexed.returncode == 0, indexed.stderr
    return environment


def ask(env: dict[str, str], base_url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "archivist", "ask", QUESTION, "-k", "1",
         "--base-url", base_url, "--model", "gemma", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def test_the_answer_streams_and_the_sources_print(env: dict[str, str], server: LlamaServer) -> None:
    process = ask(env, server.base_url, "--timeout", "300")
    assert process.stdout is not None
    first = process.stdout.read(1)  # the first piece of the answer, while it is still running
    still_running = process.poll() is None
    rest, err = process.communicate(timeout=600)
    out = first + rest
    assert process.returncode == 0, err
    assert still_running, "the answer arrived all at once, not streamed"
    answer, sources = out.split("\nSources:\n")
    assert answer.strip()
    assert not [marker for marker in TEMPLATE_MARKERS if marker in answer], answer
    assert "[1] zorbia.txt" in sources
    assert "Traceback" not in err


def test_the_server_renders_gemma_turns_not_chatml(server: LlamaServer) -> None:
    """The GGUF has no chat template; without one llama.cpp falls back to ChatML, whose
    markers Gemma does not know and copied into its answers. The hint turn stays a turn."""
    import httpx

    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {"role": "user", "content": '<hint source="rag">\nH\n</hint>'},
    ]
    rendered = httpx.post(
        server.base_url.removesuffix("/v1") + "/apply-template",
        json={"messages": messages},
        timeout=60,
    ).json()["prompt"]
    assert "<|im_start|>" not in rendered
    assert rendered.endswith("<end_of_turn>\n<start_of_turn>model\n")
    assert rendered.count("<start_of_turn>user\n") == 2
    assert "<start_of_turn>user\nS\n\nQ<end_of_turn>" in rendered


def test_timeout_applies_to_a_real_server(env: dict[str, str], server: LlamaServer) -> None:
    started = time.monotonic()
    process = ask(env, server.base_url, "--timeout", "0.2")
    _, err = process.communicate(timeout=600)
    assert process.returncode == 3, err
    # llama.cpp sends its headers at once; the wait for the first token is what times out
    assert "did not answer in time" in err or "ReadTimeout" in err
    assert len([line for line in err.splitlines() if line.startswith("archivist: error:")]) == 1
    assert time.monotonic() - started < 300


def test_a_server_killed_mid_answer_is_exit_3_and_one_line(
    env: dict[str, str], server: LlamaServer
) -> None:
    process = ask(env, server.base_url, "--timeout", "300")
    assert process.stdout is not None
    process.stdout.read(1)  # the answer has started
    server.kill()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 3, err
    errors = [line for line in err.splitlines() if line.startswith("archivist: error:")]
    assert len(errors) == 1 and "Traceback" not in err
