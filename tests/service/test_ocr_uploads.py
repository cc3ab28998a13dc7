"""The service reads scans: uploaded image-only PDFs and images are OCRed in the parse
sandbox, found by their facts, and bounded by its limits; with OCR off images are refused
saying why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from service_helpers import client, new_key, running_service, wait_final

from archivist.errors import ConfigurationError
from archivist.service import ServiceSettings
from scans import ENGLISH, FACTS, page_image, scan_folder, scanned_pdf
from system_programs import needs_tesseract


def _upload(http, kb: str, paths: list[Path]):  # type: ignore[no-untyped-def]
    files = [("files", (p.name, p.read_bytes())) for p in paths]
    return http.post(f"/v1/knowledge-bases/{kb}/documents", files=files)


@needs_tesseract
def test_uploaded_scans_are_read_and_each_fact_finds_its_file_first(tmp_path: Path) -> None:
    settings = ServiceSettings(home=tmp_path / "home")
    key = new_key(settings, "acme")
    docs = scan_folder(tmp_path / "docs")
    with running_service(settings) as url, client(url, key) as http:
        assert ".png" in http.get("/v1/supported-types").json()["extensions"]
        assert http.post("/v1/knowledge-bases", json={"name": "scans"}).status_code == 201
        response = _upload(http, "scans", sorted(docs.iterdir()))
        assert response.status_code == 202, response.text
        documents = wait_final(http, "scans")
        assert [d["error"] for d in documents if d["status"] != "ready"] == []
        for query, (source, page) in FACTS.items():
            hits = http.post(
                "/v1/knowledge-bases/scans/search", json={"query": query, "top_k": 1}
            ).json()["hits"]
            assert hits[0]["filename"] == source, query
            assert hits[0]["metadata"]["ocr"] is True
            if page is not None:
                assert hits[0]["citation"].startswith(f"{source}, page {page}")
    assert list((settings.service_dir / "ocr").glob("ocr.sqlite3"))  # the parse child's cache


@needs_tesseract
def test_a_long_scan_is_stopped_by_the_sandbox_wall_limit_naming_it(tmp_path: Path) -> None:
    settings = ServiceSettings(home=tmp_path / "home", parse_wall_seconds=4)
    key = new_key(settings, "acme")
    pdf = tmp_path / "long-scan.pdf"
    pdf.write_bytes(scanned_pdf([page_image(f"Page {n}. {ENGLISH}") for n in range(60)]))
    with running_service(settings) as url, client(url, key) as http:
        http.post("/v1/knowledge-bases", json={"name": "long"})
        assert _upload(http, "long", [pdf]).status_code == 202
        [document] = wait_final(http, "long", timeout=120)
        assert document["status"] == "failed"
        assert "longer than the 4 s time limit" in document["error"]
        assert http.get("/healthz").status_code == 200


def test_with_ocr_off_an_image_is_refused_saying_why(tmp_path: Path) -> None:
    settings = ServiceSettings(home=tmp_path / "home", ocr="off")
    key = new_key(settings, "acme")
    with running_service(settings) as url, client(url, key) as http:
        http.post("/v1/knowledge-bases", json={"name": "pics"})
        png = tmp_path / "scan.png"
        page_image("A scanned note").save(png)
        response = _upload(http, "pics", [png])
        assert response.status_code == 415
        detail = response.json()["detail"]
        assert "scan.png" in detail and "OCR is off" in detail and "text only" in detail
        assert ".png" not in http.get("/v1/supported-types").json()["extensions"]


def test_an_engine_named_but_missing_stops_the_service_saying_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without the command
    with pytest.raises(ConfigurationError, match="--ocr tesseract: the tesseract command is not"):
        ServiceSettings(home=tmp_path, ocr="tesseract").ocr_reader()
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    with pytest.raises(ConfigurationError, match=r"--ocr rapidocr: .*archivist\[ocr\]"):
        ServiceSettings(home=tmp_path, ocr="rapidocr").ocr_reader()


def test_auto_takes_rapidocr_without_tesseract_and_gives_it_memory_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    from archivist.rag.parser.ocr import RapidOcrEngine

    monkeypatch.setenv("PATH", str(tmp_path))
    settings = ServiceSettings(home=tmp_path)  # the default parse limit, 512 MiB
    reader = settings.ocr_reader()
    assert reader is not None and isinstance(reader.engine, RapidOcrEngine)
    assert settings.ocr_summary() == "RapidOCR (auto: Tesseract is not installed)"
    limits = settings.parse_limits
    assert limits.memory_bytes == 512 * 1024 * 1024
    assert limits.ocr_memory_bytes == RapidOcrEngine.memory_mb * 1024 * 1024
    assert ServiceSettings(home=tmp_path, ocr="off").parse_limits.ocr_memory_bytes is None


def test_auto_with_no_engine_starts_without_ocr_saying_how_to_add_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    settings = ServiceSettings(home=tmp_path)
    reader = settings.ocr_reader()
    assert reader is not None and reader.engine is None
    summary = settings.ocr_summary()
    assert summary.startswith("none (auto: Tesseract is not installed and RapidOCR is not")
    assert "pip install 'archivist[ocr]'" in summary and "tesseract-ocr" in summary
    assert settings.parse_limits.ocr_memory_bytes is None
