"""Incremental ingestion of files into a KnowledgeBase: content hashes decide what to do.

Each file gets a document id that is stable for (scope, resolved path) within a knowledge
base; its metadata records the content's sha256 and a fingerprint of the pipeline (chunker +
embedding model). An unchanged file is skipped without parsing or embedding, a changed one
replaces its old version, and `prune` removes documents whose files are gone.

Ingestion writes in one tenant scope (see `archivist.rag.store.tenant`): the handle's
`metadata_filter`, or the "no tenant" scope for a handle without one. It never adopts, replaces
or deletes a document of another scope. The index reflects the files as they are now: a file
that was indexed and now is empty, unreadable or unparseable has its old version removed
(`Outcome.REMOVED`), unless `keep_stale` is set.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import hashlib
import json
import mimetypes
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from archivist._util.file_digest import file_sha256 as file_sha256
from archivist.errors import (
    ConfigurationError,
    DocumentParseError,
    EmbeddingAPIError,
    InvalidVectorError,
    ScansUnreadError,
    TransientEmbeddingError,
)
from archivist.rag.chunker.base import ChunkerBase
from archivist.rag.document import Chunk
from archivist.rag.knowledge.knowledge_base import KnowledgeBase, NewDocument
from archivist.rag.knowledge.writing import left_out, report_left_out, unread_picture
from archivist.rag.parser.base import ParserBase
from archivist.rag.parser.registry import ParserRegistry, UnsupportedFileTypeError
from archivist.rag.record import DocumentSummary
from archivist.rag.store.base import MetadataFilter
from archivist.rag.store.search_filter import INDEXED_AT_KEY as INDEXED_AT_KEY
from archivist.rag.store.search_filter import MODIFIED_KEY
from archivist.rag.store.search_filter import PATH_KEY as PATH_KEY
from archivist.rag.store.tenant import tenant_scope

if TYPE_CHECKING:
    from archivist.embedding import EmbeddingModelBase

_ID_NAMESPACE = uuid.UUID("6f1d4c0e-3a57-4f0b-9a43-7d7e1c9b2a10")
HASH_KEY = "content_sha256"
PIPELINE_KEY = "pipeline"


class Outcome(enum.StrEnum):
    """What ingestion did with one file or document."""

    INDEXED = "indexed"
    UNCHANGED = "unchanged"
    UPDATED = "updated"
    SKIPPED = "skipped"
    FAILED = "failed"
    PRUNED = "pruned"
    REMOVED = "removed"
    """A document whose file is still there but no longer yields anything to index."""


@dataclass
class FileResult:
    """The outcome for one path, with the chunk count or the reason it failed."""

    path: str
    outcome: Outcome
    document_id: str | None = None
    chunks: int = 0
    error: str | None = None
    cause: Exception | None = field(default=None, repr=False, compare=False)
    """The exception behind a FAILED (or type-SKIPPED) file, for callers that render it
    from its fields (e.g. a service that must not show its own folders)."""
    ocr_pages: int = 0
    """Pages (an image counts as one) whose text OCR read."""


@dataclass
class IngestReport:
    """Everything one ingestion run did."""

    results: list[FileResult] = field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        """How many files (or pruned documents) ended with `outcome`."""
        return sum(1 for r in self.results if r.outcome is outcome)

    @property
    def failed(self) -> list[FileResult]:
        """The files that could not be indexed."""
        return [r for r in self.results if r.outcome is Outcome.FAILED]


def document_id_for(path: str | Path, scope: MetadataFilter | None = None) -> str:
    """The stable document id of a file in `scope`: a UUID5 of its resolved path, prefixed by
    the scope's non-None values (so the "no tenant" scope keeps the plain path's id)."""
    resolved = str(Path(path).resolve())
    named = {k: v for k, v in (scope or {}).items() if v is not None}
    if not named:
        return str(uuid.uuid5(_ID_NAMESPACE, resolved))
    key = json.dumps(named, sort_keys=True, ensure_ascii=False)
    return str(uuid.uuid5(_ID_NAMESPACE, f"{key}\n{resolved}"))


def scoped_handle(kb: KnowledgeBase) -> KnowledgeBase:
    """`kb` itself when it has a scope, else a handle on the same collection in the "no tenant"
    scope (so a write never reaches a tenant's records)."""
    if kb.metadata_filter is not None:
        return kb
    return KnowledgeBase(
        kb.name,
        kb.description,
        kb.embedding_model,
        kb.vector_store,
        kb.collection,
        tenant_scope(None),
        write_batch_size=kb.write_batch_size,
    )


def pipeline_fingerprint(chunker: ChunkerBase, kb: KnowledgeBase, reading: str = "") -> str:
    """What besides the bytes decides a file's chunks and vectors; `reading` is what the
    parsers add (the registry's `identity`: its OCR engine)."""
    parameters = getattr(chunker, "parameters", None)
    if isinstance(parameters, BaseModel):
        chunking = parameters.model_dump_json()
    else:
        chunking = repr(parameters)
    model = kb.embedding_model
    identity = getattr(model, "cache_identity", f"{model.model}|{model.dimensions}")
    parts = f"{type(chunker).__qualname__}|{chunking}|{identity}" + (
        f"|{reading}" if reading else ""
    )
    return hashlib.sha256(parts.encode()).hexdigest()[:16]


def _with(fingerprint: str, extra: Mapping[str, Any]) -> str:
    """`fingerprint`, changed by a file's extra metadata when it has any."""
    if not extra:
        return fingerprint
    stamped = json.dumps(extra, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(f"{fingerprint}|{stamped}".encode()).hexdigest()[:16]


_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\x04\x22\x4d\x18": "lz4",
}


def compression_of(path: Path) -> str | None:
    """The compression wrapping a file (by its suffix or first bytes), or None."""
    _, encoding = mimetypes.guess_type(path.name, strict=False)
    if encoding is not None:
        return encoding
    with open(path, "rb") as fh:
        head = fh.read(6)
    return next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)


_FILE_FAILURES = (ValueError, OSError, InvalidVectorError, EmbeddingAPIError)
"""What may fail one file and not the run (`_one_files_fault` decides): its bytes or name
(parsing, reading), a value it makes the library refuse, or what the embedding model does
with its text."""

_REFUSED_INPUT = frozenset({400, 413, 422})
"""Provider statuses that refuse this request's input; 401/403/404/429 and 5xx concern every
file alike (key, model, quota, outage) and stop the run."""


def _one_files_fault(exc: Exception) -> bool:
    """Whether `exc` concerns only the file being written: a bad vector for its text, or a
    provider refusing its input (as opposed to a wrong key, a missing model, an outage, or
    a model that does not fit the collection)."""
    if isinstance(exc, TransientEmbeddingError | ConfigurationError):
        return False
    if isinstance(exc, EmbeddingAPIError):
        return exc.status in _REFUSED_INPUT
    return True


ProgressCallback = Callable[[FileResult], None]
ChunkProgress = Callable[[str, int, int], None]
"""`on_chunks(path, chunks_written, total_chunks)`: progress within one file."""
ReadProgress = Callable[[str, int], None]
"""`on_read(path, chunks_cut)`: the chunks cut so far while a file is read and chunked."""

READ_PROGRESS_EVERY = 256
"""`on_read` is called after every this many chunks cut."""


async def ingest_files(
    kb: KnowledgeBase,
    files: Iterable[Path],
    *,
    registry: ParserRegistry,
    chunker: ChunkerBase,
    prune_missing: bool = False,
    prune_within: Iterable[Path] | None = None,
    keep_stale: bool = False,
    on_file: ProgressCallback | None = None,
    on_chunks: ChunkProgress | None = None,
    on_start: Callable[[Path], None] | None = None,
    on_write: Callable[[int, int], None] | None = None,
    on_read: ReadProgress | None = None,
    extra_metadata: Mapping[Path, Mapping[str, Any]] | None = None,
) -> IngestReport:
    """Index `files` into `kb` incrementally; one file's failure never stops the others.

    `extra_metadata[path]` is stamped on every chunk of that file beside what ingest records
    (its path, content hash, pipeline, times), and is part of what decides "unchanged": the
    same file with other extra metadata is indexed again.

    A file fails alone (FAILED, with the reason and `cause`) when it cannot be read or
    parsed, when the library refuses a value it yields, or when the embedding model refuses
    its text or returns a bad vector for it; what was stored before stays whole. An
    embedding failure that concerns every file (a wrong key, a missing model, an outage
    after retries) stops the run.

    `prune_missing` removes (PRUNED) the scope's documents whose files are gone; with
    `prune_within`, only those recorded at or under one of these resolved paths.

    A file of a type no parser reads is SKIPPED with the reason; one that was indexed before
    and now is empty or fails has its old version removed (REMOVED) unless `keep_stale`.

    Changed files are parsed and chunked one by one and written in windows of about
    `kb.write_batch_size` chunks through `KnowledgeBase.insert_documents`, so small files
    share full-size embedding calls. A file of more chunks is streamed: a first pass parses
    and chunks it only to count its chunks (so every chunk is stored with its final
    `total_chunks`), the second parses it again and embeds and writes batch by batch, so
    neither its text nor its vectors are ever held whole. `on_chunks(path, written, total)`
    reports the chunks written within a file, `on_start(path)` each file as it is taken up,
    `on_write(files, chunks)` each window as its embedding and writing begins, `on_read(path,
    chunks)` the chunks cut so far while a file is read (every `READ_PROGRESS_EVERY`).
    """
    report = IngestReport()

    def emit(result: FileResult) -> None:
        report.results.append(result)
        if on_file is not None:
            on_file(result)

    kb = scoped_handle(kb)
    scope = kb.metadata_filter
    # Pruning needs every document of the scope; otherwise each file looks up its own alone.
    listed = {s.document_id: s for s in await kb.list_documents()} if prune_missing else None
    fingerprint = pipeline_fingerprint(chunker, kb, registry.identity)
    window: list[_Parsed] = []
    for path in files:
        if on_start is not None:
            on_start(path)
        document_id = document_id_for(path, scope)
        if listed is not None:
            before = listed.get(document_id)
        else:
            before = await kb.get_document(document_id)
        cut = None if on_read is None else functools.partial(on_read, str(path))
        extra = dict((extra_metadata or {}).get(path, {}))
        item = await _parse_one(
            kb, path, document_id, before, _with(fingerprint, extra), registry, chunker, cut, extra
        )
        if isinstance(item, FileResult):
            emit(item)
            stale = item.outcome in (Outcome.FAILED, Outcome.SKIPPED)
            if stale and not keep_stale and before is not None:
                emit(await _remove_stale(kb, item))
            continue
        window.append(item)
        if sum(p.count for p in window) >= kb.write_batch_size:
            if on_write is not None:
                on_write(len(window), sum(p.count for p in window))
            for result in await _write(kb, window, on_chunks):
                emit(result)
            window = []
    if on_write is not None and window:
        on_write(len(window), sum(p.count for p in window))
    for result in await _write(kb, window, on_chunks):
        emit(result)
    within = None if prune_within is None else {str(path) for path in prune_within}
    for document_id, summary in (listed or {}).items():
        if file_gone(document_id, summary.metadata, scope) and _recorded_within(
            summary.metadata[PATH_KEY], within
        ):
            await kb.delete_document(document_id)
            emit(FileResult(str(summary.metadata[PATH_KEY]), Outcome.PRUNED, document_id))
    return report


def file_gone(document_id: str, metadata: dict[str, Any], scope: MetadataFilter | None) -> bool:
    """Whether the document is this scope's copy of a file that no longer exists (what
    `prune_missing` removes)."""
    recorded = metadata.get(PATH_KEY)
    return (
        isinstance(recorded, str)
        and not Path(recorded).exists()
        and document_id == document_id_for(recorded, scope)
    )


def _recorded_within(recorded: str, within: set[str] | None) -> bool:
    """Whether the recorded path is one of `within` or under one (None: anywhere)."""
    if within is None:
        return True
    path = Path(recorded)
    return any(str(p) in within for p in (path, *path.parents))


async def _remove_stale(kb: KnowledgeBase, result: FileResult) -> FileResult:
    """Delete the old version of a file that no longer yields anything to index."""
    assert result.document_id is not None
    await kb.delete_document(result.document_id)
    return FileResult(
        result.path,
        Outcome.REMOVED,
        result.document_id,
        error=f"old version removed: {result.error}",
    )


@dataclass
class _Parsed:
    """A changed file, counted and waiting to be written: its chunks, or (a large file) how
    to chunk it again as a stream."""

    path: Path
    document_id: str
    outcome: Outcome
    count: int
    metadata: dict[str, Any]
    chunks: list[Chunk] | None = None
    restream: Callable[[], AsyncIterator[Chunk]] | None = None
    ocr_pages: int = 0

    def document(self) -> NewDocument:
        if self.chunks is not None:
            return NewDocument(self.chunks, self.document_id, self.metadata)
        assert self.restream is not None
        return NewDocument(self.restream(), self.document_id, self.metadata)

    def done(self) -> FileResult:
        return FileResult(
            str(self.path),
            self.outcome,
            self.document_id,
            chunks=self.count,
            ocr_pages=self.ocr_pages,
        )

    def failed(self, exc: Exception) -> FileResult:
        return FileResult(
            str(self.path), Outcome.FAILED, self.document_id, error=str(exc), cause=exc
        )


async def _write(
    kb: KnowledgeBase, window: list[_Parsed], on_chunks: ChunkProgress | None
) -> list[FileResult]:
    """Write a window of documents together; if that fails, one by one to isolate the culprit."""
    if not window:
        return []
    by_id = {p.document_id: p for p in window}

    def progress(document_id: str, written: int) -> None:
        if on_chunks is not None:
            parsed = by_id[document_id]
            on_chunks(str(parsed.path), written, parsed.count)

    try:
        await kb.insert_documents([p.document() for p in window], on_progress=progress)
        return [p.done() for p in window]
    except _FILE_FAILURES as exc:
        if not _one_files_fault(exc):
            raise
        if len(window) == 1:
            return [window[0].failed(exc)]
    results = []
    for parsed in window:
        results += await _write(kb, [parsed], on_chunks)
    return results


async def _parse_one(
    kb: KnowledgeBase,
    path: Path,
    document_id: str,
    before: DocumentSummary | None,
    fingerprint: str,
    registry: ParserRegistry,
    chunker: ChunkerBase,
    on_cut: Callable[[int], None] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> FileResult | _Parsed:
    resolved = path.resolve()
    try:
        digest = await asyncio.to_thread(file_sha256, resolved)  # reads the whole file
        if (
            before is not None
            and before.metadata.get(HASH_KEY) == digest
            and before.metadata.get(PIPELINE_KEY) == fingerprint
        ):
            return FileResult(str(path), Outcome.UNCHANGED, document_id)
        if resolved.stat().st_size == 0:
            return FileResult(str(path), Outcome.SKIPPED, document_id, error="empty file")
        compression = compression_of(resolved)
        if compression is not None:
            reason = f"compressed ({compression}) files are not supported; decompress it first"
            return FileResult(str(path), Outcome.SKIPPED, document_id, error=reason)
        try:
            parser = registry.parser_for_path(resolved)
        except UnsupportedFileTypeError as exc:
            return FileResult(str(path), Outcome.SKIPPED, document_id, error=exc.reason, cause=exc)
        model = kb.embedding_model
        chunks, count, dropped, ocr_pages = await _count_chunks(
            parser, chunker, resolved, path.name, kb.write_batch_size, model, on_cut
        )
        if not count and not dropped:
            return FileResult(
                str(path), Outcome.SKIPPED, document_id, error="empty: no text to index"
            )
    except ScansUnreadError as exc:  # the machine cannot read scans: not the file's fault
        return FileResult(str(path), Outcome.SKIPPED, document_id, error=exc.reason, cause=exc)
    except (ValueError, OSError) as exc:
        return FileResult(str(path), Outcome.FAILED, document_id, error=str(exc), cause=exc)
    if not count:
        hint = getattr(parser, "unread_text_hint", None)
        return FileResult(
            str(path),
            Outcome.SKIPPED,
            document_id,
            error=f"{kb.embedding_model.model} is text-only and the file holds no text"
            + (f" ({hint})" if hint else ""),
        )
    if dropped:
        report_left_out(document_id, dropped, model)
    metadata = {
        **(extra or {}),
        PATH_KEY: str(resolved),
        HASH_KEY: digest,
        PIPELINE_KEY: fingerprint,
        INDEXED_AT_KEY: datetime.now(UTC).isoformat(timespec="seconds"),
        MODIFIED_KEY: datetime.fromtimestamp(resolved.stat().st_mtime, UTC).isoformat(
            timespec="seconds"
        ),
    }
    outcome = Outcome.UPDATED if before is not None else Outcome.INDEXED
    if chunks is not None:
        return _Parsed(
            path, document_id, outcome, count, metadata, chunks=chunks, ocr_pages=ocr_pages
        )

    def restream() -> AsyncIterator[Chunk]:
        return _restream(parser, chunker, resolved, path.name, count, model)

    return _Parsed(
        path, document_id, outcome, count, metadata, restream=restream, ocr_pages=ocr_pages
    )


async def _embedded_chunks(
    parser: ParserBase, chunker: ChunkerBase, path: Path, name: str, model: EmbeddingModelBase
) -> AsyncIterator[Chunk | None]:
    """A file's chunks as a stream, the DataBlock rule (`left_out`) applied before they are
    numbered: the chunks `model` embeds, numbered 0.. in order (`total_chunks` left for the
    caller), and None in place of each chunk left out that takes words with it
    (`unread_picture`: a picture whose text OCR read is left out silently)."""
    index = 0
    async for chunk in chunker.chunk_file(parser, str(path), name):
        if left_out(model, chunk):
            if unread_picture(chunk):
                yield None
            continue
        chunk.chunk_index = index
        index += 1
        yield chunk


async def _count_chunks(
    parser: ParserBase,
    chunker: ChunkerBase,
    path: Path,
    name: str,
    keep: int,
    model: EmbeddingModelBase,
    on_cut: Callable[[int], None] | None = None,
) -> tuple[list[Chunk] | None, int, int, int]:
    """Chunk a file as a stream: (its chunks if fewer than `keep`, else None; how many `model`
    embeds; how many pictures it leaves out with their words; how many pages OCR read). A
    large file's chunks are counted and dropped: it is never held whole. `on_cut(chunks)`
    follows the count."""
    kept: list[Chunk] | None = []
    count = dropped = 0
    ocr_pages: set[object] = set()
    async for chunk in _embedded_chunks(parser, chunker, path, name, model):
        if chunk is None:
            dropped += 1
            continue
        count += 1
        if on_cut is not None and count % READ_PROGRESS_EVERY == 0:
            on_cut(count)
        if chunk.metadata.get("ocr"):
            ocr_pages.add(chunk.metadata.get("page"))
        if kept is not None:
            kept.append(chunk)
            if len(kept) >= keep:
                kept = None
    if kept is not None:
        for chunk in kept:
            chunk.total_chunks = count
    return kept, count, dropped, len(ocr_pages)


async def _restream(
    parser: ParserBase,
    chunker: ChunkerBase,
    path: Path,
    name: str,
    total: int,
    model: EmbeddingModelBase,
) -> AsyncIterator[Chunk]:
    """A large file's chunks again, numbered as the counting pass numbered them, with their
    `total`; the file changing in between is a DocumentParseError."""
    seen = 0
    async for chunk in _embedded_chunks(parser, chunker, path, name, model):
        if chunk is None:
            continue
        if chunk.chunk_index >= total:
            raise DocumentParseError("the file changed while it was indexed", filename=name)
        chunk.total_chunks = total
        seen += 1
        yield chunk
    if seen != total:
        raise DocumentParseError("the file changed while it was indexed", filename=name)
