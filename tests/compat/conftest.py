"""The AgentScope 2.0.11 interpreter the differential tests run their scenarios in.

The venv lives in `.venv-agentscope/` at the repository root (or `$ARCHIVIST_AGENTSCOPE_VENV`)
and is created on first use, then reused; where it cannot be created (no index reachable, no
wheel for this platform) the differential tests skip and say why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ["agentscope[rag]==2.0.11", "qdrant-client"]
PROBE = "import agentscope, agentscope.rag, agentscope.middleware, agentscope.mcp, qdrant_client; "
PROBE += "assert agentscope.__version__ == '2.0.11', agentscope.__version__"


@pytest.fixture(autouse=True)
def archivist_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenarios that start archivist's CLI (e.g. `archivist mcp` for an MCP client) start it
    with this interpreter, from either venv."""
    monkeypatch.setenv("ARCHIVIST_PYTHON", sys.executable)


def _venv() -> Path:
    return Path(os.environ.get("ARCHIVIST_AGENTSCOPE_VENV", ROOT / ".venv-agentscope"))


def _ready(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run([str(python), "-c", PROBE], capture_output=True, timeout=120)
    return probe.returncode == 0


@pytest.fixture(scope="session")
def agentscope_python() -> Path:
    """The python of a venv with AgentScope 2.0.11 installed; created if missing."""
    venv = _venv()
    python = venv / "bin" / "python"
    if _ready(python):
        return python
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", *REQUIREMENTS],
    ]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as error:
            pytest.skip(f"AgentScope 2.0.11 could not be installed into {venv}: {error}")
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            pytest.skip(
                f"AgentScope 2.0.11 could not be installed into {venv} "
                f"({' '.join(step[:4])} failed): {' | '.join(tail)}"
            )
    if not _ready(python):
        pytest.skip(f"{venv} was created but does not import agentscope 2.0.11")
    return python
