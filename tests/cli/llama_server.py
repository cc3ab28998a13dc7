"""A real OpenAI-compatible chat server on 127.0.0.1: `archivist chat-server` (llama.cpp
serving Gemma 3 270M) as a child process on a free port, the way a user starts one."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from child_process import wait_ready


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """The server process and its base URL; the model file is assembled in `directory`, and
    the server's output goes to `directory/chat-server-PORT.log`."""

    def __init__(self, directory: Path, timeout: float = 300) -> None:
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        self.log = directory / f"chat-server-{self.port}.log"
        command = [sys.executable, "-m", "archivist", "chat-server", "--port", str(self.port)]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [*command, "--models", str(directory)], stdout=log, stderr=subprocess.STDOUT
            )
        # It prints `listening URL` once the model is loaded and it serves; llama.cpp's own
        # log lines share the file and may stand on the same line before it.
        listening = wait_ready(
            self.process,
            "archivist chat-server",
            lambda: re.search(r"listening (http://\S+/v1)", self.log.read_text()),
            self.log,
            timeout,
        )
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        assert listening.group(1) == self.base_url, listening.group(0)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)
