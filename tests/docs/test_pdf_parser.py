import io
from pathlib import Path

import pytest

from archivist.message import TextBlock
from archivist.rag import PDFParser
from factories import make_pdf

PAGES = [
    "Report on sleep\nCats sleep 12-16 hours per day.",
    "Page two talks about dogs.",
    "猫每天睡十二到十六个小时。\nMixed 中文 and English.",
]


async def test_one_section_per_page_with_page_numbers_from_one(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf(PAGES))
    sections = await PDFParser().parse(file=str(path), filename="report.pdf")
    assert [s.metadata for s in sections] == [{"page": 1}, {"page": 2}, {"page": 3}]
    assert all(s.source == "report.pdf" for s in sections)
    texts = [s.content.text for s in sections if isinstance(s.content, TextBlock)]
    assert texts == [
        "Report on sleep\nCats sleep 12-16 hours per day.",
        "Page two talks about dogs.",
        "猫每天睡十二到十六个小时。\nMixed 中文 and English.",
    ]


async def test_bytes_and_path_give_the_same_sections(tmp_path: Path) -> None:
    data = make_pdf(PAGES)
    path = tmp_path / "report.pdf"
    path.write_bytes(data)
    with open(path, "rb") as fh:
        from_bytes = await PDFParser().parse(file=fh.read(), filename="report.pdf")
    from_path = await PDFParser().parse(file=str(path), filename="report.pdf")
    assert [s.content.text for s in from_bytes] == [s.content.text for s in from_path]  # type: ignore[union-attr]


async def test_blank_pages_are_skipped_but_keep_numbering() -> None:
    sections = await PDFParser().parse(make_pdf(["first", "", "third"]), "gaps.pdf")
    assert [s.metadata["page"] for s in sections] == [1, 3]


async def test_pdf_without_any_text_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"scan\.pdf.*no extractable text"):
        await PDFParser().parse(make_pdf(["", ""]), "scan.pdf")


async def test_missing_path_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.pdf"):
        await PDFParser().parse(file=str(tmp_path / "nope.pdf"), filename="nope.pdf")


async def test_encrypted_pdf_names_the_file() -> None:
    data = make_pdf(["secret"], encrypt_password="hunter2")
    with pytest.raises(ValueError, match=r"locked\.pdf.*encrypted"):
        await PDFParser().parse(data, "locked.pdf")


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9])
async def test_truncated_pdf_is_a_value_error(cut: float) -> None:
    data = make_pdf(PAGES)
    with pytest.raises(ValueError, match="cut.pdf"):
        await PDFParser().parse(data[: int(len(data) * cut)], "cut.pdf")


async def test_not_a_pdf_and_empty_file_are_value_errors() -> None:
    with pytest.raises(ValueError, match=r"fake\.pdf.*not a PDF"):
        await PDFParser().parse(b"just some text pretending", "fake.pdf")
    with pytest.raises(ValueError, match=r"empty\.pdf.*empty"):
        await PDFParser().parse(b"", "empty.pdf")


async def test_pdf_with_garbage_body_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="junk.pdf"):
        await PDFParser().parse(b"%PDF-1.7\n" + bytes(range(256)) * 40, "junk.pdf")


async def test_many_pages_stream_one_at_a_time() -> None:
    data = make_pdf([f"page number {i}" for i in range(1, 61)])
    parser = PDFParser()
    seen = []
    for section in parser.iter_sections(data, "long.pdf"):
        seen.append(section.metadata["page"])
        if len(seen) == 3:
            break  # a generator: stopping early closes the document without reading on
    assert seen == [1, 2, 3]
    sections = await parser.parse(io.BytesIO(data).getvalue(), "long.pdf")
    assert len(sections) == 60
    assert sections[59].content.text == "page number 60"  # type: ignore[union-attr]


async def test_scans_with_no_ocr_engine_are_unread_scans_saying_how_to_read_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the file's fault: a `ScansUnreadError` (ingest skips the file), where a PDF
    without text and without scans stays a plain parse error."""
    import sys

    from archivist.errors import DocumentParseError, ScansUnreadError
    from archivist.rag.parser.ocr import Ocr
    from factories import make_scanned_pdf

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    parser = PDFParser(ocr=Ocr("auto"))
    with pytest.raises(ScansUnreadError, match=r"scan\.pdf: .*pip install 'archivist\[ocr\]'"):
        await parser.parse(make_scanned_pdf([["A scanned page."], ["Another."]]), "scan.pdf")
    with pytest.raises(DocumentParseError) as blank:
        await parser.parse(make_pdf(["", ""]), "blank.pdf")
    assert not isinstance(blank.value, ScansUnreadError)
    with pytest.raises(DocumentParseError) as off:
        await PDFParser(ocr="off").parse(make_scanned_pdf([["A scanned page."]]), "off.pdf")
    assert not isinstance(off.value, ScansUnreadError)  # OCR turned off: the user's choice


async def test_a_pdf_of_text_and_scans_with_no_ocr_engine_gives_its_text_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    import pypdfium2 as pdfium

    from archivist.rag.parser.ocr import Ocr
    from factories import make_scanned_pdf

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    document = pdfium.PdfDocument(make_pdf(["Ferries leave the harbour every hour."]))
    document.import_pages(pdfium.PdfDocument(make_scanned_pdf([["A scanned page."]])))
    buffer = io.BytesIO()
    document.save(buffer)
    sections = await PDFParser(ocr=Ocr("auto")).parse(buffer.getvalue(), "mixed.pdf")
    assert [s.metadata["page"] for s in sections] == [1]
    assert "Ferries leave" in sections[0].content.text  # type: ignore[union-attr]
