"""A machine with Python and nothing from the system: `archivist serve` starts with its
defaults and reads scans with RapidOCR (installed by the `ocr` extra, as in `all`), and with
no OCR engine at all it still starts and a scan is skipped with one line saying how to have
it read. `archivist doctor` on such machines: tests/cli/test_cli_doctor.py.

Each command runs in a fresh interpreter whose `PATH` holds no system program (so no
`tesseract`), and where an extra is to be missing its modules are set to None in
`sys.modules`, as on an install without it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from child_process import wait_ready
from factories import make_scanned_pdf

pytestmark = pytest.mark.skipif(os.name != "posix", reason="PATH and processes of POSIX")

# Runs `archivist ARGV` with the modules named in the first argument (comma-separated, may be
# empty) made unimportable.
WITHOUT = """
import sys
for name in filter(None, sys.argv[1].split(",")):
    sys.modules[name] = None
from archivist.cli.main import main
sys.exit(main(sys.argv[2:]))
"""
NO_OCR_ENGINE = "rapidocr_onnxruntime"
LINES = ["The boiler is serviced every October.", "Ask Ann Okafor at the front desk."]


def environment(home: Path, empty_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHIVIST_")}
    return {**env, "ARCHIVIST_HOME": str(home), "PATH": str(empty_dir), "COLUMNS": "80"}


def archivist(
    home: Path, empty_dir: Path, *argv: str, hidden: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, hidden, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment(home, empty_dir),
    )


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(home: Path, empty_dir: Path, hidden: str = "") -> Iterator[tuple[str, Path]]:
    """`archivist serve` with its defaults until the block ends; yields its URL and log.
    Waiting for it to answer fails at once, with its log, if it exits."""
    port = free_port()
    log = home.parent / "serve.log"
    home.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", WITHOUT, hidden, "serve", "--port", str(port)],
            env=environment(home, empty_dir),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_ready(process, "archivist serve", answers, log, timeout=120)
        yield url, log
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def new_key(home: Path, empty_dir: Path) -> str:
    done = archivist(home, empty_dir, "keys", "create", "--tenant", "acme")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def upload_and_wait(url: str, key: str, path: Path) -> dict:  # type: ignore[type-arg]
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
    ) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "scans"}).status_code == 201
        files = [("files", (path.name, path.read_bytes(), "application/pdf"))]
        response = http.post("/v1/knowledge-bases/scans/documents", files=files)
        assert response.status_code == 202, response.text
        [item] = response.json()["items"]
        deadline = time.monotonic() + 180
        while True:
            document = http.get(f"/v1/knowledge-bases/scans/documents/{item['id']}").json()
            if document["status"] in ("ready", "failed"):
                return document  # type: ignore[no-any-return]
            assert time.monotonic() < deadline, document
            time.sleep(0.2)


def search(url: str, key: str, query: str) -> list[dict]:  # type: ignore[type-arg]
    response = httpx.post(
        f"{url}/v1/knowledge-bases/scans/search",
        json={"query": query, "top_k": 1},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return response.json()["hits"]  # type: ignore[no-any-return]


@pytest.fixture
def scan(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "boiler-scan.pdf"
    path.parent.mkdir()
    path.write_bytes(make_scanned_pdf([LINES]))
    return path


@pytest.fixture
def empty_dir(tmp_path: Path) -> Path:
    """A PATH with no programs on it."""
    path = tmp_path / "no-programs"
    path.mkdir()
    return path


def test_serve_without_tesseract_starts_and_reads_a_scan_with_rapidocr(
    tmp_path: Path, empty_dir: Path, scan: Path
) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    home = tmp_path / "home"
    key = new_key(home, empty_dir)
    with serving(home, empty_dir) as (url, log):
        started = log.read_text()
        assert "archivist: OCR: RapidOCR (auto: Tesseract is not installed)" in started
        loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
        assert f"archivist: event loop: {loop}" in started
        assert "archivist: answers: none (Ask shows the passages found): no chat model" in started
        types = httpx.get(
            f"{url}/v1/supported-types", headers={"Authorization": f"Bearer {key}"}
        ).json()
        assert types["ocr"]["setting"] == "auto" and types["ocr"]["engine"] == "rapidocr"
        assert ".png" in types["extensions"]
        document = upload_and_wait(url, key, scan)
        assert document["status"] == "ready", document
        [hit] = search(url, key, "when is the boiler serviced")
        assert "serviced every October" in hit["text"] and hit["metadata"]["ocr"] is True


def test_serve_with_no_ocr_engine_starts_and_a_scan_says_how_to_read_it(
    tmp_path: Path, empty_dir: Path, scan: Path
) -> None:
    home = tmp_path / "home"
    key = new_key(home, empty_dir)
    with serving(home, empty_dir, hidden=NO_OCR_ENGINE) as (url, log):
        started = log.read_text()
        assert "OCR: none (auto: Tesseract is not installed and RapidOCR is not" in started
        assert "Traceback" not in started
        types = httpx.get(
            f"{url}/v1/supported-types", headers={"Authorization": f"Bearer {key}"}
        ).json()
        assert types["ocr"]["engine"] is None and ".png" not in types["extensions"]
        document = upload_and_wait(url, key, scan)
        assert document["status"] == "failed"
        assert "pip install 'archivist[ocr]'" in document["error"]
        assert "tesseract-ocr" in document["error"]


def test_index_without_tesseract_reads_a_scanned_pdf_with_rapidocr(
    tmp_path: Path, empty_dir: Path, scan: Path
) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    home = tmp_path / "home"
    done = archivist(home, empty_dir, "index", str(scan.parent), "--kb", "scans")
    assert done.returncode == 0, done.stderr
    assert "1 page read by OCR" in done.stdout
    found = archivist(home, empty_dir, "search", "when is the boiler serviced", "--kb", "scans")
    assert found.returncode == 0 and "serviced every October" in found.stdout


def test_index_with_no_ocr_engine_skips_a_scan_in_one_line_saying_how_to_read_it(
    tmp_path: Path, empty_dir: Path, scan: Path
) -> None:
    (scan.parent / "notes.md").write_text("# Notes\n\nThe cafeteria opens at nine.\n")
    home = tmp_path / "home"
    done = archivist(
        home, empty_dir, "index", str(scan.parent), "--kb", "scans", hidden=NO_OCR_ENGINE
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(said) == 1, said
    assert said[0].startswith("skipped ") and "boiler-scan.pdf" in said[0]
    assert "pip install 'archivist[ocr]'" in said[0] and "tesseract-ocr" in said[0]
    assert "Traceback" not in done.stderr


def test_serve_settings_that_cannot_work_exit_2_in_one_line(
    tmp_path: Path, empty_dir: Path
) -> None:
    import socket

    port = str(free_port())
    named = archivist(tmp_path / "home", empty_dir, "serve", "--ocr", "tesseract", "--port", port)
    assert named.returncode == 2
    lines = named.stderr.strip().splitlines()
    assert len(lines) == 1, named.stderr
    assert lines[0].startswith("archivist: error: --ocr tesseract: the tesseract command is not")
    assert "apt install tesseract-ocr" in lines[0]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = str(taken.getsockname()[1])
        done = archivist(tmp_path / "home", empty_dir, "serve", "--port", busy)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"archivist: error: --port {busy}: cannot listen on 127.0.0.1: Address already in use "
        "(is another `archivist serve` running? give another --port)"
    ]
