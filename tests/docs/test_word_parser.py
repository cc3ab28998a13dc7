"""WordParser on real generated .docx files."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path

import pytest

from archivist.message import DataBlock, TextBlock
from archivist.rag import WordParser, default_registry
from factories import make_docx, make_image

PNG = make_image("PNG", color="green")
DOC = [
    ("p", "Front matter paragraph."),
    ("h1", "Guide"),
    ("p", "Welcome to the guide."),
    ("h2", "Install"),
    ("p", "Pick your platform."),
    ("h3", "Linux"),
    ("p", "Before the table."),
    ("table", [["Distro", "Command"], ["Debian", "apt install x"], ["Fedora", "dnf | install"]]),
    ("p", "After the table."),
    ("bullets", ["first step", "second step"]),
    ("image", PNG),
    ("p", "After the picture."),
    ("h2", "Usage"),
    ("p", "Run it."),
]


def text(section: object) -> str:
    content = section.content  # type: ignore[attr-defined]
    assert isinstance(content, TextBlock)
    return content.text


async def test_paragraphs_sit_under_their_headings(tmp_path: Path) -> None:
    path = tmp_path / "guide.docx"
    path.write_bytes(make_docx(DOC, title="The Guide"))
    sections = await WordParser().parse(str(path), "guide.docx")
    assert [s.metadata.get("heading_path") for s in sections] == [
        [],
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Install", "Linux"],
        ["Guide", "Install", "Linux"],
        ["Guide", "Install", "Linux"],
        ["Guide", "Usage"],
    ]
    assert all(s.metadata["title"] == "The Guide" for s in sections)
    assert text(sections[0]) == "Front matter paragraph."
    assert text(sections[3]) == (
        "### Linux\n\nBefore the table.\n\n"
        "| Distro | Command |\n| --- | --- |\n| Debian | apt install x |\n"
        "| Fedora | dnf \\| install |\n\nAfter the table.\n\n- first step\n- second step"
    )
    picture = sections[4]
    assert isinstance(picture.content, DataBlock)
    assert picture.metadata["media_type"] == "image/png"
    assert base64.b64decode(picture.content.source.data) == PNG  # type: ignore[union-attr]
    assert text(sections[5]) == "After the picture."
    assert text(sections[6]) == "## Usage\n\nRun it."


async def test_separate_json_tables_keep_document_order() -> None:
    sections = await WordParser(
        include_image=False, separate_table=True, table_format="json"
    ).parse(make_docx(DOC), "guide.docx")
    linux = [text(s) for s in sections if s.metadata["heading_path"][-1:] == ["Linux"]]
    assert linux[0] == "### Linux\n\nBefore the table."
    assert json.loads(linux[1]) == [
        {"Distro": "Debian", "Command": "apt install x"},
        {"Distro": "Fedora", "Command": "dnf | install"},
    ]
    assert linux[2] == "After the table.\n\n- first step\n- second step\n\nAfter the picture."
    assert all(isinstance(s.content, TextBlock) for s in sections)
    assert "title" not in sections[0].metadata


async def test_corrupt_picture_is_skipped_not_fatal() -> None:
    data = make_docx([("h1", "Pics"), ("p", "text stays"), ("image", PNG)])
    members = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            members[name] = archive.read(name)
    media = next(n for n in members if n.startswith("word/media/"))
    members[media] = members[media][:40]  # a truncated PNG
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, blob in members.items():
            archive.writestr(name, blob)
    sections = await WordParser().parse(buffer.getvalue(), "pics.docx")
    assert [text(s) for s in sections] == ["# Pics\n\ntext stays"]


async def test_custom_heading_style_based_on_heading() -> None:
    from docx import Document
    from docx.enum.style import WD_STYLE_TYPE

    document = Document()
    style = document.styles.add_style("Chapter Title", WD_STYLE_TYPE.PARAGRAPH)
    style.base_style = document.styles["Heading 1"]
    document.add_paragraph("Chapter One", style="Chapter Title")
    document.add_paragraph("Body.")
    buffer = io.BytesIO()
    document.save(buffer)
    sections = await WordParser().parse(buffer.getvalue(), "custom.docx")
    assert sections[0].metadata["heading_path"] == ["Chapter One"]


async def test_bad_inputs_name_the_file() -> None:
    with pytest.raises(ValueError, match=r"plain\.docx.*not a zip"):
        await WordParser().parse(b"hello", "plain.docx")
    data = make_docx(DOC)
    with pytest.raises(ValueError, match=r"cut\.docx"):
        await WordParser().parse(data[: len(data) // 2], "cut.docx")
    with pytest.raises(ValueError, match=r"blank\.docx.*no text"):
        await WordParser().parse(make_docx([("p", "  ")]), "blank.docx")
    with pytest.raises(ValueError, match="table_format"):
        WordParser(table_format="csv")  # type: ignore[arg-type]


def test_registry_routes_docx_here() -> None:
    assert isinstance(default_registry().parser_for("report.DOCX"), WordParser)


async def test_content_controls_are_read_and_toc_is_skipped() -> None:
    """Text inside a content control (w:sdt) is content; "TOC N" paragraphs are not."""
    from docx import Document
    from docx.oxml import parse_xml

    document = Document()
    document.add_paragraph("Contents entry 1", style=document.styles.add_style("TOC 1", 1))
    document.add_heading("Real heading", level=1)
    ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    sdt = parse_xml(
        f"<w:sdt {ns}><w:sdtContent><w:p><w:r><w:t>Inside a control</w:t></w:r></w:p>"
        f"</w:sdtContent></w:sdt>"
    )
    document.element.body.insert(len(document.element.body) - 1, sdt)  # before sectPr
    buffer = io.BytesIO()
    document.save(buffer)
    sections = await WordParser().parse(buffer.getvalue(), "sdt.docx")
    assert [text(s) for s in sections] == ["# Real heading\n\nInside a control"]


def test_the_element_names_are_python_docx_s() -> None:
    """The parser spells WordprocessingML tags itself (so it imports without the office
    extra); they must be what python-docx's `qn` gives."""
    from docx.oxml.ns import qn

    from archivist.rag.parser import word

    assert (
        qn("w:p"),
        qn("w:tbl"),
        qn("w:sdt"),
        qn("w:sdtContent"),
    ) == (word._P, word._TBL, word._SDT, word._SDT_CONTENT)
    assert (qn("a:blip"), qn("r:embed")) == (word._BLIP, word._EMBED)
