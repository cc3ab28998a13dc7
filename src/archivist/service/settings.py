"""`ServiceSettings`: where the service keeps its data and how it indexes."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from archivist.chunk_defaults import PARSE_CPU_SECONDS, PARSE_MEMORY_MB, PARSE_WALL_SECONDS
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.rag.chunker.child_process import ChildLimits
from archivist.rag.chunker.settings import ChunkSettings
from archivist.rag.parser.ocr import Ocr
from archivist.service.files_url import files_location
from archivist.service.quota import Quota


class ServiceSettings(ChunkSettings):
    """Everything `create_app` needs; defaults give the embedded, single-machine setup. The
    default chunk size and overlap of knowledge bases, and their rule, are `ChunkSettings`'."""

    model_config = ConfigDict(extra="forbid")

    home: Path
    """Data directory: uploads, the SQLite database and the Qdrant Edge store live under it."""
    database_url: str | None = None
    """SQLAlchemy URL (e.g. `postgresql://...`); None → SQLite at `home/service/service.db`."""
    qdrant_url: str | None = None
    """A Qdrant server or cluster; None → Qdrant Edge at `home/service/qdrant`."""
    qdrant_api_key: str | None = None
    open_collections: int | None = Field(default=None, ge=1)
    """Qdrant Edge collections (one per knowledge base) kept open at once; past it the least
    recently used close and load again on use. None: the store's default."""
    pgvector_url: str | None = None
    """PostgreSQL with pgvector for the vectors (may be the `database_url` database)."""
    files_url: str | None = None
    """Where uploads are kept: a directory or `s3://BUCKET/PREFIX`; None → `files_dir`."""
    sweep_grace_seconds: float = Field(default=3600.0, gt=0)
    """What a process that died left behind (an upload never recorded, a file whose removal
    was cut short, a staged copy) is removed by the sweeper once it is this old."""
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    """Largest accepted upload request (all its files together); larger → 413."""
    workers: int = Field(default=2, ge=0, le=32)
    """Documents indexed at once by this process; 0 for an API-only replica."""
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
    rate_per_second: float = Field(default=50.0, gt=0)
    """Requests per second one API key may make on average; more → 429 with Retry-After."""
    rate_burst: int = Field(default=200, ge=1)
    """Requests one API key may make at once before the rate applies."""
    index_threads: int = Field(default=1, ge=1, le=64)
    """Cores the document embedder may use; the rest stay free for searches."""
    index_niceness: int = Field(default=10, ge=0, le=19)
    """How much nicer (lower CPU priority, Linux) the threads that parse, chunk and embed
    uploads run than the ones answering requests, so searches get the CPU first."""
    parse_memory_mb: int = Field(default=PARSE_MEMORY_MB, ge=64)
    """Memory (address space, MiB) the child process parsing and chunking one upload may
    use; a file that needs more fails, and the error names the limit. Reading scans adds
    what the OCR engine's models need (RapidOCR's: `RapidOcrEngine.memory_mb`)."""
    parse_cpu_seconds: int = Field(default=PARSE_CPU_SECONDS, ge=1)
    """CPU time one upload's parsing and chunking may take."""
    parse_wall_seconds: float = Field(default=PARSE_WALL_SECONDS, gt=0)
    """Time the indexer may wait for one upload's chunks in all."""
    ocr: Literal["auto", "off", "tesseract", "rapidocr"] = "auto"
    """How scanned PDF pages and images are read: "auto" (Tesseract if installed with the
    languages, else RapidOCR if installed, else none: scans are skipped with a note saying
    how to read them), "off", or an engine. Every knowledge base reads them so; a tenant
    cannot turn it on where the operator turned it off."""
    ocr_languages: tuple[str, ...] = Field(default=("eng", "chi_sim"), min_length=1)
    """The languages OCR reads, by Tesseract's names."""
    lease_seconds: float = Field(default=60.0, gt=0)
    """A claimed job not renewed for this long is taken over by another worker or replica."""
    max_attempts: int = Field(default=5, ge=1)
    """Tries of one job before it is failed: a file that kills the process every time, or
    a database or file store still unreachable (the tries after an outage wait 30 s, then
    twice as long each time: about 7.5 minutes in all)."""
    poll_seconds: float = Field(default=1.0, gt=0)
    """How often idle workers look for jobs queued by other replicas."""
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    metrics: bool = True
    """Serve Prometheus metrics at `/metrics` (no key needed, no tenant data in them)."""
    query_cache_seconds: float = Field(default=10.0, ge=0)
    """How long an identical search of a knowledge base is answered from memory (0: never);
    any write through this process ends it at once."""

    chat_base_url: str | None = None
    """An OpenAI-compatible chat server for `/v1/sessions/{id}/messages`; None: no answers."""
    chat_model: str | None = None
    chat_api_key: str | None = Field(default=None, repr=False)
    chat_timeout: float = Field(default=60.0, gt=0)
    """Seconds to wait for the chat server to connect or send its next piece."""
    chat_run_seconds: float = Field(default=300.0, gt=0)
    """Longest one answer may take, tool calls included, before it ends with an error."""
    chat_max_answer_bytes: int = Field(default=256 * 1024, ge=1024)
    """Longest answer (UTF-8 bytes of its text) relayed and kept: a longer one is cut there,
    the chat server's stream closed, and the cut text joins the history."""
    chat_max_tokens: int | None = Field(default=None, gt=0)
    """Most tokens the chat server may generate per model call; None: the server's limit."""

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
