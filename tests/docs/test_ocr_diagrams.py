"""OCR of diagrams and screenshots: a few small words in boxes joined by lines, as in the
shipped samples/pipeline.png, are read by both engines; with Tesseract by a second, sparse
read of the picture without its ruling lines where its page layout finds nothing."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from archivist import SAMPLES
from archivist.message import DataBlock, TextBlock
from archivist.rag import ImageParser
from archivist.rag.parser.ocr import PageImage
from archivist.rag.parser.ocr.engine import Line, page_text
from archivist.rag.parser.ocr.tesseract import read_tsv, sparse_picture
from scans import LATIN_FONT, encode
from system_programs import needs_tesseract

WORDS = ["parse", "chunk", "embed", "store"]


def diagram(words: list[str], font_px: int = 13) -> Image.Image:
    """Small words in light-blue boxes with black borders, joined by lines (880 x 180 for four
    words, as a slide's diagram exported at screen resolution)."""
    font = ImageFont.truetype(str(LATIN_FONT), font_px)
    image = Image.new("RGB", (220 * len(words), 180), "white")
    draw = ImageDraw.Draw(image)
    for index, word in enumerate(words):
        left = 20 + 220 * index
        draw.rectangle((left, 60, left + 160, 120), fill=(220, 230, 255), outline=0, width=3)
        if index:
            draw.line((left - 60, 90, left, 90), fill=0, width=3)
        draw.text((left + 80, 90), word, fill=0, font=font, anchor="mm")
    return image


async def _read(engine: str, data: bytes) -> list[str]:
    sections = await ImageParser(ocr=engine).parse(data, "diagram.png")
    assert isinstance(sections[0].content, DataBlock)
    return [s.content.text for s in sections if isinstance(s.content, TextBlock)]


@needs_tesseract
async def test_tesseract_reads_small_words_in_boxes() -> None:
    assert await _read("tesseract", encode(diagram(WORDS))) == ["parse chunk embed store"]
    words = ["upload", "queue", "index", "search"]
    assert await _read("tesseract", encode(diagram(words))) == ["upload queue index search"]


@needs_tesseract
async def test_tesseract_reads_the_shipped_pipeline_picture() -> None:
    data = (SAMPLES / "pipeline.png").read_bytes()
    assert await _read("tesseract", data) == ["parse chunk embed store"]


async def test_rapidocr_reads_small_words_in_boxes() -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    assert await _read("rapidocr", encode(diagram(WORDS))) == ["parse chunk embed store"]
    data = (SAMPLES / "pipeline.png").read_bytes()
    assert await _read("rapidocr", data) == ["parse chunk embed store"]


def _page(image: Image.Image) -> PageImage:
    gray = image.convert("L")
    return PageImage(gray.width, gray.height, gray.tobytes())


def _texture() -> Image.Image:
    """Wavy stripes over the whole picture: no letters, but Tesseract's sparse mode reads
    some in them."""
    rows, columns = np.mgrid[0:600, 0:800]
    waves = (np.sin(columns / 3) + np.sin(rows / 5)) * 60 + 128
    return Image.fromarray(waves.clip(0, 255).astype(np.uint8))


def _ellipses() -> Image.Image:
    image = Image.new("L", (800, 600), 200)
    draw = ImageDraw.Draw(image)
    for index in range(40):
        left, top = (index * 197) % 760, (index * 131) % 560
        size = 10 + (index * 37) % 110
        draw.ellipse((left, top, left + size, top + size), fill=(index * 53) % 256)
    return image


def test_the_second_read_keeps_the_letters_and_drops_the_ruling_lines() -> None:
    picture = diagram(WORDS)
    cleaned = sparse_picture(_page(picture))
    assert cleaned is not None
    assert (cleaned.width, cleaned.height) == (2 * picture.width, 2 * picture.height)  # small
    pixels = np.frombuffer(cleaned.pixels, dtype=np.uint8).reshape(cleaned.height, cleaned.width)
    assert set(np.unique(pixels)) <= {0, 255}  # ink on white: the boxes' fill is gone
    border_row = pixels[2 * 61, 2 * 30 : 2 * 170]  # along the first box's top border
    assert (border_row == 255).all()
    connector = pixels[2 * 90, 2 * 185 : 2 * 235]  # the line between the first two boxes
    assert (connector == 255).all()
    words = pixels[2 * 80 : 2 * 100, 2 * 60 : 2 * 140]  # the first word, inside its box
    assert (words == 0).sum() > 100

    large = Image.new("L", (1100, 1000), 255)  # over a million pixels: kept at its size
    ImageDraw.Draw(large).text((100, 100), "a few words", fill=0, font=ImageFont.load_default())
    kept = sparse_picture(_page(large))
    assert kept is not None and (kept.width, kept.height) == (1100, 1000)


def test_no_second_read_of_a_picture_that_is_not_sparse_text() -> None:
    assert sparse_picture(_page(_texture())) is None  # ink over much of it
    assert sparse_picture(_page(_ellipses())) is None
    assert sparse_picture(_page(Image.new("L", (300, 200), 255))) is None  # blank
    only_lines = Image.new("L", (900, 200), 255)
    for left in (20, 240, 460, 680):
        ImageDraw.Draw(only_lines).rectangle((left, 60, left + 160, 120), outline=0, width=3)
    assert sparse_picture(_page(only_lines)) is None  # the boxes alone: nothing left


@needs_tesseract
async def test_tesseract_reads_no_letters_into_textures_and_shapes() -> None:
    for picture in (_texture(), _ellipses()):
        assert await _read("tesseract", encode(picture)) == []


def _tsv(*words: tuple[int, int, int, str]) -> str:
    """Tesseract TSV of single-word lines: (left, top, confidence, word), one block each."""
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight"
    rows = [header + "\tconf\ttext"]
    for block, (left, top, confidence, word) in enumerate(words, start=1):
        rows.append(f"5\t1\t{block}\t1\t1\t1\t{left}\t{top}\t40\t16\t{confidence}\t{word}")
    return "\n".join(rows)


def test_a_sparse_read_is_put_in_rows_left_to_right() -> None:
    tsv = _tsv(
        (300, 92, 90, "chunk"),
        (700, 90, 90, "store"),
        (40, 95, 90, "parse"),  # a little lower (a descender), still the same row
        (500, 91, 90, "embed"),
        (40, 300, 90, "legend"),
        (300, 301, 20, "ee"),  # noise: below the line confidence, left out
    )
    assert read_tsv(tsv, sparse=True).text == "parse chunk embed store\n\nlegend"
    # the same output read as a page keeps Tesseract's order
    assert read_tsv(tsv).text.split()[:2] == ["chunk", "store"]


def test_lines_side_by_side_are_one_paragraph() -> None:
    beside = [Line("parse", 88, 104), Line("chunk", 84, 98), Line("embed", 84, 98)]
    assert page_text(beside) == "parse chunk embed"
    columns = [Line("left column", 400, 420), Line("right column", 100, 120)]
    assert page_text(columns) == "left column\n\nright column"


def _engine() -> str:
    from archivist.rag.parser.ocr import Ocr

    if Ocr("auto").engine is None:
        pytest.skip("no OCR engine: install Tesseract or the ocr extra")
    return "auto"


async def test_pictures_in_decks_documents_and_workbooks_are_read_like_image_files() -> None:
    import io

    import openpyxl
    from docx import Document
    from openpyxl.drawing.image import Image as SheetImage
    from pptx import Presentation
    from pptx.util import Inches

    from archivist.rag import ExcelParser, PPTParser, WordParser

    engine = _engine()
    picture = encode(diagram(WORDS))

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Pipeline"
    slide.shapes.add_picture(io.BytesIO(picture), Inches(1), Inches(2))
    pptx = io.BytesIO()
    deck.save(pptx)

    document = Document()
    document.add_heading("Pipeline", 1)
    document.add_picture(io.BytesIO(picture))
    docx = io.BytesIO()
    document.save(docx)

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet["A1"] = "stage"
    sheet.add_image(SheetImage(io.BytesIO(picture)), "C3")
    xlsx = io.BytesIO()
    workbook.save(xlsx)

    for sections, where in (
        (await PPTParser(ocr=engine).parse(pptx.getvalue(), "deck.pptx"), {"slide": 1}),
        (await WordParser(ocr=engine).parse(docx.getvalue(), "doc.docx"), {}),
        (
            await ExcelParser(include_image=True, ocr=engine).parse(xlsx.getvalue(), "a.xlsx"),
            {"sheet": "Sheet", "cell": "C3"},
        ),
    ):
        kinds = [type(s.content).__name__ for s in sections]
        at = kinds.index("DataBlock")
        picture_section, text = sections[at], sections[at + 1]
        assert picture_section.metadata["ocr_text"] is True
        assert isinstance(text.content, TextBlock)
        assert text.content.text == "parse chunk embed store"
        assert text.metadata["ocr"] is True and "media_type" not in text.metadata
        assert where.items() <= text.metadata.items()

    # without OCR the picture is there alone, as before
    sections = await PPTParser().parse(pptx.getvalue(), "deck.pptx")
    assert [type(s.content).__name__ for s in sections] == ["TextBlock", "DataBlock"]
    assert "ocr_text" not in sections[1].metadata
