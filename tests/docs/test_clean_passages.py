"""Passages without markup noise: RST field lists become metadata, code inside HTML layout tables
stays a fenced block, and the registry's PPTX parser leaves out AgentScope's slide tags (which
`PPTParser()` itself keeps)."""

from __future__ import annotations

import io
from pathlib import Path

from pptx import Presentation

from archivist.message import TextBlock
from archivist.rag import HTMLParser, PPTParser, RSTParser, default_registry


def text(section: object) -> str:
    content = section.content  # type: ignore[attr-defined]
    assert isinstance(content, TextBlock)
    return content.text


RST = """\
:title: AWS CLI S3 FAQ
:description: Frequently asked questions
   about S3 in the AWS CLI
:related command: s3 cp, s3 sync
:orphan:

S3 FAQ
======

Below are common questions.

Uploads
-------

:param bucket: the bucket to upload to
:returns: the object's key
"""


async def test_rst_opening_field_list_is_metadata_not_text() -> None:
    sections = await RSTParser().parse(RST.encode(), "faq.rst")
    assert [text(s) for s in sections] == [
        "# S3 FAQ\n\nBelow are common questions.",
        "## Uploads\n\n:param bucket: the bucket to upload to\n:returns: the object's key",
    ]
    fields = {
        "title": "AWS CLI S3 FAQ",
        "description": "Frequently asked questions about S3 in the AWS CLI",
        "related command": "s3 cp, s3 sync",
        "orphan": "",
    }
    for section in sections:
        assert section.metadata["fields"] == fields
        assert section.metadata["title"] == "AWS CLI S3 FAQ"


async def test_rst_docinfo_after_the_title() -> None:
    source = "=======\nManual\n=======\n\n:Author: Ada\n:Version: 2.1\n\nIntro text.\n"
    [section] = await RSTParser().parse(source.encode(), "manual.rst")
    assert text(section) == "# Manual\n\nIntro text."
    assert section.metadata == {
        "fields": {"author": "Ada", "version": "2.1"},
        "heading_path": ["Manual"],
    }


async def test_rst_field_list_after_text_stays_text() -> None:
    source = "Intro text.\n\n:note: this is part of the text\n"
    [section] = await RSTParser().parse(source.encode(), "plain.rst")
    assert ":note: this is part of the text" in text(section)
    assert "fields" not in section.metadata
    source = "A literal block::\n\n    :not: a field\n"
    [section] = await RSTParser().parse(source.encode(), "literal.rst")
    assert ":not: a field" in text(section)


LAYOUT_PAGE = """<html><head><title>Module templates</title></head><body>
<table border="0" width="100%"><tr><td valign="top">
  <table><tr><td>Main Menu</td></tr><tr><td>API Menu</td></tr></table>
</td><td valign="top">
  <h2>Table of Contents</h2>
  <pre class="programlisting">xmlAttrPtr\txsltAttrListTemplateProcess\t(ctxt, <br />\t\t\t xmlNodePtr target)</pre>
  <p>Processes all attributes of a Literal Result Element.</p>
  <table><tr><th>option</th><th>meaning</th></tr><tr><td>-v</td><td>verbose</td></tr>
  <tr><td>-q</td><td>quiet</td></tr></table>
</td></tr></table>
<table role="presentation"><tr><td>Laid out</td><td>side by side</td></tr></table>
</body></html>"""


async def test_code_in_a_layout_table_stays_a_fenced_block() -> None:
    sections = await HTMLParser().parse(LAYOUT_PAGE.encode(), "templates.html")
    whole = "\n\n".join(text(s) for s in sections)
    assert (
        "```\nxmlAttrPtr\txsltAttrListTemplateProcess\t(ctxt, \n\t\t\t xmlNodePtr target)\n```"
        in whole
    )
    assert "\nProcesses all attributes of a Literal Result Element.\n" in whole
    # a data table inside the layout stays a Markdown table
    assert "| option | meaning |\n| --- | --- |\n| -v | verbose |\n| -q | quiet |" in whole
    # the layout tables themselves are not squeezed into cells
    assert "| Table of Contents" not in whole and "Laid out\n\nside by side" in whole


def deck() -> bytes:
    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Quarterly results"
    slide.placeholders[1].text = "Revenue grew in every region."
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


async def test_registry_pptx_sections_have_no_slide_tags(tmp_path: Path) -> None:
    path = tmp_path / "results.pptx"
    path.write_bytes(deck())
    parser = default_registry().parser_for_path(path)
    [section] = await parser.parse(str(path), "results.pptx")
    assert text(section) == "Quarterly results\n\nRevenue grew in every region."
    assert section.metadata == {"slide": 1}
    [tagged] = await PPTParser().parse(str(path), "results.pptx")  # AgentScope's default
    assert text(tagged).startswith("<slide index=1>\n") and text(tagged).endswith("\n</slide>")


async def test_rst_title_with_a_short_underline() -> None:
    source = "Upload\n------\n\nUp.\n\nDownload\n~~~~~~\n\nThe CLI checks downloads.\n"
    sections = await RSTParser().parse(source.encode(), "faq.rst")
    assert [s.metadata["heading_path"] for s in sections] == [["Upload"], ["Upload", "Download"]]
    assert text(sections[1]) == "## Download\n\nThe CLI checks downloads."


TEXINFO_PAGE = """<html><body><div class="section" id="Thread-Safety">
<div class="header"><p>Previous: <a href="Closure-Example.html" rel="prev">Closure Example</a>,
Up: <a href="Using-libffi.html" rel="up">Using libffi</a> [<a href="Index.html">Index</a>]</p>
</div><hr><h3 class="section">2.7 Thread Safety</h3>
<p><code>libffi</code> is not completely thread-safe.</p></div></body></html>"""


async def test_texinfo_neighbour_links_are_page_chrome() -> None:
    [section] = await HTMLParser().parse(TEXINFO_PAGE.encode(), "Thread-Safety.html")
    assert text(section) == "### 2.7 Thread Safety\n\n`libffi` is not completely thread-safe."
