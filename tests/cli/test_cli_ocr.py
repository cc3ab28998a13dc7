"""`archivist index` and `archivist chunk` on scans: read by OCR, counted, findable; and
the one-line outcomes without an engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run

from scans import ENGLISH, FACTS, page_image, scan_folder, scanned_pdf
from system_programs import needs_tesseract


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@needs_tesseract
def test_a_folder_of_scans_indexes_whole_and_each_fact_finds_its_file_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    docs = scan_folder(tmp_path / "docs")
    code, out, err = run(capsys, "index", str(docs), "--kb", "scans", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["failed"] == 0 and summary["skipped"] == 0 and summary["indexed"] == 6
    assert summary["ocr_pages"] == 4  # two PDF pages, the note, the notice
    for query, (source, page) in FACTS.items():
        code, out, err = run(capsys, "search", query, "--kb", "scans", "-k", "1", "--json")
        assert code == 0, err
        [hit] = json.loads(out)
        assert (hit["source"], hit["page"]) == (source, page), query

    code, out, _ = run(capsys, "index", str(docs), "--kb", "scans", "--rebuild", "-y")
    assert code == 0
    assert "(4 pages read by OCR)" in out  # from the cache: the text summary counts them too
    assert (home / "ocr-cache" / "ocr.sqlite3").exists()


@needs_tesseract
def test_turning_ocr_on_reads_again_a_pdf_indexed_without_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import io

    import pypdfium2 as pdfium

    from factories import make_pdf

    merged = pdfium.PdfDocument.new()
    merged.import_pages(pdfium.PdfDocument(make_pdf(["A typed page about refunds."])))
    long_scan = page_image(" ".join([ENGLISH] * 7))  # a page of more than one chunk
    merged.import_pages(pdfium.PdfDocument(scanned_pdf([long_scan])))
    buffer = io.BytesIO()
    merged.save(buffer)
    (tmp_path / "mixed.pdf").write_bytes(buffer.getvalue())
    code, out, _ = run(capsys, "index", str(tmp_path / "mixed.pdf"), "--ocr", "off", "--json")
    assert code == 0 and json.loads(out)["indexed"] == 1 and json.loads(out)["ocr_pages"] == 0
    code, out, _ = run(capsys, "index", str(tmp_path / "mixed.pdf"), "--json")
    summary = json.loads(out)
    assert code == 0 and summary["updated"] == 1
    assert summary["ocr_pages"] == 1 and summary["chunks"] >= 3  # pages, not chunks
    code, out, _ = run(capsys, "index", str(tmp_path / "mixed.pdf"), "--json")
    assert json.loads(out)["unchanged"] == 1


@needs_tesseract
def test_chunk_shows_which_text_ocr_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pdf = tmp_path / "scan.pdf"
    pdf.write_bytes(scanned_pdf([page_image("Invoice 2024-0719 is due on 30 June.")]))
    code, out, err = run(capsys, "chunk", str(pdf))
    assert code == 0, err
    assert "page=1, ocr=True, ocr_confidence=" in out
    assert "Invoice 2024-0719 is due on 30 June." in out


def test_with_ocr_off_scans_fail_or_are_skipped_saying_why_and_texts_still_index(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = scan_folder(tmp_path / "docs", chinese_scans=False)  # never read here
    code, out, _ = run(capsys, "index", str(docs), "--ocr", "off", "--json")
    assert code == 1  # the image-only PDF failed
    summary = json.loads(out)
    assert summary["indexed"] == 3 and summary["ocr_pages"] == 0
    [failure] = summary["failures"]
    assert failure["path"].endswith("scan.pdf") and "OCR is off" in failure["error"]
    skipped = {Path(s["path"]).name: s["reason"] for s in summary["skipped_files"]}
    assert set(skipped) == {"note.png", "notice.jpg"}
    assert all("text-only" in reason and "OCR is off" in reason for reason in skipped.values())


def test_an_engine_named_but_missing_is_a_usage_error_saying_what_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract command
    (tmp_path / "a.txt").write_text("text\n")
    code, out, err = run(capsys, "index", str(tmp_path / "a.txt"), "--ocr", "tesseract")
    assert code == 2
    assert "--ocr tesseract: the tesseract command is not installed" in err
    assert "apt install tesseract-ocr" in err and "Traceback" not in err + out
    code, _, err = run(capsys, "index", str(tmp_path / "a.txt"), "--ocr-languages", "eng;rm")
    assert code == 2 and "--ocr-languages" in err and "eng+chi_sim" in err


def test_the_cli_offers_the_library_s_engines_and_languages() -> None:
    from archivist.options import OCR, OCR_LANGUAGES
    from archivist.rag.parser import ocr

    assert OCR.choices == ("auto", "off", *ocr.ENGINES)
    assert OCR_LANGUAGES.default == ocr.DEFAULT_LANGUAGES
