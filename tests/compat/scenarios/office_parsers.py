"""WordParser and ExcelParser on real generated .docx/.xlsx files: constructor arguments and
the shape of the Sections they return."""

import asyncio
import inspect
import io
import json

import docx
import openpyxl
from agentscope.message import TextBlock
from agentscope.rag import ExcelParser, WordParser


def make_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Pets", level=1)
    document.add_paragraph("Cats sleep sixteen hours a day.")
    document.add_heading("Dogs", level=2)
    document.add_paragraph("Dogs need daily walks.")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [["animal", "legs"], ["cat", "4"]], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def make_xlsx() -> bytes:
    workbook = openpyxl.Workbook()
    first = workbook.active
    first.title = "animals"
    for row in [["animal", "legs"], ["cat", 4], ["bird", 2]]:
        first.append(row)
    second = workbook.create_sheet("plants")
    for row in [["plant", "height"], ["oak", 20]]:
        second.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def shape(sections) -> list:
    return [[type(s.content).__name__, sorted(s.metadata), s.source] for s in sections]


def words(sections) -> list[str]:
    text = " ".join(s.content.text for s in sections if isinstance(s.content, TextBlock))
    return sorted({w for w in ("Cats", "Dogs", "cat", "bird", "oak", "legs") if w in text})


async def main() -> None:
    word = await WordParser().parse(file=make_docx(), filename="pets.docx")
    excel = await ExcelParser().parse(file=make_xlsx(), filename="zoo.xlsx")
    print(
        json.dumps(
            {
                "word_args": list(inspect.signature(WordParser).parameters),
                "excel_args": list(inspect.signature(ExcelParser).parameters),
                "word_media_types": WordParser.supported_media_types,
                "excel_media_types": ExcelParser.supported_media_types,
                "word_sections": shape(word),
                "word_words": words(word),
                "excel_sections": shape(excel),
                "excel_words": words(excel),
            }
        )
    )


asyncio.run(main())
