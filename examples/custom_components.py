"""Custom parser, chunker and vector store, plugged into a KnowledgeBase end to end.

- `MyMarkdownParser(ParserBase)`: one Section per second-level Markdown heading.
- `FixedCharChunker(ChunkerBase)`: windows of a fixed number of characters.
- `InMemoryVectorStore(VectorStoreBase)`: a vector store on numpy: brute-force cosine search,
  `metadata_filter` applied inside the search (before ranking, so `top_k` counts only matching
  records), chunk and document listing, and deletion within a filter, declared in its
  `capabilities`. Its arguments are checked by `archivist.rag.store.core.arguments`, and document
  replacement is the base class's (it keeps the old version until the new one is complete).

All three index `samples/archivist-overview.md` with the offline embedding model, then search,
list and delete through the KnowledgeBase. No network, no API key.

Run from the repository root:

    python examples/custom_components.py
"""

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

import numpy as np

from archivist.embedding import LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag import (
    Chunk,
    ChunkerBase,
    DocumentSummary,
    KnowledgeBase,
    ParserBase,
    Section,
    VectorRecord,
    VectorSearchResult,
    VectorStoreBase,
    default_registry,
)
from archivist.rag.store import SearchMode, StoreCapabilities
from archivist.rag.store.core.arguments import (
    check_chunk_page,
    check_document_arguments,
    check_records,
    check_search,
    matches_filter,
)
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_collection_name,
    check_metadata_filter,
    check_positive_int,
    check_query_vector,
)

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


class MyMarkdownParser(ParserBase):
    supported_media_types: ClassVar[list[str]] = ["text/markdown"]

    async def parse(
        self,
        file: bytes | str,
        filename: str,
    ) -> list[Section]:
        text = file.decode("utf-8") if isinstance(file, bytes) else file
        # One Section per second-level heading, keeping the source.
        return [
            Section(
                content=TextBlock(text=block),
                source=filename,
                metadata={"index": index},
            )
            for index, block in enumerate(text.split("\n## "))
        ]


class FixedCharChunker(ChunkerBase):
    def __init__(self, chunk_size: int = 1000) -> None:
        self._chunk_size = chunk_size

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for section in sections:
            # Multimodal content is passed through whole.
            if not isinstance(section.content, TextBlock):
                chunks.append(
                    Chunk(
                        content=section.content,
                        source=section.source,
                        chunk_index=0,
                        total_chunks=0,
                        metadata=dict(section.metadata),
                    ),
                )
                continue
            text = section.content.text
            for start in range(0, len(text), self._chunk_size):
                chunks.append(
                    Chunk(
                        content=TextBlock(
                            text=text[start : start + self._chunk_size],
                        ),
                        source=section.source,
                        chunk_index=0,
                        total_chunks=0,
                        metadata=dict(section.metadata),
                    ),
                )
        # Number the chunks once all are known.
        for index, chunk in enumerate(chunks):
            chunk.chunk_index = index
            chunk.total_chunks = len(chunks)
        return chunks


# -- the vector store ---------------------------------------------------------------------------


@dataclass
class _Collection:
    """Row i of `vectors` (unit length) is the vector of `records[i]`."""

    dimensions: int
    vectors: np.ndarray
    records: list[VectorRecord] = field(default_factory=list)

    def in_scope(self, metadata_filter: dict[str, Any] | None) -> np.ndarray:
        """A boolean mask of the records whose metadata matches the filter."""
        return np.array(
            [matches_filter(r.chunk.metadata, metadata_filter) for r in self.records], dtype=bool
        )

    def keep(self, mask: np.ndarray) -> None:
        self.vectors = self.vectors[mask]
        self.records = [r for r, kept in zip(self.records, mask, strict=True) if kept]

    def add(self, vectors: np.ndarray, records: list[VectorRecord]) -> None:
        self.vectors = np.vstack([self.vectors, vectors])
        self.records.extend(records)


class InMemoryVectorStore(VectorStoreBase):
    """Collections of vectors in numpy arrays, searched by brute-force cosine similarity.

    Nothing persists: leaving `async with` drops every collection, like Qdrant's ":memory:".
    """

    # Dense search only; delete and list within a metadata filter (so tenants can share it).
    capabilities = StoreCapabilities(scoped_delete=True, chunk_listing=True)

    def __init__(self) -> None:
        self._collections: dict[str, _Collection] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._collections.clear()

    async def create_collection(self, name: str, dimensions: int) -> None:
        check_collection_name(name)
        check_positive_int(dimensions, "dimensions")
        existing = self._collections.get(name)
        if existing is None:
            self._collections[name] = _Collection(dimensions, np.empty((0, dimensions)))
        elif existing.dimensions != dimensions:
            raise ValueError(
                f"collection {name!r} exists with {existing.dimensions} dimensions, "
                f"not dimensions={dimensions}"
            )

    async def delete_collection(self, name: str) -> None:
        check_collection_name(name)
        self._collections.pop(name, None)

    async def has_collection(self, name: str) -> bool:
        check_collection_name(name)
        return name in self._collections

    async def collection_dimensions(self, name: str) -> int | None:
        check_collection_name(name)
        collection = self._collections.get(name)
        return None if collection is None else collection.dimensions

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        check_collection_name(collection)
        if not records:
            return
        target = self._existing(collection)
        check_records(records, target.dimensions)
        vectors = normalized(np.array([r.vector for r in records], dtype=float))
        # Writing a (document, chunk) again replaces it.
        written = {key(r) for r in records}
        target.keep(np.array([key(r) not in written for r in target.records], dtype=bool))
        target.add(vectors, [r.model_copy(deep=True) for r in records])

    async def delete(
        self,
        collection: str,
        document_id: str,
        metadata_filter: dict[str, Any] | None = None,
    ) -> None:
        scope = check_document_arguments(collection, document_id, metadata_filter)
        target = self._collections.get(collection)
        if target is None:
            return
        doomed = target.in_scope(scope) & self._of_document(target, document_id)
        target.keep(~doomed)

    async def search(
        self,
        collection: str,
        query_vector: list[float] | None,
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
        *,
        query_text: str | None = None,
        mode: SearchMode = "dense",
        diversity: float | None = None,
        max_per_document: int | None = None,
        search_filter: SearchFilter | None = None,
    ) -> list[VectorSearchResult]:
        # Declaring no search capability, this store is only ever asked for dense search;
        # anything else is refused with the same message every store gives.
        checked = check_search(
            collection,
            query_vector,
            top_k,
            metadata_filter,
            query_text=query_text,
            mode=mode,
            diversity=diversity,
            max_per_document=max_per_document,
            search_filter=search_filter,
        )
        self.capabilities.refuse_undeclared(checked, type(self).__name__)
        target = self._collections.get(collection)
        if target is None or query_vector is None:
            return []
        query = np.asarray(check_query_vector(query_vector, target.dimensions))
        # The filter picks the candidates first; only they are scored and ranked.
        candidates = np.flatnonzero(target.in_scope(checked.metadata_filter))
        scores = target.vectors[candidates] @ normalized(query)
        best = np.argsort(-scores, kind="stable")[:top_k]
        return [
            VectorSearchResult(
                score=float(scores[i]),
                document_id=target.records[candidates[i]].document_id,
                chunk=target.records[candidates[i]].chunk.model_copy(deep=True),
            )
            for i in best
        ]

    async def list_documents(
        self,
        collection: str,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[DocumentSummary]:
        check_collection_name(collection)
        scope = check_metadata_filter(metadata_filter)
        target = self._collections.get(collection)
        if target is None:
            return []
        counts: dict[str, int] = {}
        firsts: dict[str, Chunk] = {}
        for record, in_scope in zip(target.records, target.in_scope(scope), strict=True):
            if not in_scope:
                continue
            document_id = record.document_id
            counts[document_id] = counts.get(document_id, 0) + 1
            first = firsts.get(document_id)
            if first is None or record.chunk.chunk_index < first.chunk_index:
                firsts[document_id] = record.chunk
        return [
            DocumentSummary(
                document_id=document_id,
                source=firsts[document_id].source,
                chunk_count=counts[document_id],
                metadata=dict(firsts[document_id].metadata),
            )
            for document_id in sorted(counts)
        ]

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[Chunk]:
        scope = check_chunk_page(collection, document_id, offset, limit, metadata_filter)
        target = self._collections.get(collection)
        if target is None:
            return []
        mask = target.in_scope(scope) & self._of_document(target, document_id)
        chunks = [r.chunk for r, kept in zip(target.records, mask, strict=True) if kept]
        chunks.sort(key=lambda chunk: chunk.chunk_index)
        return [chunk.model_copy(deep=True) for chunk in chunks[offset : offset + limit]]

    def _existing(self, name: str) -> _Collection:
        collection = self._collections.get(name)
        if collection is None:
            raise ValueError(f"collection {name!r} does not exist; create it first")
        return collection

    @staticmethod
    def _of_document(collection: _Collection, document_id: str) -> np.ndarray:
        return np.array([r.document_id == document_id for r in collection.records], dtype=bool)


def key(record: VectorRecord) -> tuple[str, int, str]:
    """What identifies a stored chunk: its document, index and metadata (two tenants writing
    one document id keep two copies)."""
    metadata = record.chunk.model_dump_json(include={"metadata"})
    return (record.document_id, record.chunk.chunk_index, metadata)


def normalized(vectors: np.ndarray) -> np.ndarray:
    """Unit-length rows (a zero vector stays zero), so a dot product is the cosine."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


# -- putting them together ------------------------------------------------------------------


async def main() -> None:
    path = SAMPLES / "archivist-overview.md"
    print(f"MyMarkdownParser reads {MyMarkdownParser.supported_extensions()}")

    # A registry routes .md files to the custom parser from now on.
    registry = default_registry()
    registry.register(MyMarkdownParser, MyMarkdownParser)
    parser = registry.parser_for_path(path)
    print(f"registry picks {type(parser).__name__} for {path.name}")

    sections = await parser.parse(file=path.read_bytes(), filename=path.name)
    print(f"{len(sections)} sections:")
    for section in sections:
        print(f"  {section.metadata} {section.content.text.splitlines()[0]!r}")

    chunks = await FixedCharChunker(chunk_size=300).chunk(sections)
    print(f"FixedCharChunker(chunk_size=300): {len(chunks)} chunks")

    async with InMemoryVectorStore() as store:
        knowledge = KnowledgeBase(
            name="custom-kb",
            description="Built from custom components.",
            embedding_model=LocalEmbeddingModel(),
            vector_store=store,
            collection="custom-kb",
        )
        document_id = await knowledge.insert_document(
            chunks, document_metadata={"filename": path.name}
        )
        research = KnowledgeBase(
            name="research-kb",
            description="Only the research team's notes.",
            embedding_model=knowledge.embedding_model,
            vector_store=store,
            collection="custom-kb",
            metadata_filter={"team": "research"},
        )
        note = Chunk(
            content=TextBlock(text="Research note: chunk overlap helps recall at borders."),
            source="notes.txt",
            chunk_index=0,
            total_chunks=1,
        )
        await research.insert_document([note], document_id="research-note")

        question = "Why do neighbouring chunks overlap?"
        for handle in [knowledge, research]:
            print(f"\n{handle.name} (metadata_filter={handle.metadata_filter}) search {question!r}")
            for hit in await handle.search([question], top_k=2):
                text = " ".join(hit.chunk.content.text.split())[:60]
                print(f"  {hit.score:.3f} {hit.chunk.source} {hit.chunk.metadata} {text!r}")

        print("\nlist_documents:")
        for summary in await knowledge.list_documents():
            print(f"  {summary.document_id} {summary.source} chunks={summary.chunk_count}")

        page = await knowledge.list_chunks(document_id, offset=0, limit=3)
        print(f"list_chunks(limit=3): chunk indexes {[c.chunk_index for c in page]}")

        await knowledge.delete_document(document_id)
        print(f"after delete_document({document_id}):")
        for summary in await knowledge.list_documents():
            print(f"  {summary.document_id} {summary.source} chunks={summary.chunk_count}")


if __name__ == "__main__":
    asyncio.run(main())
