"""The README's command-line and service quickstarts run as written, in bash, from a folder
holding the shipped `samples/`, in a fresh `ARCHIVIST_HOME`: the CLI block as it is, the
service block against a real `archivist serve` on a free port. A service that exits by itself
stops the block at once, with its exit status and output, instead of being waited for."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from system_programs import needs_jq_and_curl

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

GUARD = """set -euo pipefail
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
archivist() {
  if [ "${1-}" != serve ]; then command archivist "$@"; return; fi
  command archivist "$@" &
  local service=$!
  trap 'kill -TERM "$service" 2>/dev/null; wait "$service"; exit 0' TERM
  local status=0
  wait "$service" || status=$?
  echo "archivist serve exited by itself with status $status" >&2
  kill -TERM $$
}
"""
"""Run before a block: a failed step stops it (and a background job still running then);
`archivist serve &` runs the real command in a background shell that, should the service
exit by itself, ends the block at once saying so (the block's `kill %1` stops it quietly)."""


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
    return subprocess.run(
        ["bash", "-c", GUARD + script],
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


def _last_lines(text: str, count: int = 40) -> str:
    return "\n".join(text.splitlines()[-count:])


def _service_block() -> str:
    """The README's service block, on a free port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return _block("A service for a team").replace("8731", str(port))


@needs_jq_and_curl
def test_the_service_flow_runs(tmp_path: Path) -> None:
    done = _run(_service_block(), tmp_path, 300)
    assert done.returncode == 0, done.stdout[-2000:] + _last_lines(done.stderr)
    assert '"citation": "archivist-guide.pdf, page 3' in done.stdout
    pdf = tmp_path / "guide.pdf"  # the file came back byte for byte
    assert pdf.read_bytes() == (ROOT / "samples" / "archivist-guide.pdf").read_bytes()


@needs_jq_and_curl
def test_a_service_that_exits_at_start_stops_the_flow_at_once_with_its_status(
    tmp_path: Path,
) -> None:
    script = _service_block().replace("archivist serve ", "archivist serve --no-such-option ", 1)
    try:  # the block's `until curl ... healthz` would wait for the service until the timeout
        done = _run(script, tmp_path, 120)
    except subprocess.TimeoutExpired as waited:
        raise AssertionError("the block waited for a service that had exited") from waited
    assert done.returncode != 0
    assert "archivist serve exited by itself with status 2" in done.stderr, done.stderr
    assert "--no-such-option" in done.stderr  # the service's own error, as it wrote it
