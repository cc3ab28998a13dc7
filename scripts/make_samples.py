"""Regenerate the PDF, PPTX and PNG in src/archivist/samples/ (`archivist.SAMPLES`, and
`samples/` in a clone) from the text below (needs the dev extra).

Run: .venv/bin/python scripts/make_samples.py
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageDraw
from pptx import Presentation
from pptx.util import Inches, Pt
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

SAMPLES = Path(__file__).resolve().parent.parent / "src" / "archivist" / "samples"

GUIDE = {
    "Installing and first run": [
        "Archivist runs offline. The default embedding model, all-MiniLM-L6-v2 quantised to "
        "int8, ships inside a Python package, so no model is downloaded at run time and no API "
        "key is needed.",
        "The command archivist index PATH walks a folder, picks a parser for every file, cuts "
        "the text into overlapping chunks, embeds them and writes them to a Qdrant Edge store "
        "on disk. Running it again skips files whose content hash has not changed.",
    ],
    "Searching and citing": [
        "archivist search QUERY prints the best passages with their score, source file, page "
        "or slide and chunk index. Every hit an agent sees carries the same citation label, so "
        "its answer can say where a fact came from.",
        "Each hit carries a relevance from 0 to 1, the estimated chance that it answers the "
        "query, and hits come best first. A minimum relevance drops weak hits before the "
        "results are cut to top_k.",
    ],
    "Tenants and isolation": [
        "Several tenants may share one collection. A knowledge base handle created with a "
        "metadata_filter such as tenant_id equal to acme can only read, list and delete records "
        "of that tenant, and every chunk it writes is stamped with the filter, even when the "
        "caller's metadata claims another tenant.",
        "Filters run inside the vector database as native payload filters backed by keyword "
        "indexes; they are never applied in Python after an unfiltered fetch.",
    ],
}

SLIDES = [
    (
        "The pipeline",
        [
            "Parse files into sections",
            "Chunk sections into windows",
            "Embed chunks offline",
            "Store vectors in Qdrant",
        ],
    ),
    (
        "Agent integration",
        [
            "Static mode: a hint before the first reasoning step",
            "Agentic mode: a search_knowledge tool the model calls",
        ],
    ),
]
TABLE = [
    ["Deployment", "Engine", "Use"],
    ["location=':memory:'", "Qdrant Edge", "tests, notebooks"],
    ["path=...", "Qdrant Edge on disk", "a laptop, one process"],
    ["url=...", "Qdrant server", "a shared cluster"],
]


def diagram() -> bytes:
    """A PNG of the pipeline: four boxes joined by arrows."""
    image = Image.new("RGB", (880, 180), "white")
    draw = ImageDraw.Draw(image)
    for i, label in enumerate(["parse", "chunk", "embed", "store"]):
        x = 20 + i * 220
        draw.rectangle([x, 60, x + 160, 120], outline="black", width=3, fill="#dde8ff")
        draw.text((x + 55, 82), label, fill="black")
        if i < 3:
            draw.line([x + 160, 90, x + 220, 90], fill="black", width=3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def write_pdf(path: Path) -> None:
    styles = getSampleStyleSheet()
    story: list[object] = []
    for title, paragraphs in GUIDE.items():
        story.append(Paragraph(title, styles["Heading1"]))
        for text in paragraphs:
            story += [Paragraph(text, styles["BodyText"]), Spacer(1, 8)]
        story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=A4, title="Archivist guide", invariant=True).build(
        story[:-1]
    )


def write_pptx(path: Path, picture: bytes) -> None:
    deck = Presentation()
    for title, bullets in SLIDES:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0]
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Where the data lives"
    shape = slide.shapes.add_table(len(TABLE), 3, Inches(0.5), Inches(1.8), Inches(9), Inches(2))
    for r, row in enumerate(TABLE):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
            shape.table.cell(r, c).text_frame.paragraphs[0].runs[0].font.size = Pt(14)
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Pipeline diagram"
    slide.shapes.add_picture(io.BytesIO(picture), Inches(0.5), Inches(2), Inches(9))
    deck.save(str(path))


def main() -> None:
    picture = diagram()
    (SAMPLES / "pipeline.png").write_bytes(picture)
    write_pdf(SAMPLES / "archivist-guide.pdf")
    write_pptx(SAMPLES / "archivist-architecture.pptx", picture)


if __name__ == "__main__":
    main()
