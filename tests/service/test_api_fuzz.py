"""schemathesis against a real service: every operation of /openapi.json, fuzzed with a
valid key and with none, answers within its documented statuses and schemas (problem+json
for errors) and never with a server error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from service_helpers import client, wait_final

SCHEMATHESIS = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
MAX_EXAMPLES = 10
"""Per operation and phase: a bounded run in the fast set; the heavy run takes
ARCHIVIST_FUZZ_EXAMPLES (default 100)."""
RUNS = [
    pytest.param(MAX_EXAMPLES, id="quick"),
    pytest.param(
        int(os.environ.get("ARCHIVIST_FUZZ_EXAMPLES", "100")), id="long", marks=pytest.mark.heavy
    ),
]

pytestmark = pytest.mark.skipif(SCHEMATHESIS is None, reason="schemathesis is not installed")


def run_schemathesis(
    url: str, config: Path, examples: int, *headers: str
) -> subprocess.CompletedProcess[str]:
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "run",
        f"{url}/openapi.json",
        "--checks",
        "all",
        # a schema-valid upload may still be refused for what no schema can say (an empty
        # file, an unknown extension), and multipart parsing ignores unknown extra fields;
        # every check on the responses (status, schema, content type, headers) runs
        "--exclude-checks",
        "positive_data_acceptance,negative_data_rejection",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(examples),
        "--seed",
        "18",
        "--no-color",
        "--request-timeout",
        "60",
    ]
    for header in headers:
        command += ["-H", header]
    return subprocess.run(  # in the config's folder: its caches stay out of the repository
        command, capture_output=True, text=True, timeout=900, check=False, cwd=config.parent
    )


@pytest.mark.parametrize("examples", RUNS)
@pytest.mark.parametrize("with_key", [True, False], ids=["valid-key", "no-key"])
def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    service, tmp_path: Path, with_key: bool, examples: int
) -> None:
    key = service.keys["initech"]
    with client(service.url, key) as http:
        http.post("/v1/knowledge-bases", json={"name": "fuzz"})
        upload = http.post(
            "/v1/knowledge-bases/fuzz/documents",
            files={"files": ("notes.txt", b"Fuzzing notes: the archive keeps invoices.\n")},
        )
        assert upload.status_code == 202
        doc = upload.json()["items"][0]["id"]
        wait_final(http, "fuzz", [doc])
    config = tmp_path / "schemathesis.toml"
    config.write_text(  # the document operations address a real document
        "[[operations]]\n"
        'include-path-regex = "document_id"\n'
        + (f'headers = {{ Authorization = "Bearer {key}" }}\n' if with_key else "")
        + f'parameters = {{ "path.name" = "fuzz", "path.document_id" = "{doc}" }}\n'
    )
    headers = [f"Authorization: Bearer {key}"] if with_key else []
    result = run_schemathesis(service.url, config, examples, *headers)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "Tested: " in result.stdout
