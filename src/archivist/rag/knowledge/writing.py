"""The one write path: documents' chunks stamped with their metadata, embedded in full-size
batches and handed to the store, each document replacing its old version whole."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from archivist._util.off_loop import off_loop
from archivist.errors import InvalidArgumentError, InvalidVectorError
from archivist.message import DataBlock
from archivist.rag.document import PICTURE_TEXT, Chunk
from archivist.rag.knowledge.notices import SKIPPED_DATA_BLOCKS, SKIPPED_DATA_DOCUMENT, logger
from archivist.rag.knowledge.vocabulary import SAMPLE_CHUNKS, UnreadableWarnings
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.validation import check_document_id, vector_problem

if TYPE_CHECKING:
    from archivist.embedding import EmbeddingModelBase


@dataclass(frozen=True)
class NewDocument:
    """One document for `KnowledgeBase.insert_documents`: its chunks, id and metadata."""

    chunks: Sequence[Chunk] | AsyncIterable[Chunk]
    """A list, or an async iterable of chunks already numbered with their final total."""
    document_id: str | None = None
    document_metadata: dict[str, Any] | None = None


WriteProgress = Callable[[str, int], None]
"""`on_progress(document_id, chunks_written_so_far)` of `KnowledgeBase.insert_documents`."""


class WriteTarget(Protocol):
    """What a write needs of a knowledge base: where, with which model, in which scope."""

    embedding_model: EmbeddingModelBase
    vector_store: VectorStoreBase
    collection: str
    metadata_filter: MetadataFilter | None
    write_batch_size: int

    async def ensure_collection(self) -> None: ...


def left_out(model: EmbeddingModelBase, chunk: Chunk) -> bool:
    """The DataBlock rule: a text-only model leaves a DataBlock chunk out of the document
    (before the chunks are numbered: what is stored is numbered 0..M-1 over what it embeds)."""
    return isinstance(chunk.content, DataBlock) and not model.supports_multimodal


def unread_picture(chunk: Chunk) -> bool:
    """Whether a DataBlock chunk left out takes words with it: OCR read no text on it (with
    `PICTURE_TEXT`, its text is indexed in the chunk after it)."""
    return not chunk.metadata.get(PICTURE_TEXT)


def report_left_out(document_id: str, count: int, model: EmbeddingModelBase) -> None:
    """The one warning that `count` DataBlock chunks of a document whose words are not
    indexed (`unread_picture`) were left out, with the attributes `archivist index` gathers
    into one note."""
    logger.warning(
        "document %r: skipped %d DataBlock chunk(s): %s is text-only",
        document_id,
        count,
        model.model,
        extra={SKIPPED_DATA_DOCUMENT: document_id, SKIPPED_DATA_BLOCKS: count},
    )


class Numbering:
    """The one numbering rule for a document's chunks, listed or streamed, checked as they
    come: `chunk_index` 0..N-1 in order, each with the same `total_chunks` N, and N of them.
    Chunkers number chunks so, and `verify` checks a stored document against it."""

    def __init__(self, document_id: str) -> None:
        self.document_id = document_id
        self.count = 0
        """Chunks seen so far."""
        self._total: int | None = None

    def see(self, chunk: Chunk) -> None:
        """Check the next chunk's numbering."""
        total = chunk.total_chunks if self._total is None else self._total
        self._total = total
        if chunk.chunk_index != self.count or chunk.total_chunks != total:
            raise InvalidArgumentError(
                self._problem(
                    f"chunk {self.count} has chunk_index {chunk.chunk_index} and total_chunks "
                    f"{chunk.total_chunks} (the first said {total})"
                ),
                argument="chunks",
            )
        self.count += 1

    def end(self) -> None:
        """Check that as many chunks came as they said."""
        if self.count != self._total:
            raise InvalidArgumentError(
                self._problem(
                    f"they ended after {self.count} chunks but said total_chunks={self._total}"
                ),
                argument="chunks",
            )

    def _problem(self, detail: str) -> str:
        return (
            f"document {self.document_id!r}: chunks must come numbered 0..N-1 in order "
            f"(chunk_index), all with total_chunks N, as chunkers number them; {detail}"
        )


class DocumentWriter:
    """Writes documents into `target`'s collection (see `KnowledgeBase.insert_documents`)."""

    def __init__(self, target: WriteTarget, warnings: UnreadableWarnings) -> None:
        self._target = target
        self._warnings = warnings

    async def write(
        self,
        documents: Iterable[NewDocument] | AsyncIterable[NewDocument],
        on_progress: WriteProgress | None,
    ) -> list[str]:
        """Write `documents` in order; returns their ids (new ones for documents without)."""
        batch_size = self._target.write_batch_size
        ids: list[str] = []
        group: list[tuple[str, list[Chunk]]] = []
        index = -1
        async for document in _documents(documents):
            index += 1
            if not isinstance(document, NewDocument):
                raise TypeError(f"documents[{index}] must be a NewDocument")
            document_id = (
                uuid.uuid4().hex
                if document.document_id is None
                else check_document_id(document.document_id)
            )
            if document_id in ids:
                raise InvalidArgumentError(
                    f"documents[{index}]: document_id {document_id!r} repeats", argument="documents"
                )
            ids.append(document_id)
            if not isinstance(document.chunks, Sequence) and isinstance(
                document.chunks, AsyncIterable
            ):
                await self._write_group(group, on_progress)
                group = []
                stream = self._prepared_stream(
                    document.chunks, document.document_metadata, document_id
                )
                await self._write_stream(document_id, stream, on_progress)
                continue
            chunks = await off_loop(
                functools.partial(
                    self._checked, document.chunks, document.document_metadata, document_id
                ),
                _length(document.chunks),
            )
            if len(chunks) >= batch_size:
                await self._write_stream(document_id, _aiter(chunks), on_progress)
                continue
            group.append((document_id, chunks))
            if sum(len(c) for _, c in group) >= batch_size:
                await self._write_group(group, on_progress)
                group = []
        await self._write_group(group, on_progress)
        return ids

    async def _write_group(
        self, group: list[tuple[str, list[Chunk]]], on_progress: WriteProgress | None
    ) -> None:
        """Embed the chunks of small documents in shared calls, then write each whole."""
        if not group:
            return
        target = self._target
        await target.ensure_collection()
        pairs = [(document_id, chunk) for document_id, chunks in group for chunk in chunks]
        records: list[VectorRecord] = []
        for start in range(0, len(pairs), target.write_batch_size):
            records += await self._records(pairs[start : start + target.write_batch_size])
        by_document: dict[str, list[VectorRecord]] = {}
        for record in records:
            by_document.setdefault(record.document_id, []).append(record)
        for document_id, _ in group:
            written = by_document.pop(document_id)
            await target.vector_store.replace_document(
                target.collection, document_id, _one_batch(written), target.metadata_filter
            )
            if on_progress is not None:
                on_progress(document_id, len(written))

    async def _write_stream(
        self,
        document_id: str,
        chunks: AsyncIterator[Chunk],
        on_progress: WriteProgress | None,
    ) -> None:
        """Embed and write one document batch by batch: its vectors are never all held."""
        target = self._target
        await target.ensure_collection()
        written = 0

        async def batches() -> AsyncIterator[list[VectorRecord]]:
            nonlocal written
            batch: list[Chunk] = []
            async for chunk in chunks:
                batch.append(chunk)
                if len(batch) >= target.write_batch_size:
                    yield await self._records([(document_id, c) for c in batch])
                    written += len(batch)
                    batch = []
                    if on_progress is not None:
                        on_progress(document_id, written)
            if batch:
                yield await self._records([(document_id, c) for c in batch])
                written += len(batch)
                if on_progress is not None:
                    on_progress(document_id, written)

        await target.vector_store.replace_document(
            target.collection, document_id, batches(), target.metadata_filter
        )

    async def _prepared_stream(
        self,
        chunks: AsyncIterable[Chunk],
        document_metadata: dict[str, Any] | None,
        document_id: str,
    ) -> AsyncIterator[Chunk]:
        """`chunks` stamped as `_prepared` does and checked as they come by the one numbering
        rule (`Numbering`).

        A text-only model's DataBlock is left out of a list (`_prepared`), which is then
        renumbered; a stream's numbering is final (its first records are written before its
        end is seen), so there the DataBlock is an error: drop DataBlocks before numbering
        the stream, as `ingest_files` does (`left_out`)."""
        base = dict(document_metadata or {})
        _check_json("document_metadata", base)
        model = self._target.embedding_model
        numbering = Numbering(document_id)
        sample: list[Chunk] = []
        pending: list[tuple[Chunk, str]] = []
        async for chunk in chunks:
            position = numbering.count
            if not isinstance(chunk, Chunk):
                raise TypeError(
                    f"document {document_id!r}: chunk {position} must be a Chunk, "
                    f"not {type(chunk).__name__}"
                )
            if left_out(model, chunk):
                raise InvalidArgumentError(
                    f"document {document_id!r}: chunk {position} is a DataBlock and "
                    f"{model.model!r} is text-only (a streamed document cannot "
                    "be renumbered; filter DataBlocks out before numbering the stream)",
                    argument="chunks",
                )
            numbering.see(chunk)
            pending.append((chunk, f"chunks[{position}].metadata"))
            if len(pending) < self._target.write_batch_size:
                continue
            for prepared in await self._sampled(pending, base, sample, document_id):
                yield prepared
            pending = []
        for prepared in await self._sampled(pending, base, sample, document_id):
            yield prepared
        if numbering.count == 0:
            raise InvalidArgumentError(
                f"document {document_id!r}: chunks is empty, nothing to insert", argument="chunks"
            )
        numbering.end()
        if len(sample) < SAMPLE_CHUNKS:
            self._warnings.check(sample, document_id)

    def _checked(
        self,
        chunks: Sequence[Chunk],
        document_metadata: dict[str, Any] | None,
        document_id: str,
    ) -> list[Chunk]:
        """`_prepared`, then the unreadable-text check of the result."""
        prepared = self._prepared(chunks, document_metadata, document_id)
        self._warnings.check(prepared, document_id)
        return prepared

    def _prepared(
        self,
        chunks: Sequence[Chunk],
        document_metadata: dict[str, Any] | None,
        document_id: str,
    ) -> list[Chunk]:
        """Copies of `chunks` stamped with their metadata, numbered as `Numbering` says; a
        text-only model's DataBlock chunks are left out (`left_out`, reported by
        `report_left_out`) and the rest renumbered in order."""
        if isinstance(chunks, Chunk) or not isinstance(chunks, Sequence):
            raise TypeError("chunks must be a list of Chunk")
        if not chunks:
            raise InvalidArgumentError(
                f"document {document_id!r}: chunks is empty, nothing to insert", argument="chunks"
            )
        base = dict(document_metadata or {})
        _check_json("document_metadata", base)
        model = self._target.embedding_model
        numbering = Numbering(document_id)
        kept: list[Chunk] = []
        for index, chunk in enumerate(chunks):
            if not isinstance(chunk, Chunk):
                raise TypeError(f"chunks[{index}] must be a Chunk, not {type(chunk).__name__}")
            numbering.see(chunk)
            if not left_out(model, chunk):
                kept.append(self._stamped(chunk, base, f"chunks[{index}].metadata"))
        numbering.end()
        skipped = len(chunks) - len(kept)
        if not kept:
            raise InvalidArgumentError(
                f"document {document_id!r}: no chunk that {model.model!r} "
                f"can embed (all {skipped} are DataBlocks and the model is text-only)",
                argument="chunks",
            )
        if skipped:
            unread = sum(1 for c in chunks if left_out(model, c) and unread_picture(c))
            if unread:
                report_left_out(document_id, unread, model)
            for index, chunk in enumerate(kept):
                chunk.chunk_index, chunk.total_chunks = index, len(kept)
        return kept

    async def _sampled(
        self,
        pending: list[tuple[Chunk, str]],
        base: dict[str, Any],
        sample: list[Chunk],
        document_id: str,
    ) -> list[Chunk]:
        """`_stamped` of each (chunk, what) pair, off the loop (`off_loop`: a deep copy per
        chunk); the first SAMPLE_CHUNKS go into `sample`, checked for unreadable text once it
        is full."""
        if not pending:
            return []
        prepared = await off_loop(
            lambda: [self._stamped(chunk, base, what) for chunk, what in pending], len(pending)
        )
        if len(sample) < SAMPLE_CHUNKS:
            sample += prepared[: SAMPLE_CHUNKS - len(sample)]
            if len(sample) == SAMPLE_CHUNKS:
                self._warnings.check(sample, document_id)
        return prepared

    def _stamped(self, chunk: Chunk, base: dict[str, Any], what: str) -> Chunk:
        """A copy of `chunk` whose metadata is `base` ∪ its own ∪ the handle's scope (the
        scope wins; a None value in the scope removes that key)."""
        _check_json(what, chunk.metadata)
        scope = self._target.metadata_filter or {}
        metadata = {**base, **chunk.metadata, **scope}
        for key in [k for k, v in scope.items() if v is None]:
            del metadata[key]
        return chunk.model_copy(update={"metadata": metadata}, deep=True)

    async def _records(self, pairs: list[tuple[str, Chunk]]) -> list[VectorRecord]:
        """Embed the chunks of (document id, chunk) pairs in one call and check every vector."""
        model = self._target.embedding_model
        response = await model([chunk.content for _, chunk in pairs], input_type="document")
        if len(response.embeddings) != len(pairs):
            ids = sorted({document_id for document_id, _ in pairs})
            miscount = f"returned {len(response.embeddings)} vectors for {len(pairs)} chunks"
            raise InvalidVectorError(
                f"{model.model!r} {miscount} of document(s) {ids}",
                model=model.model,
                problem=miscount,
                document_id=ids[0] if len(ids) == 1 else None,
            )
        return await off_loop(
            functools.partial(_checked_records, model, pairs, response.embeddings), len(pairs)
        )


def _checked_records(
    model: EmbeddingModelBase, pairs: list[tuple[str, Chunk]], vectors: Sequence[Sequence[float]]
) -> list[VectorRecord]:
    """The records of (document id, chunk) pairs and their vectors, every vector checked."""
    dimensions = model.dimensions
    records = []
    for (document_id, chunk), vector in zip(pairs, vectors, strict=True):
        problem = vector_problem(vector, dimensions)
        if problem is not None:
            raise InvalidVectorError(
                f"{model.model!r} returned a bad vector for chunk "
                f"{chunk.chunk_index} of document {document_id!r}: it {problem}",
                model=model.model,
                problem=problem,
                document_id=document_id,
                chunk_index=chunk.chunk_index,
            )
        records.append(VectorRecord(vector=vector, document_id=document_id, chunk=chunk))
    return records


def _length(chunks: object) -> int:
    """How many chunks a list holds (0 for anything else, which `_prepared` rejects)."""
    return len(chunks) if isinstance(chunks, Sequence) else 0


async def _one_batch(records: list[VectorRecord]) -> AsyncIterator[list[VectorRecord]]:
    yield records


async def _documents(
    documents: Iterable[NewDocument] | AsyncIterable[NewDocument],
) -> AsyncIterator[NewDocument]:
    if isinstance(documents, AsyncIterable):
        async for document in documents:
            yield document
    else:
        for document in documents:
            yield document


async def _aiter(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


def _check_json(what: str, value: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be a dict, not {type(value).__name__}")
    found = _non_string_key(value)
    if found is not None:
        (bad_key,) = found
        raise InvalidArgumentError(
            f"{what} has the key {bad_key!r} ({type(bad_key).__name__}): JSON object keys "
            "must be str (a JSON round trip would turn it into a string)",
            argument=what,
        )
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"{what} is not JSON-serialisable: {exc}", argument=what
        ) from exc


def _non_string_key(value: object) -> tuple[object] | None:
    """(the first dict key that is not a str anywhere inside `value`,), or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (key,)
            found = _non_string_key(item)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for item in value:
            found = _non_string_key(item)
            if found is not None:
                return found
    return None
