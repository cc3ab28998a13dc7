"""The settings the command line, the service and eval share, each declared once: its field,
flag, default, bounds, unit, environment variable and help.

`ServiceSettings`, `EvalConfig` and the API's request models build their fields from these
(`setting_field`), the CLI its options (`archivist.cli.arguments.add_option`, whose `--help`
the CLI reference shows). Plain values, so `--help` loads nothing heavy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from archivist.chunk_defaults import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_OVERLAP,
    PARSE_CPU_SECONDS,
    PARSE_MEMORY_MB,
    PARSE_WALL_SECONDS,
)
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.rag.parser.ocr.choices import DEFAULT_LANGUAGES, DEFAULT_OCR, OCR_CHOICES

MiB = 1024 * 1024
KiB = 1024


@dataclass(frozen=True)
class Option:
    """One setting: `field` of `ServiceSettings`/`EvalConfig`, given on the command line as
    `flag` in `unit`s (the field holds `scale` times the flag's value), within `ge`/`gt`..`le`.
    `default_text` says what a None default means; `env` names the variable whose value is
    the flag's default."""

    field: str
    flag: str
    default: Any
    kind: type[Any]
    help: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    unit: str = ""
    scale: int = 1
    env: str | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    default_text: str | None = None

    @property
    def setting_default(self) -> Any:
        """The field's default: the flag's in the field's unit."""
        return self.to_setting(self.default)

    def to_setting(self, value: Any) -> Any:
        """A flag's value in the field's unit (a fraction of a byte rounds up)."""
        if value is None or self.scale == 1:
            return value
        return math.ceil(value * self.scale)

    def bounds(self) -> dict[str, float]:
        """The field's bounds, as pydantic's `ge`/`gt`/`le`, in the field's unit."""
        named = {"ge": self.ge, "gt": self.gt, "le": self.le}
        return {key: value * self.scale for key, value in named.items() if value is not None}

    def allows(self, value: float) -> bool:
        """Whether `value` (in the flag's unit) is within the bounds."""
        return (
            (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
        )

    def range_text(self) -> str:
        """The bounds in words, for an error or help: "from 0 to 32", "above 0" (a whole
        number above 0: "of 1 or more")."""
        ge, gt = self.ge, self.gt
        if self.kind is int and gt is not None:
            ge, gt = math.floor(gt) + 1, None
        if ge is not None and self.le is not None:
            return f"from {ge:g} to {self.le:g}"
        parts = [f"of {ge:g} or more"] if ge is not None else []
        if gt is not None:
            parts.append(f"above {gt:g}")
        if self.le is not None:
            parts.append(f"{'and ' if parts else 'of '}at most {self.le:g}")
        return " ".join(parts)

    def shown_default(self) -> str | None:
        """The default as `--help` shows it (None: not shown)."""
        if self.default_text is not None:
            return self.default_text
        if self.default is None:
            return None
        if isinstance(self.default, tuple):
            return "+".join(self.default)
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)


# ------------------------------------------------------------------ where the data lives

DATABASE = Option(
    "database_url",
    "--database",
    None,
    str,
    "postgresql://USER@HOST:PORT/DB for several replicas",
    env="ARCHIVIST_DATABASE_URL",
    default_text="SQLite under $ARCHIVIST_HOME",
)
QDRANT_URL = Option(
    "qdrant_url",
    "--qdrant-url",
    None,
    str,
    "a Qdrant server or cluster (key from QDRANT_API_KEY)",
    default_text="Qdrant Edge on disk",
)
PGVECTOR_URL = Option(
    "pgvector_url",
    "--pgvector-url",
    None,
    str,
    "PostgreSQL with pgvector for the vectors, postgresql://USER@HOST:PORT/DB; may be the "
    "--database database",
    env="ARCHIVIST_PGVECTOR_URL",
    metavar="URL",
)
OPEN_COLLECTIONS = Option(
    "open_collections",
    "--open-collections",
    None,
    int,
    "Qdrant Edge knowledge bases kept open at once; past it the least recently used close "
    "and load again on use (more may need a higher vm.max_map_count)",
    ge=1,
    metavar="N",
    default_text="the store's own bound",
)
FILES_URL = Option(
    "files_url",
    "--files-url",
    None,
    str,
    "where uploads are kept: a directory or s3://BUCKET/PREFIX (AWS_* variables, "
    "AWS_ENDPOINT_URL for S3-compatible stores)",
    env="ARCHIVIST_FILES_URL",
    metavar="URL",
    default_text="$ARCHIVIST_HOME/service/files",
)
SWEEP_GRACE_SECONDS = Option(
    "sweep_grace_seconds",
    "--sweep-grace-seconds",
    3600.0,
    float,
    "remove what a stopped process left behind (an unfinished upload's files, a staged copy) "
    "once it is this old",
    gt=0,
    metavar="S",
)

# ------------------------------------------------------------------ requests

WORKERS = Option(
    "workers",
    "--workers",
    2,
    int,
    "documents indexed at once; 0 for an API-only `serve` replica beside `archivist worker`s",
    ge=0,
    le=32,
)
MAX_UPLOAD = Option(
    "max_upload_bytes",
    "--max-upload-mb",
    50.0,
    float,
    "largest upload request (all its files together), in MiB; larger is refused (413)",
    gt=0,
    unit="MiB",
    scale=MiB,
    metavar="MIB",
)
QUERY_CACHE_SECONDS = Option(
    "query_cache_seconds",
    "--query-cache-seconds",
    10.0,
    float,
    "answer an identical search of a knowledge base from memory for this long, unless it "
    "was written meanwhile (0: never)",
    ge=0,
    metavar="SECONDS",
)
RATE = Option(
    "rate_per_second",
    "--rate",
    50.0,
    float,
    "requests per second one API key may make on average; more are refused (429)",
    gt=0,
)
EMBEDDING = Option(
    "embedding_model",
    "--embedding",
    DEFAULT_EMBEDDING_MODEL,
    str,
    "embedding model",
)

# ------------------------------------------------------------------ indexing

INDEX_THREADS = Option(
    "index_threads", "--index-threads", 1, int, "cores for embedding documents", ge=1, le=64
)
INDEX_NICENESS = Option(
    "index_niceness",
    "--index-niceness",
    10,
    int,
    "how much lower the CPU priority of parsing and embedding uploads is than that of "
    "answering requests (Linux)",
    ge=0,
    le=19,
)
PARSE_MEMORY = Option(
    "parse_memory_mb",
    "--parse-memory-mb",
    PARSE_MEMORY_MB,
    int,
    "memory one upload's parsing may use, in a child process, in MiB; a file that needs more fails",
    ge=64,
    unit="MiB",
    metavar="MIB",
)
PARSE_CPU = Option(
    "parse_cpu_seconds",
    "--parse-cpu-seconds",
    PARSE_CPU_SECONDS,
    int,
    "CPU time one upload's parsing may take",
    ge=1,
    metavar="S",
)
PARSE_WALL = Option(
    "parse_wall_seconds",
    "--parse-wall-seconds",
    PARSE_WALL_SECONDS,
    float,
    "time the indexer waits for one upload's chunks in all",
    gt=0,
    metavar="S",
)
OCR = Option(
    "ocr",
    "--ocr",
    DEFAULT_OCR,
    str,
    "read scanned PDF pages and images with OCR: auto (Tesseract if installed with the "
    "languages, else RapidOCR if installed, else none), off, or an engine",
    choices=OCR_CHOICES,
)
OCR_LANGUAGES = Option(
    "ocr_languages",
    "--ocr-languages",
    DEFAULT_LANGUAGES,
    tuple,
    "languages OCR reads, by Tesseract's names joined with +",
    metavar="LANGS",
)
CHUNK_SIZE = Option(
    "chunk_size",
    "--chunk-size",
    DEFAULT_CHUNK_SIZE,
    int,
    "tokens per chunk, measured with the embedding model's own tokenizer",
    gt=0,
    default_text="the model's input length, so no chunk is truncated",
)
OVERLAP = Option(
    "overlap", "--overlap", DEFAULT_OVERLAP, int, "tokens shared by neighbouring chunks", ge=0
)
SERVICE_CHUNK_SIZE = replace(CHUNK_SIZE, gt=None, ge=16, le=8192)
"""A service's chunk size: its knowledge bases' default, and what a tenant may ask for."""
SERVICE_OVERLAP = replace(OVERLAP, le=4096)
LEASE_SECONDS = Option(
    "lease_seconds",
    "--lease-seconds",
    60.0,
    float,
    "a job a worker stops renewing (it died) goes to another after this long",
    gt=0,
)
POLL_SECONDS = Option(
    "poll_seconds",
    "--poll-seconds",
    1.0,
    float,
    "how often an idle worker looks for jobs queued by other replicas",
    gt=0,
)

# ------------------------------------------------------------------ answers

CHAT_BASE_URL = Option(
    "chat_base_url",
    "--chat-base-url",
    None,
    str,
    "an OpenAI-compatible chat server for answers (/v1/sessions); key from "
    "ARCHIVIST_CHAT_API_KEY (or OPENAI_API_KEY)",
)
CHAT_MODEL = Option("chat_model", "--chat-model", None, str, "the chat server's model name")
CHAT_TIMEOUT = Option(
    "chat_timeout",
    "--chat-timeout",
    60.0,
    float,
    "seconds to wait for the chat server to connect or send its next piece of an answer",
    gt=0,
)
CHAT_MAX_TOKENS = Option(
    "chat_max_tokens",
    "--chat-max-tokens",
    None,
    int,
    "most tokens generated per model call",
    gt=0,
    default_text="the chat server's limit",
)
CHAT_MAX_ANSWER = Option(
    "chat_max_answer_bytes",
    "--chat-max-answer-kb",
    256,
    int,
    "longest answer (UTF-8 bytes of its text), in KiB, relayed and kept; a longer one is cut "
    "there and the chat server's stream closed",
    ge=1,
    unit="KiB",
    scale=KiB,
    metavar="KIB",
)

SERVICE_OPTIONS: tuple[Option, ...] = (
    DATABASE,
    QDRANT_URL,
    PGVECTOR_URL,
    OPEN_COLLECTIONS,
    FILES_URL,
    SWEEP_GRACE_SECONDS,
    WORKERS,
    MAX_UPLOAD,
    QUERY_CACHE_SECONDS,
    RATE,
    EMBEDDING,
    INDEX_THREADS,
    INDEX_NICENESS,
    PARSE_MEMORY,
    PARSE_CPU,
    PARSE_WALL,
    OCR,
    OCR_LANGUAGES,
    SERVICE_CHUNK_SIZE,
    SERVICE_OVERLAP,
    LEASE_SECONDS,
    POLL_SECONDS,
    CHAT_BASE_URL,
    CHAT_MODEL,
    CHAT_TIMEOUT,
    CHAT_MAX_TOKENS,
    CHAT_MAX_ANSWER,
)
"""The options that set a `ServiceSettings` field."""

# ------------------------------------------------------------------ searching and eval

TOP_K = Option("top_k", "--top-k", 5, int, "hits to show", ge=1, le=100)
MAX_PER_DOCUMENT = Option(
    "max_per_document",
    "--max-per-document",
    None,
    int,
    "at most N chunks of one document per query",
    ge=1,
    le=100,
    metavar="N",
)
MIN_RELEVANCE = Option(
    "min_relevance",
    "--min-relevance",
    None,
    float,
    "leave out passages less likely than P to be relevant (every mode)",
    ge=0,
    le=1,
    metavar="P",
)
SEARCH_DEPTH = Option(
    "search_depth", "--depth", 300, int, "chunks fetched per query", ge=1, metavar="N"
)
EVAL_PGVECTOR_URL = Option(
    "pgvector_url",
    "--pgvector-url",
    None,
    str,
    "index into PostgreSQL + pgvector at URL (throw-away tables) instead of Qdrant Edge",
    env="ARCHIVIST_PGVECTOR_URL",
    metavar="URL",
)
SEGMENT_POINTS = Option(
    "segment_points",
    "--segment-points",
    None,
    int,
    "build the vector index in segments of N chunks as they are written",
    ge=1,
    metavar="N",
    default_text="no index, exact search; a knowledge base's store indexes in segments",
)
QUANTIZATION = Option(
    "quantization",
    "--quantization",
    "none",
    str,
    "vector quantization, built with the index",
    choices=("none", "int8"),
    default_text="none; a knowledge base's store quantizes to int8",
)
VECTOR_DATATYPE = Option(
    "vector_datatype",
    "--vector-datatype",
    "float16",
    str,
    "how the store keeps the dense vectors",
    choices=("float16", "float32"),
)
QUERIES = Option("queries", "--queries", None, int, "use the first N judged queries", ge=1)
CORPUS = Option(
    "corpus",
    "--corpus",
    None,
    int,
    "corpus size: the judged docs of the chosen queries plus a fixed-seed sample",
    ge=1,
)

EVAL_OPTIONS: tuple[Option, ...] = (
    CHUNK_SIZE,
    OVERLAP,
    EMBEDDING,
    MAX_PER_DOCUMENT,
    SEARCH_DEPTH,
    EVAL_PGVECTOR_URL,
    SEGMENT_POINTS,
    QUANTIZATION,
    VECTOR_DATATYPE,
    QUERIES,
    CORPUS,
)
"""The options that set an `EvalConfig` field."""


def setting_field(option: Option, **extra: Any) -> Any:
    """A pydantic `Field` of `option`: its default, bounds and help, in the field's unit."""
    from pydantic import Field

    arguments: dict[str, Any] = {
        "default": option.setting_default,
        "description": option.help,
        **option.bounds(),
        **extra,
    }
    return Field(**arguments)
