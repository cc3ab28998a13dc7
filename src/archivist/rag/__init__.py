"""Retrieval-augmented generation: parsers, chunkers, vector stores and the KnowledgeBase."""

from archivist.rag.chunker import ApproxTokenChunker, ChunkerBase
from archivist.rag.document import Chunk, Section
from archivist.rag.parser import (
    ImageParser,
    ParserBase,
    ParserRegistry,
    PDFParser,
    PPTParser,
    TextParser,
    UnsupportedFileTypeError,
    default_registry,
)
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store import VectorStoreBase

__all__ = [
    "ApproxTokenChunker",
    "Chunk",
    "ChunkerBase",
    "DocumentSummary",
    "ImageParser",
    "PDFParser",
    "PPTParser",
    "ParserBase",
    "ParserRegistry",
    "Section",
    "TextParser",
    "UnsupportedFileTypeError",
    "VectorRecord",
    "VectorSearchResult",
    "VectorStoreBase",
    "default_registry",
]
