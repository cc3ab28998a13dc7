"""Parse a text file and a custom Markdown file, chunk with the built-in and a custom chunker."""

import asyncio
import json

from agentscope.message import TextBlock
from agentscope.rag import ApproxTokenChunker, Chunk, ChunkerBase, ParserBase, Section, TextParser

TEXT = (
    "Cats sleep twelve to sixteen hours a day. They hunt at dawn and dusk.\n\n"
    "Dogs need daily walks and enjoy fetching sticks in the park.\n"
) * 6


class MyMarkdownParser(ParserBase):
    supported_media_types = ["text/markdown"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        text = file.decode("utf-8") if isinstance(file, bytes) else file
        return [
            Section(content=TextBlock(text=block), source=filename, metadata={"index": index})
            for index, block in enumerate(text.split("\n## "))
        ]


class FixedCharChunker(ChunkerBase):
    def __init__(self, chunk_size: int = 1000) -> None:
        self._chunk_size = chunk_size

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for section in sections:
            text = section.content.text
            for start in range(0, len(text), self._chunk_size):
                chunks.append(
                    Chunk(
                        content=TextBlock(text=text[start : start + self._chunk_size]),
                        source=section.source,
                        chunk_index=0,
                        total_chunks=0,
                        metadata=dict(section.metadata),
                    )
                )
        for index, chunk in enumerate(chunks):
            chunk.chunk_index = index
            chunk.total_chunks = len(chunks)
        return chunks


def shape(chunks: list[Chunk]) -> list[dict]:
    return [
        {
            "text": c.content.text,
            "source": c.source,
            "index": c.chunk_index,
            "total": c.total_chunks,
            "metadata": c.metadata,
        }
        for c in chunks
    ]


async def main() -> None:
    sections = await TextParser().parse(file=TEXT.encode(), filename="pets.txt")
    approx = await ApproxTokenChunker(
        ApproxTokenChunker.Parameters(chunk_size=64, overlap=8)
    ).chunk(sections)
    md = "# Pets\nintro\n## Cats\nCats purr.\n## Dogs\nDogs bark."
    custom_sections = await MyMarkdownParser().parse(file=md.encode(), filename="pets.md")
    fixed = await FixedCharChunker(chunk_size=10).chunk(custom_sections)
    print(
        json.dumps(
            {
                "text_sections": [[s.content.text, s.source] for s in sections],
                "approx_chunk_count": len(approx),
                "approx_total": sorted({c.total_chunks for c in approx}),
                "approx_covers_text": all(c.content.text in TEXT for c in approx),
                "custom_parser_sections": [[s.content.text, s.metadata] for s in custom_sections],
                "fixed_chunks": shape(fixed),
                "md_supported": MyMarkdownParser.supported_media_types,
            }
        )
    )


asyncio.run(main())
