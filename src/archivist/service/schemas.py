"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from archivist.message import TextBlock
from archivist.options import (
    MAX_PER_DOCUMENT,
    MIN_RELEVANCE,
    SERVICE_CHUNK_SIZE,
    SERVICE_OVERLAP,
    TOP_K,
    setting_field,
)
from archivist.rag.chunker.settings import ChunkSettings
from archivist.rag.document import Chunk
from archivist.rag.knowledge.citation import citation, copy_citation
from archivist.rag.knowledge.context import MAX_CONTEXT, context_text
from archivist.rag.knowledge.ingest import HASH_KEY, PATH_KEY, PIPELINE_KEY
from archivist.rag.knowledge.profile import KnowledgeProfile
from archivist.rag.record import VectorSearchResult
from archivist.rag.store.search_filter import Range, SearchFilter
from archivist.rag.store.tenant import TENANT_KEY
from archivist.service.storage.catalog import DocumentRecord, KBRecord, Status
from archivist.service.storage.sessions_store import ChatRole, Citation, SessionRecord
from archivist.validation import KB_NAME_PATTERN

SERVICE_KEYS = frozenset({PATH_KEY, HASH_KEY, PIPELINE_KEY, TENANT_KEY})
"""Chunk metadata the service keeps for itself: never exposed, never searched by."""


def public_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Chunk metadata without the service's bookkeeping (server paths, hashes, tenant)."""
    return {k: v for k, v in metadata.items() if k not in SERVICE_KEYS}


def iso(timestamp: float) -> str:
    """A Unix time as ISO 8601 UTC."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds")


IsoTime = Annotated[
    str, BeforeValidator(lambda value: iso(value) if isinstance(value, int | float) else value)
]
"""A time the API shows as ISO 8601 UTC, read from a record's Unix time."""


class KnowledgeBaseCreate(BaseModel):
    """`POST /v1/knowledge-bases`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=KB_NAME_PATTERN, description="letters, digits, _ . - (max 64)")
    description: str = Field(default="", max_length=2000)
    embedding_model: str | None = Field(
        default=None,
        max_length=128,
        description="a locally available model; default: the service's",
    )
    chunk_size: int | None = setting_field(
        SERVICE_CHUNK_SIZE, default=None, description="tokens per chunk; default: the service's"
    )
    overlap: int | None = setting_field(SERVICE_OVERLAP, default=None)

    @model_validator(mode="after")
    def _chunk_settings_fit(self) -> KnowledgeBaseCreate:
        # With one of the two left to the service's default, the route checks the pair.
        if self.chunk_size is not None and self.overlap is not None:
            ChunkSettings.of(chunk_size=self.chunk_size, overlap=self.overlap)
        return self


class KnowledgeBaseUpdate(BaseModel):
    """`PATCH /v1/knowledge-bases/{name}`: what may change after creation."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, pattern=KB_NAME_PATTERN)
    description: str | None = Field(default=None, max_length=2000)


class KnowledgeBaseOut(BaseModel):
    """A knowledge base as the API shows it, with how it indexes."""

    name: str
    description: str
    document_count: int
    created_at: str
    embedding_model: str | None = None
    chunk_size: int | None = None
    """Tokens per chunk: the one chosen, else the embedding model's input length (None only
    for a knowledge base that chose no size and whose model is not loaded yet)."""
    overlap: int | None = None

    @classmethod
    def of(cls, kb: KBRecord, profile: KnowledgeProfile | None = None) -> KnowledgeBaseOut:
        """From a catalog record and the profile it indexes by."""
        return cls(
            name=kb.name,
            description=kb.description,
            document_count=kb.document_count,
            created_at=iso(kb.created_at),
            **(
                profile.model_dump(include={"embedding_model", "chunk_size", "overlap"})
                if profile is not None
                else {}
            ),
        )


class KnowledgeBaseList(BaseModel):
    """`GET /v1/knowledge-bases`."""

    items: list[KnowledgeBaseOut]


class UploadRefusal(BaseModel):
    """Why one file of an upload was refused: the status it alone would be answered with
    (415: a type not read, or content not of its type; 422: empty) and the reason."""

    status: int
    detail: str


class UploadItem(BaseModel):
    """One file of an upload, in request order: its document, or `error` when the file was
    refused (then `id` is null and `status` is "refused"; nothing of it is kept). When the
    knowledge base already held the same content (or the request repeats an earlier
    `Idempotency-Key`), that is the document already there, `existing` is true and nothing
    is stored again."""

    id: str | None
    filename: str
    status: Status | Literal["refused"]
    existing: bool = False
    error: UploadRefusal | None = None


class UploadAccepted(BaseModel):
    """`POST .../documents` (202): every file is queued, already there, or refused with its
    reason, and at least one is not refused."""

    items: list[UploadItem]


class DocumentOut(BaseModel):
    """A document and where it is on its way to `ready` or `failed`."""

    id: str
    filename: str
    media_type: str
    size: int
    status: Status
    chunk_count: int
    error: str | None
    created_at: IsoTime
    updated_at: IsoTime

    @classmethod
    def of(cls, document: DocumentRecord) -> DocumentOut:
        """From a catalog record (its fields of the same names)."""
        return cls.model_validate(document, from_attributes=True)


class DocumentList(BaseModel):
    """`GET .../documents`."""

    items: list[DocumentOut]


class DocumentStatuses(BaseModel):
    """`GET .../documents/status?ids=`: the documents found, and the ids that are not."""

    items: list[DocumentOut]
    missing: list[str]


class ChunkOut(BaseModel):
    """One stored chunk of a document."""

    chunk_index: int
    text: str | None
    media_type: str
    metadata: dict[str, Any]

    @classmethod
    def of(cls, chunk: Chunk) -> ChunkOut:
        """From a stored chunk, without the service's own metadata."""
        content = chunk.content
        text = content.text if isinstance(content, TextBlock) else None
        media_type = "text/plain" if isinstance(content, TextBlock) else content.source.media_type
        return cls(
            chunk_index=chunk.chunk_index,
            text=text,
            media_type=media_type,
            metadata=public_metadata(chunk.metadata),
        )


class ChunkPage(BaseModel):
    """`GET .../documents/{id}/chunks`: a page in `chunk_index` order."""

    items: list[ChunkOut]
    offset: int
    limit: int
    total: int


class SearchRequest(BaseModel):
    """`POST .../search`."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4000)
    top_k: int = setting_field(TOP_K)
    min_relevance: float | None = setting_field(MIN_RELEVANCE)
    """Leave out hits less likely than this to be relevant (every mode)."""
    context: int = Field(default=0, ge=0, le=MAX_CONTEXT)
    """Neighbouring chunks to return on each side of every hit (overlapping windows merged)."""
    max_per_document: int | None = setting_field(MAX_PER_DOCUMENT)
    """At most this many chunks of one document (and still `top_k` when enough match)."""
    path: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default=[], max_length=20
    )
    """File-name globs ("*.pdf", "report-*"), any of which the document's name matches."""
    type: list[Annotated[str, Field(min_length=1, max_length=17)]] = Field(
        default=[], max_length=20
    )
    """File extensions ("pdf", "md"), any of which the document's name ends with."""
    since: datetime | date | None = None
    """Only documents uploaded (or changed) on or after this date or time."""
    where: dict[str, str | int | bool | Range | None] = Field(default={}, max_length=20)
    """Chunk metadata equality, or number/date bounds: `{"page": {"gte": 3}}`."""
    collapse_duplicates: bool = True
    """One hit per text: copies of a hit's text in other documents are listed in its
    `also_in` instead of filling slots of their own."""

    @model_validator(mode="after")
    def _filter_is_valid(self) -> SearchRequest:
        if any("/" in glob or "\\" in glob for glob in self.path):
            raise ValueError("path: globs match file names here, without '/'")
        internal = sorted(set(self.where) & SERVICE_KEYS)
        if internal:
            raise ValueError(f"where: {internal} are internal keys and cannot be searched")
        self.search_filter()
        return self

    def search_filter(self) -> SearchFilter:
        """The filters of the body as the store-neutral value."""
        return SearchFilter(
            paths=tuple(self.path), types=tuple(self.type), since=self.since, where=self.where
        )


class HitContext(BaseModel):
    """The chunks around a hit: `first_chunk`..`last_chunk` of its document, as one text."""

    first_chunk: int
    last_chunk: int
    text: str | None


class HitCopy(BaseModel):
    """Another document chunk holding a hit's very text (white space aside)."""

    document_id: str
    filename: str
    chunk_index: int
    score: float
    citation: str


class Hit(BaseModel):
    """One search result with where it comes from."""

    score: float
    relevance: float | None = None
    """Estimated probability (0..1) that the hit is relevant; comparable across queries."""
    document_id: str
    filename: str
    chunk_index: int
    text: str | None
    citation: str
    """`file, page N, chunk M` (or slide): what to cite."""
    metadata: dict[str, Any]
    context: HitContext | None = None
    """With `context` in the request: the hit's neighbouring chunks."""
    also_in: list[HitCopy] = []
    """The other documents holding this text (with `collapse_duplicates`), best first."""

    @classmethod
    def of(cls, result: VectorSearchResult) -> Hit:
        """From a store result, without the service's own metadata."""
        chunk = result.chunk
        return cls(
            score=result.score,
            relevance=result.relevance,
            document_id=result.document_id,
            filename=chunk.source,
            chunk_index=chunk.chunk_index,
            text=chunk.content.text if isinstance(chunk.content, TextBlock) else None,
            citation=citation(chunk),
            metadata=public_metadata(chunk.metadata),
            context=None
            if result.context is None
            else HitContext(
                first_chunk=result.context[0].chunk_index,
                last_chunk=result.context[-1].chunk_index,
                text=context_text(result),
            ),
            also_in=[
                HitCopy(
                    document_id=copy.document_id,
                    filename=copy.source,
                    chunk_index=copy.chunk_index,
                    score=copy.score,
                    citation=copy_citation(copy),
                )
                for copy in result.also_in
            ],
        )


class SearchResponse(BaseModel):
    """`POST .../search`: best first."""

    hits: list[Hit]


class FieldError(BaseModel):
    """One invalid part of a request: where (`loc`), what is wrong (`msg`), its `type`."""

    loc: list[str | int]
    msg: str
    type: str


class Problem(BaseModel):
    """Every error body (`application/problem+json`, RFC 9457)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[FieldError] | None = None
    """For 422: each field that failed validation; for an upload whose every file is
    refused (415 or 422): each file, `loc` ["files", N]."""


UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "missing, invalid or revoked API key"}
}


class SessionCreate(BaseModel):
    """`POST /v1/sessions`."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(default="", max_length=200)


class SessionOut(BaseModel):
    """A chat session as the API shows it."""

    id: str
    title: str
    created_at: str

    @classmethod
    def of(cls, session: SessionRecord) -> SessionOut:
        """From a stored record."""
        return cls(id=session.id, title=session.title, created_at=iso(session.created_at))


class SessionList(BaseModel):
    """`GET /v1/sessions`: most recently used first."""

    items: list[SessionOut]


class MessageOut(BaseModel):
    """One turn of a session; an answer's `citations` resolve to stored chunks."""

    role: ChatRole
    content: str
    citations: list[Citation]


class SessionDetail(SessionOut):
    """`GET /v1/sessions/{id}`: the session with its history, oldest first."""

    messages: list[MessageOut]


class MessageCreate(BaseModel):
    """`POST /v1/sessions/{id}/messages`: a question over the named knowledge bases."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=8000)
    knowledge_bases: list[str] = Field(min_length=1, max_length=20)
    mode: Literal["static", "agentic", "both"] = "static"
    """static: search once before answering; agentic: the model searches as it likes."""
    top_k: int = Field(default=5, ge=1, le=50)
