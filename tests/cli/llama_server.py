"""A real OpenAI-compatible chat server on 127.0.0.1: `archivist chat-server` (llama.cpp
serving Gemma 3 270M) as a child process on a free port, the way a user starts one."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """The server process and its base URL; the model file is assembled in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        command = [sys.executable, "-m", "archivist", "chat-server", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, "--models", str(directory)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("listening"), line
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        assert line.split()[1] == self.base_url, line

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)
