"""HTMLParser on generated documentation pages with the chrome real generators add."""

from __future__ import annotations

import idlelib
import re
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser

from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, HTMLParser, default_registry
from factories import make_docs_page

# Words only the page chrome of `make_docs_page` contains.
CHROME_WORDS = ("SIDEBARLINK", "NAVLINK", "FOOTERTEXT", "SCRIPTCODE", "STYLERULE", "COOKIEBANNER")


def text(section: object) -> str:
    content = section.content  # type: ignore[attr-defined]
    assert isinstance(content, TextBlock)
    return content.text


async def test_boilerplate_share_of_chunks_is_at_most_five_percent() -> None:
    sections = await HTMLParser().parse(make_docs_page().encode(), "guide.html")
    chunks = await ApproxTokenChunker(chunk_size=128, overlap=16).chunk(sections)
    assert len(chunks) >= 20
    chrome = [c for c in chunks if any(w in text(c) for w in CHROME_WORDS)]
    assert len(chrome) / len(chunks) <= 0.05
    assert chrome == []  # in fact none on this page


async def test_one_section_per_heading_with_path_and_title() -> None:
    sections = await HTMLParser().parse(make_docs_page(chapters=2).encode(), "guide.html")
    paths = [s.metadata["heading_path"] for s in sections]
    assert paths == [
        ["Understanding Ownership"],
        ["Understanding Ownership", "Chapter 0: Ownership part 0"],
        ["Understanding Ownership", "Chapter 0: Ownership part 0", "Details of part 0"],
        ["Understanding Ownership", "Chapter 1: Ownership part 1"],
        ["Understanding Ownership", "Chapter 1: Ownership part 1", "Details of part 1"],
    ]
    assert {s.metadata["title"] for s in sections} == {"Ownership - The Guide"}
    assert all(s.source == "guide.html" for s in sections)
    assert text(sections[1]).startswith("## Chapter 0: Ownership part 0\n\nParagraph 0 explains")


async def test_lists_code_and_tables_are_kept() -> None:
    sections = await HTMLParser().parse(make_docs_page(chapters=1).encode(), "guide.html")
    details = text(sections[2])
    assert "- first rule 0\n- second rule 0\n  1. nested 0\n  2. nested again" in details
    assert (
        '```rust\nfn main() {\n    let s0 = String::from("hi");\n    println!("{}", s0);\n}\n```'
        in details
    )
    assert "| Type | Copy? |\n| --- | --- |\n| i32 | yes |\n| String | no \\| never |" in details


async def test_sphinx_layout_without_main_uses_the_body_div() -> None:
    page = """<html><head><title>json — Stdlib Tour</title></head><body>
    <div class="related" role="navigation"><ul><li>NAVLINK index</li></ul></div>
    <div class="document"><div class="documentwrapper"><div class="bodywrapper">
    <div class="body" role="main">
      <section id="json"><h1>The json module<a class="headerlink" href="#json">¶</a></h1>
      <p>JSON encoder and decoder.</p>
      <dl class="py function"><dt class="sig">json.dumps(obj)</dt>
      <dd><p>Serialize <code>obj</code> to a JSON formatted str.</p></dd></dl>
      </section></div></div></div>
    <div class="sphinxsidebar" role="navigation"><h3>Navigation</h3><p>SIDEBARLINK</p></div>
    </div><div class="footer">FOOTERTEXT ©2026.</div></body></html>"""
    sections = await HTMLParser().parse(page, "json.html")
    assert len(sections) == 1
    assert sections[0].metadata == {
        "title": "json — Stdlib Tour",
        "heading_path": ["The json module"],
    }
    assert text(sections[0]) == (
        "# The json module\n\nJSON encoder and decoder.\n\njson.dumps(obj)\n\n"
        "Serialize `obj` to a JSON formatted str."
    )


async def test_page_without_main_drops_header_and_footer(tmp_path: Path) -> None:
    path = tmp_path / "plain.htm"
    path.write_bytes(
        b"<html><body><header>NAVLINK site</header><p>Just a paragraph.</p>"
        b"<footer>FOOTERTEXT</footer></body></html>"
    )
    sections = await HTMLParser().parse(str(path), "plain.htm")
    assert [text(s) for s in sections] == ["Just a paragraph."]
    assert sections[0].metadata == {"heading_path": []}


async def test_declared_charset_and_detection() -> None:
    page = (
        '<html><head><meta charset="windows-1252"></head><body><p>Café “quoted”</p></body></html>'
    )
    sections = await HTMLParser().parse(page.encode("cp1252"), "legacy.html")
    assert text(sections[0]) == "Café “quoted”"


async def test_page_with_only_chrome_is_an_error() -> None:
    page = b"<html><head><script>x()</script></head><body><nav>menu</nav></body></html>"
    with pytest.raises(ValueError, match=r"empty\.html.*no text"):
        await HTMLParser().parse(page, "empty.html")


def test_registry_routes_html_here() -> None:
    assert isinstance(default_registry().parser_for("page.html"), HTMLParser)
    assert isinstance(default_registry().parser_for("page.HTM"), HTMLParser)


def test_bad_heading_level_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_heading_level"):
        HTMLParser(max_heading_level=0)


def _trigrams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


async def test_real_sphinx_page_shipped_with_python() -> None:
    """CPython ships IDLE's manual as a Sphinx-built page (navigation bars, sidebar, search
    box, footer): ≤ 5% of its chunks may be boilerplate, i.e. mostly outside `div.body`."""
    page = Path(idlelib.__file__).with_name("help.html")
    if not page.is_file():  # some Linux distributions package IDLE apart from Python
        pytest.skip("this Python ships without idlelib/help.html")
    html = page.read_text(encoding="utf-8")
    reference = LexborHTMLParser(html).css_first("div.body").text(deep=True, separator=" ")
    sections = await HTMLParser().parse(str(page), "help.html")
    chunks = await ApproxTokenChunker(chunk_size=256, overlap=32).chunk(sections)
    known = _trigrams(reference)
    boilerplate = [
        c for c in chunks if len(_trigrams(text(c)) & known) < len(_trigrams(text(c))) / 2
    ]
    assert len(chunks) >= 30
    assert len(boilerplate) / len(chunks) <= 0.05
    assert sections[0].metadata["title"].startswith("IDLE")
    assert sections[0].metadata["heading_path"] == ["IDLE"]
    # the structure is there: the page's section titles are on the heading paths
    titles = {title for s in sections for title in s.metadata["heading_path"]}
    assert {"Menus", "Editing and Navigation", "Help and Preferences"} <= titles
