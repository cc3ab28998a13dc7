"""The layout of a stored chunk, the same in every engine: one point (a row) per chunk, with
these fields (Qdrant: its payload; PostgreSQL: columns):

    document_id   str   the document the chunk belongs to
    generation    str   id of the write (insert call or replace_document) that stored it;
                        ids sort by time (see generations.new_generation)
    chunk_index   int   position in the document
    total_chunks  int   chunk count the chunker reported
    source        str   where the document came from
    content       str   the TextBlock / DataBlock as a JSON string: opaque to the engine,
                        which converts and stores one string much faster than a nested object
    metadata      dict  the chunk's own metadata, as JSON, nested so user keys cannot collide
                        with the fields above; filters address `metadata."<key>"`
    term_length   int   the chunk's length in BM25 terms (absent or 0: no BM25 vector), which
                        a delete takes off the collection's BM25 totals

Point ids are UUIDs. `replace_document` gives each chunk a new id made from its generation: the
generation's time, then a hash of (document_id, generation, chunk_index), so a new version never
overwrites the old one before it is whole, and ids arrive in the order they were written (the
engine looks every upserted id up in each of its segments; ids that sort after all earlier ones
keep that lookup cheap however many segments there are, where random ids cost more as the
collection grows). `insert` uses a 128-bit hash of (document_id, a digest of the chunk's metadata,
chunk_index), so inserting the same records again overwrites them instead of duplicating them,
while two tenants that write the same document id into one collection (their chunks differ in the
tenant key) never overwrite each other's points.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorRecord
from archivist.rag.store.core.arguments import stored_metadata

DOCUMENT_ID = "document_id"
GENERATION = "generation"
CHUNK_INDEX = "chunk_index"
TOTAL_CHUNKS = "total_chunks"
SOURCE = "source"
CONTENT = "content"
METADATA = "metadata"
TERM_LENGTH = "term_length"

SUMMARY_FIELDS = (DOCUMENT_ID, SOURCE, METADATA)
"""The payload fields a DocumentSummary needs (the content block is left on disk)."""


def point_id(document_id: str, version: str, chunk_index: int) -> str:
    """The stable id of chunk `chunk_index` of `version` of a document (see the module doc)."""
    key = f"{document_id}\x1f{version}\x1f{chunk_index}".encode()
    return str(uuid.UUID(bytes=hashlib.blake2b(key, digest_size=16).digest()))


def generation_point_id(document_id: str, generation: str, chunk_index: int) -> str:
    """The id of chunk `chunk_index` written by `generation`: the generation's time (its first
    16 hex digits), then 64 bits of hash, so ids sort by the time they were written."""
    key = f"{document_id}\x1f{generation}\x1f{chunk_index}".encode()
    written = bytes.fromhex(generation[:16])
    return str(uuid.UUID(bytes=written + hashlib.blake2b(key, digest_size=8).digest()))


def metadata_version(metadata: Mapping[str, Any]) -> str:
    """The version `insert` gives a chunk: a digest of its JSON metadata (see the module doc)."""
    text = json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "m" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def chunk_metadata(record: VectorRecord) -> dict[str, Any]:
    """The record's chunk metadata in the JSON form it is stored (and filtered) in."""
    return stored_metadata(record)


def payload(record: VectorRecord, generation: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The payload of `record` written by `generation`, with its JSON `metadata`."""
    chunk = record.chunk
    return {
        DOCUMENT_ID: record.document_id,
        GENERATION: generation,
        CHUNK_INDEX: chunk.chunk_index,
        TOTAL_CHUNKS: chunk.total_chunks,
        SOURCE: chunk.source,
        CONTENT: chunk.content.model_dump_json(),
        METADATA: dict(metadata),
    }


def chunk_from(stored: Mapping[str, Any]) -> Chunk:
    """The chunk a stored payload holds."""
    return Chunk.model_validate(
        {
            "content": json.loads(stored[CONTENT]),
            "source": stored[SOURCE],
            "chunk_index": stored[CHUNK_INDEX],
            "total_chunks": stored[TOTAL_CHUNKS],
            "metadata": stored.get(METADATA) or {},
        }
    )


def summary_from(stored: Mapping[str, Any], chunk_count: int) -> DocumentSummary:
    """A document's summary from the payload of its first chunk."""
    return DocumentSummary(
        document_id=stored[DOCUMENT_ID],
        source=stored[SOURCE],
        chunk_count=chunk_count,
        metadata=stored.get(METADATA) or {},
    )
