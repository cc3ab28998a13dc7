"""Tables stay tables when they are chunked: every chunk of a table is a Markdown table with its
header, chunks end between rows and overlaps start at a row, in every format that has tables
(XLSX, DOCX, PPTX, HTML, Markdown), read from real files generated here."""

from __future__ import annotations

import io
import itertools
import re

import docx
import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pptx import Presentation
from pptx.util import Inches

from archivist.embedding import LocalEmbeddingModel
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.message import TextBlock
from archivist.rag import ExcelParser, HTMLParser, MarkdownParser, PPTParser, WordParser
from archivist.rag.chunker import TokenChunker
from archivist.rag.chunker.tables import find_tables
from archivist.rag.document import Chunk, Section

HEADER = ["part number", "description", "quantity", "warehouse"]
DELIMITER = "| --- | --- | --- | --- |"


def row(n: int) -> list[str]:
    return [
        f"P-{n:04d}",
        f"stainless steel bolt M{n % 12 + 3} with washer and nut",
        str(n * 7),
        f"WH-{n % 5}",
    ]


def markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


@pytest.fixture(scope="module")
def tokenizer() -> ModelTokenizer:
    return LocalEmbeddingModel().chunk_tokenizer()


def texts(chunks: list[Chunk]) -> list[str]:
    return [c.content.text for c in chunks if isinstance(c.content, TextBlock)]


def assert_table_chunks(pieces: list[str], rows: int, tokenizer: ModelTokenizer, size: int) -> None:
    """Each piece holding table rows shows the header and delimiter above them, holds whole rows
    only, fits the budget; together they hold every row in order, overlaps being whole rows."""
    seen: list[str] = []
    header = markdown_row(HEADER)
    for piece in pieces:
        assert len(tokenizer.spans(piece)) <= size
        lines = piece.split("\n")
        body = [line for line in lines if line.startswith("| P-")]
        if not body:
            continue
        first = lines.index(body[0])
        assert lines[first - 2 : first] == [header, DELIMITER], piece
        for line in body:
            assert line.endswith(" |") and line.count(" | ") == 3, line  # a whole row
        overlap = [line for line in body if line in seen]
        assert body[: len(overlap)] == overlap  # the overlap is the previous chunk's last rows
        seen += body[len(overlap) :]
    assert seen == [markdown_row(row(n)) for n in range(rows)]


def xlsx(rows: int) -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "inventory"
    sheet.append(HEADER)
    for n in range(rows):
        sheet.append(row(n))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


async def test_xlsx_chunks_after_the_first_keep_the_header(tokenizer: ModelTokenizer) -> None:
    sections = await ExcelParser().parse(xlsx(150), "inventory.xlsx")
    assert len(sections) == 2  # blocks of 100 rows, the header repeated by the parser
    chunker = TokenChunker(tokenizer, chunk_size=128, overlap=32)
    pieces = texts(await chunker.chunk(sections))
    assert len(pieces) > 6
    assert_table_chunks(pieces, 150, tokenizer, 128)
    # the overlap is whole rows: most chunks after the first repeat the last row before them
    repeated = sum(
        1
        for before, after in itertools.pairwise(pieces)
        if before.split("\n")[-1] in after.split("\n")
    )
    assert repeated >= len(pieces) // 2

    plain = texts(await TokenChunker(tokenizer, 128, 32, table_header=False).chunk(sections))
    assert sum(p.startswith("| part number") for p in plain) < len(plain) // 2
    assert chunker.parameters != TokenChunker(tokenizer, 128, 32, table_header=False).parameters


async def test_docx_table_between_paragraphs(tokenizer: ModelTokenizer) -> None:
    document = docx.Document()
    document.add_heading("Stock", level=1)
    document.add_paragraph("The bolts we keep, by warehouse. " * 8)
    table = document.add_table(rows=1, cols=4)
    for cell, name in zip(table.rows[0].cells, HEADER, strict=True):
        cell.text = name
    for n in range(40):
        for cell, value in zip(table.add_row().cells, row(n), strict=True):
            cell.text = value
    document.add_paragraph("Counted every Monday morning.")
    buffer = io.BytesIO()
    document.save(buffer)
    sections = await WordParser().parse(buffer.getvalue(), "stock.docx")
    [section] = sections
    assert isinstance(section.content, TextBlock)
    assert f"{markdown_row(HEADER)}\n{DELIMITER}\n{markdown_row(row(0))}\n" in section.content.text
    pieces = texts(await TokenChunker(tokenizer, chunk_size=96, overlap=16).chunk(sections))
    assert_table_chunks(pieces, 40, tokenizer, 96)
    assert pieces[-1].endswith("Counted every Monday morning.")


def pptx() -> bytes:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Stock by warehouse"
    shape = slide.shapes.add_table(31, 4, Inches(0.5), Inches(1.5), Inches(9), Inches(5))
    for c, name in enumerate(HEADER):
        shape.table.cell(0, c).text = name
    for n in range(30):
        for c, value in enumerate(row(n)):
            shape.table.cell(n + 1, c).text = value
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


async def test_pptx_table_is_a_markdown_table_in_every_chunk(tokenizer: ModelTokenizer) -> None:
    sections = await PPTParser(slide_prefix=None, slide_suffix=None).parse(pptx(), "stock.pptx")
    [section] = sections
    assert isinstance(section.content, TextBlock)
    lines = section.content.text.split("\n")
    assert lines[:4] == ["Stock by warehouse", "", markdown_row(HEADER), DELIMITER]
    pieces = texts(await TokenChunker(tokenizer, chunk_size=100, overlap=20).chunk(sections))
    assert len(pieces) > 3
    assert_table_chunks(pieces, 30, tokenizer, 100)


async def test_html_table_is_a_markdown_table_in_every_chunk(tokenizer: ModelTokenizer) -> None:
    cells = "".join(
        "<tr>" + "".join(f"<td>{value}</td>" for value in row(n)) + "</tr>" for n in range(35)
    )
    page = (
        "<html><body><main><h1>Stock</h1><p>All bolts.</p><table><thead><tr>"
        + "".join(f"<th>{name}</th>" for name in HEADER)
        + f"</tr></thead><tbody>{cells}</tbody></table></main></body></html>"
    )
    sections = await HTMLParser().parse(page.encode(), "stock.html")
    pieces = texts(await TokenChunker(tokenizer, chunk_size=100, overlap=20).chunk(sections))
    assert len(pieces) > 3
    assert_table_chunks(pieces, 35, tokenizer, 100)


async def test_markdown_table_and_the_context_header(tokenizer: ModelTokenizer) -> None:
    table = "\n".join(
        [markdown_row(HEADER), "|---|:---:|--:|---|", *(markdown_row(row(n)) for n in range(30))]
    )
    text = f"# Stock\n\nThe bolts.\n\n{table}\n\nThat is all.\n"
    sections = await MarkdownParser().parse(text.encode(), "stock.md")
    chunker = TokenChunker(tokenizer, chunk_size=100, overlap=20, context_header=True)
    pieces = texts(await chunker.chunk(sections))
    assert len(pieces) > 3
    for piece in pieces[1:]:
        lines = piece.split("\n")
        assert lines[0] == "Stock"  # the heading path, then the table's own header
        if any(line.startswith("| P-") for line in lines[1:3] + lines[3:4]):
            assert lines[1:3] == [markdown_row(HEADER), DELIMITER]  # rewritten canonically


async def test_streamed_blocks_give_the_chunks_of_the_whole(tokenizer: ModelTokenizer) -> None:
    table = "\n".join([markdown_row(HEADER), DELIMITER, *(markdown_row(row(n)) for n in range(50))])
    text = "Intro words about bolts. " * 30 + f"\n\n{table}\n\nClosing words. " * 2
    chunker = TokenChunker(tokenizer, chunk_size=80, overlap=16)
    whole = texts(await chunker.chunk([Section(content=TextBlock(text=text), source="s.txt")]))
    for step in (97, 500, 1733):
        blocks = [text[i : i + step] for i in range(0, len(text), step)]

        async def stream(blocks: list[str] = blocks):  # type: ignore[no-untyped-def]
            for i, block in enumerate(blocks):
                yield Section(content=TextBlock(text=block), source="s.txt", continued=i > 0)

        streamed = [c.content.text async for c in chunker.chunk_stream(stream())]  # type: ignore[union-attr]
        assert streamed == whole, step


async def test_a_row_longer_than_a_chunk_is_cut_inside_and_nothing_is_lost(
    tokenizer: ModelTokenizer,
) -> None:
    long_row = markdown_row(["P-9999", "word " * 200, "1", "WH-1"])
    text = "\n".join(
        [markdown_row(HEADER), DELIMITER, markdown_row(row(0)), long_row, markdown_row(row(1))]
    )
    chunker = TokenChunker(tokenizer, chunk_size=64, overlap=8)
    pieces = texts(await chunker.chunk([Section(content=TextBlock(text=text), source="t.md")]))
    assert all(len(tokenizer.spans(p)) <= 64 for p in pieces)
    joined = " ".join(pieces)
    assert markdown_row(row(0)) in joined and markdown_row(row(1)) in joined
    assert joined.count("word") >= 200


def test_find_tables() -> None:
    text = "intro | not a table\n| a | b |\n| --- | --- |\n| 1 | 2 |\n| 3 | 4 |\ntail\n| x |\n"
    [table] = find_tables(text)
    assert text[table.start : table.end] == "| a | b |\n| --- | --- |\n| 1 | 2 |\n| 3 | 4 |"
    assert text[table.body :].startswith("| 1 | 2 |")
    assert table.header == "| a | b |\n| --- | --- |"
    [carried, second] = find_tables(
        "| 5 | 6 |\nmore\n| c |\n|:-:|\n", carried="| a | b |\n|---|---|"
    )
    assert (carried.start, carried.end, carried.header) == (0, 9, "| a | b |\n|---|---|")
    assert second.body == second.end  # a table without body rows
    assert find_tables("no pipes at all") == []


cell = st.lists(
    st.sampled_from(["bolt", "nut", "steel", "washer", "42", "7", "M8", "zinc"]),
    min_size=1,
    max_size=3,
).map(" ".join)  # rows of at most ~20 tokens: each fits a chunk (longer ones are cut inside)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=st.text(alphabet="abc def.\n", max_size=300),
    body=st.lists(st.lists(cell, min_size=3, max_size=3), min_size=1, max_size=60),
    size=st.sampled_from([48, 64, 128]),
    overlap=st.sampled_from([0, 8, 16]),
)
def test_chunks_of_any_table_hold_whole_rows_under_the_header(
    tokenizer: ModelTokenizer, before: str, body: list[list[str]], size: int, overlap: int
) -> None:
    header = "| alpha | beta | gamma |\n| --- | --- | --- |"
    rows = [markdown_row(cells) for cells in body]
    text = f"{before}\n\n{header}\n" + "\n".join(rows) + "\n\nafter"
    pieces = TokenChunker(tokenizer, chunk_size=size, overlap=overlap).split_text(text)
    found: list[str] = []
    for piece in pieces:
        assert len(tokenizer.spans(piece)) <= size
        lines = piece.split("\n")
        table_lines = [
            i for i, line in enumerate(lines) if line.startswith("| ") and "---" not in line
        ]
        body_lines = [lines[i] for i in table_lines if lines[i] != "| alpha | beta | gamma |"]
        if body_lines and len(tokenizer.spans(header)) < size // 2:  # else it is left out
            assert header in piece
            assert all(re.fullmatch(r"\| .+ \| .+ \| .+ \|", line) for line in body_lines), piece
        found += [line for line in body_lines if not found or line not in found[-len(body_lines) :]]
    for line in rows:
        assert line in found


async def test_markdown_table_without_outer_pipes_is_cut_by_rows(tokenizer: ModelTokenizer) -> None:
    lines = ["part number | description | quantity | warehouse", "---|---|--:|---"]
    lines += [" | ".join(row(n)) for n in range(30)]
    sections = await MarkdownParser().parse("\n".join(lines).encode(), "bare.md")
    [section] = sections
    assert text_of(section).startswith(f"{markdown_row(HEADER)}\n{DELIMITER}\n")
    pieces = texts(await TokenChunker(tokenizer, chunk_size=100, overlap=20).chunk(sections))
    assert_table_chunks(pieces, 30, tokenizer, 100)


def text_of(section: Section) -> str:
    assert isinstance(section.content, TextBlock)
    return section.content.text
