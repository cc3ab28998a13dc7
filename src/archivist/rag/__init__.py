"""Retrieval-augmented generation: parsers, chunkers, vector stores and the KnowledgeBase."""

from archivist.rag.chunker import ApproxTokenChunker, ChunkerBase
from archivist.rag.document import Chunk, Section
from archivist.rag.knowledge_base import (
    DocumentNotFoundError,
    IncompleteDocument,
    KnowledgeBase,
    NewDocument,
    RepairReport,
    VerifyReport,
)
from archivist.rag.parser import (
    ExcelParser,
    HTMLParser,
    ImageParser,
    MarkdownParser,
    ParserBase,
    ParserRegistry,
    PDFParser,
    PPTParser,
    RSTParser,
    TextParser,
    UnsupportedFileTypeError,
    WordParser,
    default_registry,
)
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store import VectorStoreBase
from archivist.rag.store.pgvector import PgVectorStore
from archivist.rag.store.qdrant import QdrantStore, StoreLockedError

__all__ = [
    "ApproxTokenChunker",
    "Chunk",
    "ChunkerBase",
    "DocumentNotFoundError",
    "DocumentSummary",
    "ExcelParser",
    "HTMLParser",
    "ImageParser",
    "IncompleteDocument",
    "KnowledgeBase",
    "MarkdownParser",
    "NewDocument",
    "PDFParser",
    "PPTParser",
    "ParserBase",
    "ParserRegistry",
    "PgVectorStore",
    "QdrantStore",
    "RSTParser",
    "RepairReport",
    "Section",
    "StoreLockedError",
    "TextParser",
    "UnsupportedFileTypeError",
    "VectorRecord",
    "VectorSearchResult",
    "VectorStoreBase",
    "VerifyReport",
    "WordParser",
    "default_registry",
]
