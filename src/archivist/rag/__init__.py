"""Retrieval-augmented generation: parsers, chunkers, vector stores and the KnowledgeBase.

Each name is imported on first use, so a command that searches never loads the parsers.
"""

from typing import TYPE_CHECKING

from archivist._util.lazy import lazy_submodule_exports

if TYPE_CHECKING:
    from archivist.rag.chunker import ApproxTokenChunker, ChunkerBase
    from archivist.rag.document import Chunk, Section
    from archivist.rag.knowledge.factories import open_knowledge_base
    from archivist.rag.knowledge.knowledge_base import (
        DocumentNotFoundError,
        IncompleteDocument,
        KnowledgeBase,
        NewDocument,
        RepairReport,
        VerifyReport,
    )
    from archivist.rag.knowledge.profile import KnowledgeProfile, StoreSpec
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
    from archivist.rag.record import (
        DocumentSummary,
        DuplicateSource,
        VectorRecord,
        VectorSearchResult,
    )
    from archivist.rag.store import VectorStoreBase
    from archivist.rag.store.pgvector import PgVectorStore
    from archivist.rag.store.qdrant import QdrantStore, StoreLockedError

_MODULES = {
    "chunker": ["ApproxTokenChunker", "ChunkerBase"],
    "document": ["Chunk", "Section"],
    "knowledge.knowledge_base": [
        "DocumentNotFoundError",
        "IncompleteDocument",
        "KnowledgeBase",
        "NewDocument",
        "RepairReport",
        "VerifyReport",
    ],
    "knowledge.factories": ["open_knowledge_base"],
    "knowledge.profile": ["KnowledgeProfile", "StoreSpec"],
    "parser": [
        "ExcelParser",
        "HTMLParser",
        "ImageParser",
        "MarkdownParser",
        "ParserBase",
        "ParserRegistry",
        "PDFParser",
        "PPTParser",
        "RSTParser",
        "TextParser",
        "UnsupportedFileTypeError",
        "WordParser",
        "default_registry",
    ],
    "record": ["DocumentSummary", "DuplicateSource", "VectorRecord", "VectorSearchResult"],
    "store": ["VectorStoreBase"],
    "store.pgvector": ["PgVectorStore"],
    "store.qdrant": ["QdrantStore", "StoreLockedError"],
}
__getattr__, __dir__ = lazy_submodule_exports(__name__, _MODULES)

__all__ = [
    "ApproxTokenChunker",
    "Chunk",
    "ChunkerBase",
    "DocumentNotFoundError",
    "DocumentSummary",
    "DuplicateSource",
    "ExcelParser",
    "HTMLParser",
    "ImageParser",
    "IncompleteDocument",
    "KnowledgeBase",
    "KnowledgeProfile",
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
    "StoreSpec",
    "TextParser",
    "UnsupportedFileTypeError",
    "VectorRecord",
    "VectorSearchResult",
    "VectorStoreBase",
    "VerifyReport",
    "WordParser",
    "default_registry",
    "open_knowledge_base",
]
