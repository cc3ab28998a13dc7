"""The documents the retriever tests index, and the handles their fixtures give."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from archivist.message import TextBlock
from archivist.rag import Chunk, KnowledgeBase

DOCUMENTS: dict[str, list[str]] = {
    "tea.md": [
        "Green tea steeps for two minutes in water at 80 degrees Celsius.",
        "Black tea wants boiling water and four minutes of steeping.",
        "Oolong tea can be steeped several times, a little longer each time.",
    ],
    "rust.txt": ["Rust's borrow checker enforces ownership and lifetimes at compile time."],
    "cats.md": ["Cats sleep for most of the day and purr when they are content."],
}
"""file name -> its chunks' texts; each chunk is on its own page (page = index + 1)."""


async def fill(knowledge_base: KnowledgeBase) -> None:
    """Index `DOCUMENTS` into `knowledge_base`, a document per file."""
    for source, texts in DOCUMENTS.items():
        await knowledge_base.insert_document(
            [
                Chunk(
                    content=TextBlock(text=text),
                    source=source,
                    chunk_index=index,
                    total_chunks=len(texts),
                    metadata={"page": index + 1, "topic": source.split(".")[0]},
                )
                for index, text in enumerate(texts)
            ],
            document_metadata={"path": f"/notes/{source}"},
        )


@dataclass
class HeldKnowledgeBase:
    """A knowledge base whose store is open on a loop of its own thread, as a sync program
    holds one while it calls a retriever's sync and async methods from anywhere."""

    knowledge_base: KnowledgeBase
    loop: asyncio.AbstractEventLoop


@dataclass
class Service:
    url: str
    keys: dict[str, str]
    """tenant -> API key; each tenant has knowledge base `notes` of `DOCUMENTS` under its
    own file names (`<tenant>-tea.md` ...)."""
