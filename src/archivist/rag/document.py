"""Sections (what a parser yields) and chunks (what a chunker yields and a store holds)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from archivist.message import MediaBlock

PICTURE_TEXT = "ocr_text"
"""Metadata of a picture (a DataBlock Section or Chunk) whose text OCR read (true): that text
is the text Section after it, so a text-only model that leaves the picture out loses none of
its words."""


class Section(BaseModel):
    """One natural unit of a file: a PDF page, a slide's text, an image, a whole text file."""

    model_config = ConfigDict(extra="forbid")

    content: MediaBlock
    source: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    continued: bool = Field(default=False, exclude=True)
    """This text Section goes on with the previous one's text: a long text streamed in
    blocks (`ParserBase.stream_sections`); chunkers cut the run as one text."""


class Chunk(BaseModel):
    """One stored piece of a document: `chunk_index` of `total_chunks`; never a score or vector."""

    model_config = ConfigDict(extra="forbid")

    content: MediaBlock
    source: str
    chunk_index: int = Field(ge=0)
    total_chunks: int = Field(ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)
