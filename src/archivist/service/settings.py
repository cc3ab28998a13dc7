"""`ServiceSettings`: where the service keeps its data and how it indexes."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from archivist.options import (
    CHAT_BASE_URL,
    CHAT_MAX_ANSWER,
    CHAT_MAX_TOKENS,
    CHAT_MODEL,
    CHAT_TIMEOUT,
    DATABASE,
    EMBEDDING,
    FILES_URL,
    INDEX_NICENESS,
    INDEX_THREADS,
    LEASE_SECONDS,
    MAX_UPLOAD,
    OCR,
    OCR_LANGUAGES,
    OPEN_COLLECTIONS,
    PARSE_CPU,
    PARSE_MEMORY,
    PARSE_WALL,
    PGVECTOR_URL,
    POLL_SECONDS,
    QDRANT_URL,
    QUERY_CACHE_SECONDS,
    RATE,
    SERVICE_CHUNK_SIZE,
    SERVICE_OVERLAP,
    SWEEP_GRACE_SECONDS,
    WORKERS,
    setting_field,
)
from archivist.rag.chunker.child_process import ChildLimits
from archivist.rag.chunker.settings import ChunkSettings
from archivist.rag.knowledge.profile import KnowledgeProfile
from archivist.rag.parser.ocr import Ocr
from archivist.rag.parser.ocr.choices import LANGUAGE_PATTERN, MAX_LANGUAGES, OcrChoice
from archivist.service.files_url import files_location
from archivist.service.quota import Quota


class ServiceSettings(ChunkSettings):
    """Everything `create_app` needs; defaults give the embedded, single-machine setup. The
    default chunk size and overlap of knowledge bases, and their rule, are `ChunkSettings`'."""

    model_config = ConfigDict(extra="forbid")

    home: Path
    chunk_size: int | None = setting_field(SERVICE_CHUNK_SIZE)
    overlap: int = setting_field(SERVICE_OVERLAP)
    """Data directory: uploads, the SQLite database and the Qdrant Edge store live under it."""
    database_url: str | None = setting_field(DATABASE)
    """SQLAlchemy URL (e.g. `postgresql://...`); None → SQLite at `home/service/service.db`."""
    qdrant_url: str | None = setting_field(QDRANT_URL)
    """None → Qdrant Edge at `home/service/qdrant`."""
    qdrant_api_key: str | None = None
    open_collections: int | None = setting_field(OPEN_COLLECTIONS)
    """None: the store's default (`MAX_OPEN_COLLECTIONS` of the Edge store)."""
    pgvector_url: str | None = setting_field(PGVECTOR_URL)
    files_url: str | None = setting_field(FILES_URL)
    """None → `files_dir`."""
    sweep_grace_seconds: float = setting_field(SWEEP_GRACE_SECONDS)
    max_upload_bytes: int = setting_field(MAX_UPLOAD)
    workers: int = setting_field(WORKERS)
    max_json_bytes: int = Field(default=256 * 1024, gt=0)
    """Largest accepted body of every other request (JSON); larger → 413."""
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    """A connection that has not sent a request's headers within this long is closed."""
    body_idle_seconds: float = Field(default=15.0, gt=0)
    """Longest wait for the next piece of a request body; longer → 408."""
    body_timeout_seconds: float = Field(default=600.0, gt=0)
    """Longest time to receive a whole request body; longer → 408."""
    keep_alive_seconds: float = Field(default=5.0, gt=0)
    """An idle keep-alive connection is closed after this long."""
    quota: Quota = Quota()
    """Every tenant's quotas unless `tenant_quotas` names the tenant."""
    tenant_quotas: dict[str, Quota] = Field(default_factory=dict)
    """Quotas of particular tenants."""
    rate_per_second: float = setting_field(RATE)
    """More → 429 with Retry-After."""
    rate_burst: int = Field(default=200, ge=1)
    """Requests one API key may make at once before the rate applies."""
    index_threads: int = setting_field(INDEX_THREADS)
    """The rest of the cores stay free for searches."""
    index_niceness: int = setting_field(INDEX_NICENESS)
    """So searches get the CPU first."""
    parse_memory_mb: int = setting_field(PARSE_MEMORY)
    """Address space; the error of a file that needs more names the limit. Reading scans
    adds what the OCR engine's models need (RapidOCR's: `RapidOcrEngine.memory_mb`)."""
    parse_cpu_seconds: int = setting_field(PARSE_CPU)
    parse_wall_seconds: float = setting_field(PARSE_WALL)
    ocr: OcrChoice = setting_field(OCR)
    """"auto" finding none skips scans with a note saying how to read them. Every knowledge
    base reads them so; a tenant cannot turn it on where the operator turned it off."""
    ocr_languages: tuple[
        Annotated[str, StringConstraints(pattern=f"^{LANGUAGE_PATTERN}$")], ...
    ] = setting_field(OCR_LANGUAGES, min_length=1, max_length=MAX_LANGUAGES)
    lease_seconds: float = setting_field(LEASE_SECONDS)
    max_attempts: int = Field(default=5, ge=1)
    """Tries of one job before it is failed: a file that kills the process every time, or
    a database or file store still unreachable (the tries after an outage wait 30 s, then
    twice as long each time: about 7.5 minutes in all)."""
    poll_seconds: float = setting_field(POLL_SECONDS)
    embedding_model: str = setting_field(EMBEDDING)
    metrics: bool = True
    """Serve Prometheus metrics at `/metrics` (no key needed, no tenant data in them)."""
    query_cache_seconds: float = setting_field(QUERY_CACHE_SECONDS)

    chat_base_url: str | None = setting_field(CHAT_BASE_URL)
    """None: no answers."""
    chat_model: str | None = setting_field(CHAT_MODEL)
    chat_api_key: str | None = Field(default=None, repr=False)
    chat_timeout: float = setting_field(CHAT_TIMEOUT)
    chat_run_seconds: float = Field(default=300.0, gt=0)
    """Longest one answer may take, tool calls included, before it ends with an error."""
    chat_max_answer_bytes: int = setting_field(CHAT_MAX_ANSWER)
    """In bytes; the cut text joins the history."""
    chat_max_tokens: int | None = setting_field(CHAT_MAX_TOKENS)

    @field_validator("files_url")
    @classmethod
    def _known_files_url(cls, value: str | None) -> str | None:
        if value is not None:
            files_location(value, Path("."))  # FileStoreError (a ValueError) names it
        return value

    @model_validator(mode="after")
    def _one_vector_store(self) -> ServiceSettings:
        if self.qdrant_url and self.pgvector_url:
            raise ValueError("give --qdrant-url or --pgvector-url, not both")
        if self.open_collections is not None and (self.qdrant_url or self.pgvector_url):
            raise ValueError("--open-collections applies only to Qdrant Edge on disk")
        return self

    def default_profile(self) -> KnowledgeProfile:
        """How a knowledge base that chose nothing indexes: the default model, chunk size and
        overlap (named after the model, as it stands for no knowledge base of its own)."""
        return KnowledgeProfile(
            name=self.embedding_model,
            embedding_model=self.embedding_model,
            chunk_size=self.chunk_size,
            overlap=self.overlap,
        )

    def ocr_reader(self) -> Ocr | None:
        """The `Ocr` uploads are read with (results cached under the service's folder); None
        when off. "auto" never fails: it takes what is installed, or none. An engine named
        but unusable is a ConfigurationError saying what to install."""
        return self._ocr

    @cached_property
    def _ocr(self) -> Ocr | None:
        from archivist.rag.knowledge import factories

        return factories.ocr(self.ocr, self.ocr_languages, cache_dir=self.service_dir / "ocr")

    def ocr_summary(self) -> str:
        """What reads scanned pages and images, in one line ("off" when turned off)."""
        reader = self.ocr_reader()
        return "off" if reader is None else reader.summary()

    @property
    def parse_limits(self) -> ChildLimits:
        """What parsing and chunking one upload may cost (its child process's limits); the
        OCR engine's models get their own reserve on top, claimed when OCR starts."""
        reader = self.ocr_reader()
        engine = reader.engine if reader is not None else None
        return ChildLimits(
            memory_bytes=self.parse_memory_mb * 1024 * 1024,
            cpu_seconds=self.parse_cpu_seconds,
            wall_seconds=self.parse_wall_seconds,
            ocr_memory_bytes=engine.memory_mb * 1024 * 1024 if engine is not None else None,
        )

    def quota_for(self, tenant: str) -> Quota:
        """The quotas of `tenant`."""
        return self.tenant_quotas.get(tenant, self.quota)

    @property
    def service_dir(self) -> Path:
        """`home/service`: the service's own files."""
        return self.home / "service"

    @property
    def files_dir(self) -> Path:
        """Where raw uploads are kept, one folder per knowledge base and upload."""
        return self.service_dir / "files"

    @property
    def resolved_database_url(self) -> str:
        """The database URL to connect to."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.service_dir / 'service.db'}"

    @property
    def single_owner(self) -> bool:
        """Whether this process is the only one that can be indexing (Edge store + SQLite):
        then every `indexing` job found at start-up belongs to a dead process."""
        return self.qdrant_url is None and self.pgvector_url is None and self.database_url is None
