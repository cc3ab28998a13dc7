"""The service's parts without HTTP load without FastAPI: the operations, the state, the
runtime and the indexer are plain Python, which the worker, the CLI and tests use as they are."""

from __future__ import annotations

import subprocess
import sys

import pytest

WITHOUT_HTTP = [
    "archivist.service.operations.documents",
    "archivist.service.operations.knowledge_bases",
    "archivist.service.operations.search",
    "archivist.service.operations.sessions",
    "archivist.service.chat",
    "archivist.service.state",
    "archivist.service.runtime",
    "archivist.service.indexing.indexer",
]


@pytest.mark.parametrize("module", WITHOUT_HTTP)
def test_a_part_without_http_does_not_load_fastapi(module: str) -> None:
    probe = f"import sys, {module}; print('fastapi' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_probe_sees_fastapi_where_it_is_loaded() -> None:
    probe = "import sys, archivist.service.app; print('fastapi' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "True", done.stderr
