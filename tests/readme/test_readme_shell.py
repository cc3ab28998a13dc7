"""The README's command-line and service quickstarts run as written, in bash, from a folder
holding the shipped `samples/`, in a fresh `ARCHIVIST_HOME`: the CLI block as it is, the
service block against a real `archivist serve` on a free port."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _block(heading: str) -> str:
    """The first bash block under the README's section `heading`."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^```bash\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert found is not None, heading
    return found.group(1)


def _run(script: str, folder: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    shutil.copytree(ROOT / "samples", folder / "samples")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OPENAI_", "DASHSCOPE_", "ARCHIVIST_"))  # no chat model
    }
    env["ARCHIVIST_HOME"] = str(folder / "home")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    # A background job still running when the block ends (a failed step) is stopped.
    guarded = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script
    return subprocess.run(
        ["bash", "-c", guarded],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_command_line_quickstart_runs(tmp_path: Path) -> None:
    done = _run(_block("Command line"), tmp_path, 300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "archivist-guide.pdf" in done.stdout and "relevance" in done.stdout


def test_the_service_flow_runs(tmp_path: Path) -> None:
    for tool in ("curl", "jq"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = _block("A service for a team").replace("8731", str(port))
    done = _run(script, tmp_path, 300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert '"citation": "archivist-guide.pdf, page 3' in done.stdout
    pdf = tmp_path / "guide.pdf"  # the file came back byte for byte
    assert pdf.read_bytes() == (ROOT / "samples" / "archivist-guide.pdf").read_bytes()
