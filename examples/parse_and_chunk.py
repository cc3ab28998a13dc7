"""Parse the sample documents into Sections, then cut the Sections into Chunks.

Shows every parser of `archivist.rag` on the files in `samples/` (text from bytes and from a
path, a PDF from a path and from bytes, a PowerPoint deck with all five options, an image)
and `ApproxTokenChunker(chunk_size=256, overlap=32)` on what they return. Offline, no API key.

Run from the repository root:

    python examples/parse_and_chunk.py
"""

import asyncio
import base64
from pathlib import Path

from archivist.message import DataBlock, TextBlock
from archivist.rag import (
    ApproxTokenChunker,
    Chunk,
    ImageParser,
    PDFParser,
    PPTParser,
    Section,
    TextParser,
)

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def describe(content: TextBlock | DataBlock, width: int = 70) -> str:
    """One line about a block: the start of its text, or the media type and size of its data."""
    if isinstance(content, TextBlock):
        text = " ".join(content.text.split())
        return repr(text if len(text) <= width else text[: width - 3] + "...")
    size = len(base64.b64decode(content.source.data))
    return f"<{content.source.media_type}, {size} bytes>"


def show_sections(title: str, sections: list[Section]) -> None:
    print(f"\n{title}: {len(sections)} section(s)")
    for section in sections:
        print(f"  {section.source} {section.metadata} {describe(section.content)}")


def show_chunks(title: str, chunks: list[Chunk]) -> None:
    print(f"\n{title}: {len(chunks)} chunk(s)")
    for chunk in chunks:
        print(
            f"  chunk {chunk.chunk_index}/{chunk.total_chunks} {chunk.source} "
            f"{chunk.metadata} {describe(chunk.content, width=50)}"
        )


async def main() -> None:
    # Text: bytes are the raw content; a str that names an existing file is read from disk,
    # any other str is the text itself.
    parser = TextParser()
    sections = await parser.parse(
        file=b"# Cats\nCats sleep 12-16 hours per day.\n",
        filename="cats.md",
    )
    show_sections("TextParser, bytes", sections)

    markdown_path = SAMPLES / "archivist-overview.md"
    markdown = await parser.parse(file=str(markdown_path), filename=markdown_path.name)
    show_sections("TextParser, path", markdown)

    # PDF: one Section per page, metadata {"page": n} from 1.
    pdf_path = SAMPLES / "archivist-guide.pdf"
    parser = PDFParser()
    pdf = await parser.parse(file=str(pdf_path), filename=pdf_path.name)
    show_sections("PDFParser, path", pdf)

    with open(pdf_path, "rb") as f:
        from_bytes = await parser.parse(file=f.read(), filename=pdf_path.name)
    same_text = [s.content.text for s in from_bytes] == [s.content.text for s in pdf]
    print(f"  from bytes: {len(from_bytes)} section(s), same text as from the path: {same_text}")

    # PowerPoint: per slide, text and tables make one Section, each picture its own DataBlock
    # Section; metadata {"slide": n} from 1.
    deck_path = SAMPLES / "archivist-architecture.pptx"
    parser = PPTParser(
        include_image=True,
        separate_table=False,
        table_format="markdown",
        slide_prefix="<slide index={index}>",
        slide_suffix="</slide>",
    )
    deck = await parser.parse(file=str(deck_path), filename=deck_path.name)
    show_sections("PPTParser, path", deck)

    # Image: the whole picture is one DataBlock Section; its media type is read from the bytes.
    image_path = SAMPLES / "pipeline.png"
    image = await ImageParser().parse(file=str(image_path), filename=image_path.name)
    show_sections("ImageParser, path", image)

    # Chunk each document on its own: chunk_index runs 0..N-1 within one document.
    chunker = ApproxTokenChunker(chunk_size=256, overlap=32)
    for name, document in [
        (markdown_path.name, markdown),
        (pdf_path.name, pdf),
        (deck_path.name, deck),
        (image_path.name, image),
    ]:
        chunks = await chunker.chunk(document)
        show_chunks(f"ApproxTokenChunker on {name}", chunks)


if __name__ == "__main__":
    asyncio.run(main())
