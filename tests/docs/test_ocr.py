"""OCR in the parsers: scanned PDF pages and images become text Sections, read by a real
engine (Tesseract; RapidOCR where its extra is installed)."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from archivist.errors import DocumentParseError
from archivist.message import DataBlock, TextBlock
from archivist.rag import ImageParser, PDFParser, default_registry
from archivist.rag.document import Section
from archivist.rag.parser.ocr import (
    Ocr,
    OcrEngine,
    OcrResult,
    PageImage,
    TesseractEngine,
    ocr_metadata,
)
from archivist.rag.parser.ocr import reader as ocr_reader
from archivist.rag.parser.ocr.engine import join_cjk
from archivist.rag.parser.ocr.tesseract import read_tsv
from factories import make_pdf
from scans import (
    CHINESE,
    ENGLISH,
    encode,
    page_image,
    png_header_only,
    scanned_pdf,
)
from system_programs import needs_tesseract


def _text(sections: list[Section]) -> list[str]:
    return [s.content.text for s in sections if isinstance(s.content, TextBlock)]


def _squash(text: str) -> str:
    return "".join(text.split())


class CountingEngine(OcrEngine):
    """Tesseract, counting the pages it is really asked to read."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = TesseractEngine()
        self.calls = 0

    @property
    def identity(self) -> str:
        return "counting " + self.inner.identity

    def recognize(self, page: PageImage) -> OcrResult:
        self.calls += 1
        return self.inner.recognize(page)


@needs_tesseract
async def test_an_image_only_pdf_is_read_page_by_page_in_english_and_chinese() -> None:
    pdf = scanned_pdf([page_image(ENGLISH), page_image(CHINESE)])
    sections = await PDFParser(ocr="tesseract").parse(pdf, "scan.pdf")
    assert [s.metadata["page"] for s in sections] == [1, 2]
    assert all(s.metadata["ocr"] is True for s in sections)
    assert all(s.metadata["ocr_confidence"] > 0.8 for s in sections)
    english, chinese = _text(sections)
    assert "Claims must be filed within 14 days" in english
    assert "X-200" in english
    assert _squash(CHINESE) == _squash(chinese)
    assert " " not in chinese  # no spaces between Chinese characters


@needs_tesseract
async def test_a_mixed_pdf_keeps_its_text_pages_and_reads_its_scans_in_one_numbering() -> None:
    merged = pdfium.PdfDocument.new()
    merged.import_pages(pdfium.PdfDocument(make_pdf(["Typed page one about invoices."])))
    merged.import_pages(pdfium.PdfDocument(scanned_pdf([page_image(ENGLISH, noisy=True)])))
    merged.import_pages(pdfium.PdfDocument(make_pdf(["Typed page three about refunds."])))
    buffer = io.BytesIO()
    merged.save(buffer)
    sections = await PDFParser(ocr="tesseract").parse(buffer.getvalue(), "mixed.pdf")
    assert [s.metadata["page"] for s in sections] == [1, 2, 3]
    assert [bool(s.metadata.get("ocr")) for s in sections] == [False, True, False]
    assert "Typed page one" in _text(sections)[0]
    assert "within 14 days" in _text(sections)[1]


async def test_without_ocr_a_scan_says_ocr_is_off_and_a_text_pdf_is_unchanged() -> None:
    pdf = scanned_pdf([page_image("Nothing but a picture")])
    with pytest.raises(DocumentParseError, match=r"scan\.pdf: .*no extractable text.*OCR is off"):
        await PDFParser().parse(pdf, "scan.pdf")
    typed = make_pdf(["A typed page, read from its text layer."])
    with_ocr = await PDFParser(ocr=Ocr(CountingEngine())).parse(typed, "typed.pdf")
    assert [s.metadata for s in with_ocr] == [{"page": 1}]


async def test_with_no_engine_installed_a_scan_says_in_one_line_how_to_enable_ocr(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract command
    monkeypatch.setattr(ocr_reader, "_rapidocr", lambda languages, required: None)
    pdf = scanned_pdf([page_image("Nothing but a picture")])
    with pytest.raises(DocumentParseError) as raised:
        await PDFParser(ocr="auto").parse(pdf, "scan.pdf")
    message = str(raised.value)
    assert "\n" not in message
    assert "apt install tesseract-ocr" in message and "archivist[ocr]" in message
    assert ImageParser(ocr="auto").unread_text_hint == ocr_reader.OCR_HINT


async def test_an_engine_named_but_not_installed_fails_the_file_saying_what_to_install(
    tmp_path: Path,
) -> None:
    missing = Ocr(TesseractEngine(binary=str(tmp_path / "tesseract")))
    pdf = scanned_pdf([page_image("Nothing but a picture")])
    with pytest.raises(DocumentParseError, match=r"scan\.pdf: OCR of page 1: .*not installed"):
        await PDFParser(ocr=missing).parse(pdf, "scan.pdf")
    with pytest.raises(DocumentParseError, match=r"note\.png: OCR: .*not installed"):
        await ImageParser(ocr=missing).parse(encode(page_image("A note")), "note.png")


@needs_tesseract
@pytest.mark.parametrize(("fmt", "text"), [("PNG", ENGLISH), ("JPEG", CHINESE)])
async def test_an_image_keeps_its_picture_and_gains_its_text(fmt: str, text: str) -> None:
    data = encode(page_image(text, noisy=True).convert("RGB"), fmt)
    sections = await ImageParser(ocr="tesseract").parse(data, f"note.{fmt.lower()}")
    assert isinstance(sections[0].content, DataBlock)
    assert sections[1].metadata["ocr"] is True
    assert _squash(text) in _squash(_text(sections)[0]) or "within 14 days" in _text(sections)[0]


@needs_tesseract
async def test_a_transparent_screenshot_is_read_on_white() -> None:
    picture = page_image(ENGLISH, size=(1400, 500)).convert("LA")
    alpha = picture.getchannel("L").point(lambda v: 255 - v)  # text opaque, paper clear
    picture.putalpha(alpha)
    sections = await ImageParser(ocr="tesseract").parse(encode(picture), "shot.png")
    assert "X-200 pump" in _text(sections)[0]


@needs_tesseract
async def test_a_page_is_read_once_then_served_from_the_cache(tmp_path: Path) -> None:
    engine = CountingEngine()
    pdf = scanned_pdf([page_image(ENGLISH), page_image(ENGLISH)])  # two identical pages
    first = await PDFParser(ocr=Ocr(engine, cache_dir=tmp_path)).parse(pdf, "a.pdf")
    assert engine.calls == 1
    again = await PDFParser(ocr=Ocr(engine, cache_dir=tmp_path)).parse(pdf, "b.pdf")
    assert engine.calls == 1
    assert _text(again) == _text(first) and again[0].metadata == first[0].metadata

    class Other(CountingEngine):  # another engine (or version, or languages) reads again
        @property
        def identity(self) -> str:
            return "other " + self.inner.identity

    other = Other()
    await PDFParser(ocr=Ocr(other, cache_dir=tmp_path)).parse(pdf, "c.pdf")
    assert other.calls == 1
    rendered = Ocr(engine, cache_dir=tmp_path, dpi=150)  # another rendering of the page too
    await PDFParser(ocr=rendered).parse(pdf, "d.pdf")
    assert engine.calls == 2


def test_an_ocr_parser_pickles_for_the_parse_child_without_its_callback(tmp_path: Path) -> None:
    ocr = Ocr("tesseract", cache_dir=tmp_path, on_page=lambda *where: None)
    copy = pickle.loads(pickle.dumps(PDFParser(ocr=ocr)))
    assert copy.ocr.choice == "tesseract" and copy.ocr.on_page is None
    assert copy.ocr.cache.directory == tmp_path


async def test_a_30000_pixel_square_png_is_refused_before_any_pixel_is_decoded() -> None:
    engine = CountingEngine()
    with pytest.raises(DocumentParseError, match=r"huge\.png: image too large"):
        await ImageParser(ocr=Ocr(engine)).parse(png_header_only(30000, 30000), "huge.png")
    assert engine.calls == 0


async def test_a_truncated_jpeg_fails_naming_the_file() -> None:
    data = encode(page_image(ENGLISH).convert("RGB"), "JPEG")
    with pytest.raises(DocumentParseError, match=r"cut\.jpg: corrupt image"):
        await ImageParser(ocr=Ocr(CountingEngine())).parse(data[: len(data) // 2], "cut.jpg")


@needs_tesseract
async def test_large_pictures_are_scaled_down_to_the_pixel_budget_before_reading() -> None:
    seen: list[PageImage] = []

    class Watching(CountingEngine):
        def recognize(self, page: PageImage) -> OcrResult:
            seen.append(page)
            return super().recognize(page)

    ocr = Ocr(Watching(), max_pixels=2_000_000)
    image = page_image(ENGLISH, size=(3000, 1500), font_px=60)
    for fmt in ("PNG", "JPEG"):
        sections = await ImageParser(ocr=ocr).parse(encode(image.convert("RGB"), fmt), "x")
        assert seen[-1].width * seen[-1].height <= 2_000_000
        assert "14 days" in _text(sections)[0]
    pdf = scanned_pdf([page_image(ENGLISH)])  # A4 at 200 dpi: 3.9 million pixels
    await PDFParser(ocr=ocr).parse(pdf, "scan.pdf")
    assert seen[-1].width * seen[-1].height <= 2_000_000


def test_tesseract_output_becomes_paragraphs_without_noise_or_spaces_between_chinese() -> None:
    columns = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight"
    rows = [
        columns + "\tconf\ttext",
        "5\t1\t1\t1\t1\t1\t0\t100\t1\t40\t96\tClaims",
        "5\t1\t1\t1\t1\t2\t0\t100\t1\t40\t90\tare",
        "5\t1\t1\t2\t1\t1\t0\t160\t1\t40\t92\tdue.",  # close below: one paragraph
        "5\t1\t1\t3\t1\t1\t0\t220\t1\t40\t12\tee",  # a line of noise
        "5\t1\t1\t3\t1\t2\t0\t220\t1\t40\t56\t—",
        "5\t1\t2\t1\t1\t1\t0\t400\t1\t40\t80\t年度",  # far below: a new one
        "5\t1\t2\t1\t1\t2\t0\t400\t1\t40\t14\t体",  # unsure, in a sure line: kept
        "5\t1\t2\t1\t1\t3\t0\t400\t1\t40\t70\t检",
        "5\t1\t2\t1\t1\t4\t0\t400\t1\t40\t70\tin",
        "5\t1\t2\t1\t1\t5\t0\t400\t1\t40\t70\tMay",
        "5\t1\t3\t1\t1\t1\t0\t100\t1\t40\t70\tColumn",  # back up: the next column
    ]
    result = read_tsv("\n".join(rows))
    assert result.text == "Claims are due.\n\n年度体检 in May\n\nColumn"
    weights = [(6, 0.96), (3, 0.90), (4, 0.92), (2, 0.80), (1, 0.14), (1, 0.70), (2, 0.70)]
    weights += [(3, 0.70), (6, 0.70)]
    expected = sum(n * c for n, c in weights) / sum(n for n, _ in weights)
    assert result.confidence == pytest.approx(expected)
    assert join_cjk("二 零 二 四 年 A B") == "二零二四年 A B"


def test_a_low_confidence_read_says_so() -> None:
    assert ocr_metadata(OcrResult("text", 0.45)) == {
        "ocr": True,
        "ocr_confidence": 0.45,
        "ocr_low_confidence": True,
    }
    assert "ocr_low_confidence" not in ocr_metadata(OcrResult("text", 0.9))


@needs_tesseract
async def test_a_page_of_line_art_only_gives_no_text() -> None:
    from PIL import ImageDraw

    image = page_image("", size=(900, 200))
    draw = ImageDraw.Draw(image)
    for left in (20, 240, 460, 680):
        draw.rectangle((left, 60, left + 160, 120), outline=0, width=3)
    sections = await ImageParser(ocr="tesseract").parse(encode(image), "diagram.png")
    assert [type(s.content) for s in sections] == [DataBlock]


def test_the_registry_names_its_ocr_engine_so_a_change_reads_files_again() -> None:
    assert default_registry().identity == ""
    assert default_registry("off").identity == ""
    named = default_registry(Ocr(CountingEngine(), dpi=300)).identity
    assert named.startswith("ocr counting tesseract") and named.endswith("dpi 300")


def test_bad_ocr_settings_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="engine must be auto"):
        Ocr("easyocr")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dpi"):
        Ocr(dpi=2000)
    with pytest.raises(ValueError, match="languages"):
        Ocr(languages="eng")
    with pytest.raises(TypeError, match="ocr must be"):
        PDFParser(ocr=3)  # type: ignore[arg-type]


async def test_rapidocr_reads_the_same_pages() -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    pdf = scanned_pdf([page_image(ENGLISH), page_image(CHINESE)])
    sections = await PDFParser(ocr="rapidocr").parse(pdf, "scan.pdf")
    english, chinese = _text(sections)
    assert "within 14 days" in english
    assert _squash(CHINESE) == _squash(chinese)


class Saying(OcrEngine):
    """An engine that reads `text` on every page: for what Archivist does with an answer."""

    name = "saying"

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def identity(self) -> str:
        return f"saying {self.text}"

    def recognize(self, page: PageImage) -> OcrResult:
        return OcrResult(self.text, 0.9)


async def test_a_read_without_a_letter_or_digit_is_no_text() -> None:
    data = encode(page_image("x", size=(200, 100)))
    only_rules = await ImageParser(ocr=Ocr(Saying("— — | . ·"))).parse(data, "rules.png")
    assert [type(s.content) for s in only_rules] == [DataBlock]
    words = await ImageParser(ocr=Ocr(Saying("— 7 —"))).parse(data, "seven.png")
    assert _text(words) == ["— 7 —"]


def _page_with_picture(left: float, bottom: float, width: float, height: float) -> bytes:
    """A PDF page of 600 x 800 points with no text and one picture placed at the given box."""
    from PIL import Image

    document = pdfium.PdfDocument.new()
    page = document.new_page(600, 800)
    picture = pdfium.PdfImage.new(document)
    bitmap = pdfium.PdfBitmap.from_pil(Image.new("RGB", (40, 40), "white"))
    picture.set_bitmap(bitmap)
    picture.set_matrix(pdfium.PdfMatrix().scale(width, height).translate(left, bottom))
    page.insert_obj(picture)
    page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


async def test_only_the_part_of_a_picture_on_the_page_makes_it_a_scan() -> None:
    reads = Ocr(Saying("Read by OCR"))
    covering = _page_with_picture(0, 0, 600, 800)
    assert _text(await PDFParser(ocr=reads).parse(covering, "cover.pdf")) == ["Read by OCR"]
    # Ten times the page's area, but only a 60 x 800 strip of it on the page: not a scan.
    hanging = _page_with_picture(-5940, 0, 6000, 800)
    with pytest.raises(DocumentParseError, match="no extractable text"):
        await PDFParser(ocr=reads).parse(hanging, "strip.pdf")


@needs_tesseract
async def test_a_photo_stored_sideways_is_read_upright_by_its_exif_orientation() -> None:
    from PIL import Image

    sideways = page_image(ENGLISH, size=(1600, 700)).convert("RGB").rotate(90, expand=True)
    exif = Image.Exif()
    exif[0x0112] = 6  # "turn 90° clockwise to view", as a phone held upright writes it
    data = encode(sideways, "JPEG", exif=exif.tobytes())
    sections = await ImageParser(ocr="tesseract").parse(data, "photo.jpg")
    assert "X-200 pump covers parts" in _text(sections)[0]


@pytest.mark.parametrize(
    ("options", "argument", "message"),
    [
        (
            {"engine": "easyocr"},
            "engine",
            "engine must be auto, tesseract or rapidocr, got 'easyocr'",
        ),
        (
            {"languages": []},
            "languages",
            "languages must be a non-empty sequence of language names",
        ),
        ({"languages": "eng"}, "languages", "languages must be a non-empty sequence"),
        ({"dpi": 35}, "dpi", "dpi must be from 36 to 600, got 35"),
        ({"dpi": 601}, "dpi", "dpi must be from 36 to 600, got 601"),
    ],
)
def test_a_bad_ocr_setting_is_refused_naming_it(
    options: dict[str, object], argument: str, message: str
) -> None:
    from archivist.errors import InvalidArgumentError
    from archivist.rag.parser.ocr import Ocr

    with pytest.raises(InvalidArgumentError) as refused:
        Ocr(**options)  # type: ignore[arg-type]
    assert refused.value.argument == argument
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("dpi", [36, 600])
def test_the_dpi_bounds_are_allowed(dpi: int) -> None:
    from archivist.rag.parser.ocr import Ocr

    assert Ocr(engine="auto", dpi=dpi).dpi == dpi
