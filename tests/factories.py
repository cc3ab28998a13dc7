"""Builders of real documents for tests: PDFs (reportlab), PPTX decks (python-pptx), images."""

from __future__ import annotations

import io
from collections.abc import Sequence

from PIL import Image


def make_pdf(pages: Sequence[str], *, encrypt_password: str | None = None) -> bytes:
    """A real PDF with one page per string; lines split on newlines; CJK drawn in STSong."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    buffer = io.BytesIO()
    kwargs = {}
    if encrypt_password is not None:
        from reportlab.lib.pdfencrypt import StandardEncryption

        kwargs["encrypt"] = StandardEncryption(encrypt_password, canPrint=0)
    pdf = canvas.Canvas(buffer, pagesize=A4, **kwargs)
    for text in pages:
        y = 800
        for line in text.split("\n"):
            font = "STSong-Light" if any(ord(c) > 0x2E80 for c in line) else "Helvetica"
            pdf.setFont(font, 11)
            pdf.drawString(50, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_scanned_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """An image-only PDF (no text layer, as a scanner makes it): each page an A4 picture at
    200 dpi of its English lines, drawn in Pillow's own font (no system font needed)."""
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default(size=40)
    pictures = []
    for lines in pages:
        picture = Image.new("L", (1654, 2339), 255)
        draw = ImageDraw.Draw(picture)
        for number, line in enumerate(lines):
            draw.text((150, 150 + 64 * number), line, font=font, fill=0)
        pictures.append(picture)
    buffer = io.BytesIO()
    first, *rest = pictures
    first.save(buffer, format="PDF", save_all=True, append_images=rest, resolution=200)
    return buffer.getvalue()


def make_image(fmt: str = "PNG", size: tuple[int, int] = (32, 24), color: str = "red") -> bytes:
    """A real image in Pillow format `fmt` (PNG, JPEG, GIF, BMP, WEBP)."""
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()


def make_pptx(slides: Sequence[dict[str, object]]) -> bytes:
    """A real deck. Each slide dict may hold `title`, `texts`, `table` (rows), `group`
    (texts inside one group shape) and `pictures` (PNG bytes), placed in that order."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    blank = deck.slide_layouts[6]
    titled = deck.slide_layouts[5]
    for spec in slides:
        slide = deck.slides.add_slide(titled if "title" in spec else blank)
        if "title" in spec:
            slide.shapes.title.text = str(spec["title"])
        top = 1.5
        for text in spec.get("texts", []):  # type: ignore[attr-defined]
            box = slide.shapes.add_textbox(Inches(0.5), Inches(top), Inches(8), Inches(0.5))
            box.text_frame.text = text
            top += 0.6
        if "table" in spec:
            rows = spec["table"]
            shape = slide.shapes.add_table(
                len(rows),
                len(rows[0]),
                Inches(0.5),
                Inches(top),
                Inches(8),
                Inches(1.5),  # type: ignore[arg-type]
            )
            for r, row in enumerate(rows):  # type: ignore[arg-type]
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = value
            top += 1.6
        if "group" in spec:
            group = slide.shapes.add_group_shape()
            for i, text in enumerate(spec["group"]):  # type: ignore[arg-type]
                box = group.shapes.add_textbox(Inches(0.5 + i), Inches(top), Inches(1), Inches(0.4))
                box.text_frame.text = text
            top += 0.5
        for picture in spec.get("pictures", []):  # type: ignore[attr-defined]
            slide.shapes.add_picture(io.BytesIO(picture), Inches(6), Inches(5), Inches(1))
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def make_docx(blocks: Sequence[tuple[str, object]], title: str | None = None) -> bytes:
    """A real Word document. Blocks: ("h1".."h6", text), ("p", text), ("bullets", [texts]),
    ("table", rows), ("image", PNG/JPEG bytes), ("style:NAME", text) for any paragraph style."""
    from docx import Document
    from docx.shared import Inches

    document = Document()
    if title is not None:
        document.core_properties.title = title
    for kind, value in blocks:
        if kind.startswith("h") and kind[1:].isdigit():
            document.add_heading(str(value), level=int(kind[1:]))
        elif kind == "p":
            document.add_paragraph(str(value))
        elif kind == "bullets":
            for item in value:  # type: ignore[attr-defined]
                document.add_paragraph(item, style="List Bullet")
        elif kind == "table":
            rows = value
            table = document.add_table(rows=len(rows), cols=len(rows[0]))  # type: ignore[arg-type]
            for r, row in enumerate(rows):  # type: ignore[arg-type]
                for c, text in enumerate(row):
                    table.cell(r, c).text = text
        elif kind == "image":
            document.add_picture(io.BytesIO(value), width=Inches(1))  # type: ignore[arg-type]
        elif kind.startswith("style:"):
            document.add_paragraph(str(value), style=kind.split(":", 1)[1])
        else:
            raise ValueError(f"unknown block kind {kind!r}")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def make_xlsx(
    sheets: dict[str, Sequence[Sequence[object]]],
    pictures: dict[str, Sequence[tuple[str, bytes]]] | None = None,
) -> bytes:
    """A real workbook with one worksheet per entry, rows written from A1 (None: blank), and
    `pictures` per sheet: (anchor cell, image bytes)."""
    from openpyxl import Workbook
    from openpyxl.drawing.image import Image

    workbook = Workbook()
    workbook.remove(workbook.active)  # type: ignore[arg-type]
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
        for cell, data in (pictures or {}).get(name, []):
            sheet.add_image(Image(io.BytesIO(data)), cell)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def make_docs_page(chapters: int = 12) -> str:
    """A documentation page shaped like mdBook/Sphinx output: head, header, long sidebar,
    search form, scripts, a main article with headings, lists, a table and code, footer."""
    sidebar = "\n".join(
        f'<li><a href="ch{i}.html">SIDEBARLINK chapter {i} title words</a></li>' for i in range(80)
    )
    body = []
    for c in range(chapters):
        body.append(f'<h2 id="c{c}">Chapter {c}: Ownership part {c}</h2>')
        body.append(
            f"<p>Paragraph {c} explains how values move between variables, "
            f"and why the borrow checker rejects dangling references in case {c}.</p>" * 4
        )
        body.append(f"<h3>Details of part {c}</h3>")
        body.append(
            f"<ul><li>first rule {c}</li><li>second rule {c}<ol><li>nested {c}</li>"
            f"<li>nested again</li></ol></li></ul>"
        )
        body.append(
            f'<pre><code class="language-rust">fn main() {{\n    let s{c} = String::from("hi");\n'
            f'    println!("{{}}", s{c});\n}}</code></pre>'
        )
    body.append(
        "<table><tr><th>Type</th><th>Copy?</th></tr>"
        "<tr><td>i32</td><td>yes</td></tr><tr><td>String</td><td>no | never</td></tr></table>"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Ownership - The Guide</title>
<style>.STYLERULE {{ color: red }}</style>
<script>var SCRIPTCODE = "sidebar toggling";</script>
</head><body>
<div id="cookie-consent">COOKIEBANNER we use cookies</div>
<header class="site-header"><a href="/">Home</a> NAVLINK top</header>
<nav id="sidebar" class="sidebar"><ol>{sidebar}</ol></nav>
<form role="search"><input type="search" placeholder="Search"></form>
<div class="page-wrapper">
<main>
<h1>Understanding Ownership</h1>
<p>Ownership is the guide's central idea.</p>
{"".join(body)}
<nav class="nav-wrapper"><a href="prev.html">NAVLINK previous</a></nav>
</main>
</div>
<footer>FOOTERTEXT © 2026 The Guide authors</footer>
<script src="book.js"></script><script>SCRIPTCODE.run()</script>
</body></html>"""


def make_docx_bomb(xml_megabytes: int) -> bytes:
    """A real Word document whose text is `xml_megabytes` MB of XML in paragraphs of numbered
    words: a small file, within the archive limits, whose parse needs gigabytes."""
    import zipfile

    template = zipfile.ZipFile(io.BytesIO(make_docx([("p", "placeholder")])))
    paragraph = "<w:p><w:r><w:t>{}</w:t></w:r></w:p>"
    words = " ".join(f"w{n}" for n in range(40))
    one = paragraph.format(words)
    count = xml_megabytes * 1024 * 1024 // len(one)
    body = "".join(paragraph.format(f"{n} {words}") for n in range(count))
    document = template.read("word/document.xml").decode()
    start, end = document.index("<w:body>") + len("<w:body>"), document.index("</w:body>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for item in template.infolist():
            data = template.read(item.filename)
            if item.filename == "word/document.xml":
                data = (document[:start] + body + document[end:]).encode()
            out.writestr(item.filename, data)
    return buffer.getvalue()
