"""Opening the store and a KnowledgeBase handle for one CLI command.

Each knowledge base lives in its own store directory (`STORE/kbs/NAME`), locked by the one
process that has it open: Qdrant Edge lets a single process own a shard (its write-ahead log
is exclusive, and a second opener can damage the owner's files), so a command finding its
knowledge base busy waits, saying so, up to `--wait` seconds. Knowledge bases never block
each other. A store made before this layout (`STORE/collections/NAME`) is used where it is.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.cli.home import KBRecord, cache_dir, default_store_dir, load_kbs, save_kb
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.errors import InvalidArgumentError, StoreLockedError

if TYPE_CHECKING:  # the heavy modules load inside the functions that use them
    from archivist.embedding import EmbeddingModelBase
    from archivist.rag import KnowledgeBase
    from archivist.rag.chunker import TokenChunker
    from archivist.rag.store.qdrant import QdrantStore

# 256 approximate tokens mostly fit the default model's 256-token input (on SciFact ~5%
# of chunks still exceed it; the embedder truncates those and reports it).
DEFAULT_OVERLAP = 32
DEFAULT_WAIT_SECONDS = 60.0
DEFAULT_EMBEDDING_TIMEOUT = 30.0


class CLIError(InvalidArgumentError):
    """A bad command line (an option's value, a name, a path): reported in one line, with
    exit code 2."""


@dataclass
class Session:
    """An open store and the knowledge-base handle the command works on."""

    store: QdrantStore
    kb: KnowledgeBase
    store_dir: Path
    record: KBRecord
    make_chunker: Callable[[], TokenChunker] = field(repr=False)
    _chunker: TokenChunker | None = field(default=None, init=False, repr=False)

    @property
    def chunker(self) -> TokenChunker:
        """The chunker of the KB's settings, for its model: made on first use, since only
        commands that cut files need it (it reads the model's tokenizer)."""
        if self._chunker is None:
            self._chunker = self.make_chunker()
        return self._chunker


def positive_int(text: str) -> int:
    """argparse type: an int of 1 or more."""
    if not text.strip().lstrip("-").isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, got {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    """argparse type: an int of 0 or more."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number of 0 or more, got {text!r}")
    return int(text)


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def non_empty(text: str) -> str:
    """argparse type: text with something besides whitespace."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def add_common_arguments(cmd: argparse.ArgumentParser) -> None:
    """`--kb`, `--store`, `--tenant` and `--wait`, shared by every command that opens a store."""
    cmd.add_argument("--kb", default="default", help="knowledge base name")
    cmd.add_argument(
        "--store", type=Path, default=None, help="store directory (default: $ARCHIVIST_HOME/store)"
    )
    cmd.add_argument(
        "--tenant",
        default=None,
        help="tenant id: confines every read and write to that tenant "
        "(default: the records that belong to no tenant)",
    )
    cmd.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="how long to wait while another archivist process has the knowledge base open",
    )


def add_chunking_arguments(cmd: argparse.ArgumentParser, *, from_kb: bool) -> None:
    """`--chunk-size` and `--overlap`; with `from_kb`, unset means the knowledge base's own
    settings, else the model's input length and `DEFAULT_OVERLAP`."""
    kb = "the KB's; for a new KB " if from_kb else ""
    cmd.add_argument(
        "--chunk-size",
        type=positive_int,
        default=None,
        help="tokens per chunk, measured with the embedding model's own tokenizer (default: "
        f"{kb}the model's input length, so no chunk is truncated)",
    )
    cmd.add_argument(
        "--overlap",
        type=non_negative_int,
        default=None if from_kb else DEFAULT_OVERLAP,
        help=f"tokens shared by neighbouring chunks (default: {kb}{DEFAULT_OVERLAP})",
    )


def add_json_argument(cmd: argparse.ArgumentParser) -> None:
    """`--json`: machine-readable output on stdout."""
    cmd.add_argument("--json", action="store_true", help="print JSON for scripts")


def non_negative_seconds(text: str) -> float:
    """argparse type: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, got {text!r}")
    return value


def add_timeout_argument(cmd: argparse.ArgumentParser, default: float, what: str) -> None:
    """`--timeout`: seconds one request to a remote model may take before it is retried."""
    cmd.add_argument(
        "--timeout",
        type=positive_seconds,
        default=default,
        metavar="SECONDS",
        help=f"seconds one request to the {what} may take (each retry gets as long)",
    )


def make_chunker(
    model: EmbeddingModelBase, chunk_size: int | None, overlap: int | None
) -> TokenChunker:
    """The chunker of these settings for `model` (chunk size None: the model's input length),
    or a one-line CLIError naming the bad value."""
    from archivist.rag.chunker import chunker_for

    overlap = DEFAULT_OVERLAP if overlap is None else overlap
    check_chunking(chunk_size, overlap)
    try:
        return chunker_for(model.chunk_tokenizer(), chunk_size, overlap)
    except ValueError as exc:
        raise CLIError(f"--chunk-size: {exc}") from None


def check_chunking(chunk_size: int | None, overlap: int | None) -> None:
    """A one-line CLIError when `overlap` does not fit inside `chunk_size`."""
    if chunk_size is not None and overlap is not None and overlap >= chunk_size:
        raise CLIError(f"--overlap ({overlap}) must be smaller than --chunk-size ({chunk_size})")


def embedding_model(name: str, timeout: float = DEFAULT_EMBEDDING_TIMEOUT) -> EmbeddingModelBase:
    """The model `name` names, behind the on-disk embedding cache.

    A registry name (offline), `dashscope:MODEL[:DIMS]` (key from DASHSCOPE_API_KEY) or
    `openai:MODEL:DIMS` (key and endpoint from OPENAI_API_KEY / OPENAI_BASE_URL).
    """
    from archivist.embedding import CachedEmbeddingModel, LocalEmbeddingModel

    provider, _, rest = name.partition(":")
    model: EmbeddingModelBase
    if provider == "dashscope" and rest:
        from archivist.credential import DashScopeCredential
        from archivist.embedding import DashScopeEmbeddingModel

        model_name, _, dims = rest.partition(":")
        model = DashScopeEmbeddingModel(
            credential=DashScopeCredential(),
            model=model_name,
            dimensions=_dimensions(name, dims or "1024"),
            timeout=timeout,
        )
    elif provider == "openai" and rest:
        from archivist.embedding import OpenAIEmbeddingModel

        model_name, _, dims = rest.partition(":")
        model = OpenAIEmbeddingModel(model_name, _dimensions(name, dims), timeout=timeout)
    else:
        model = LocalEmbeddingModel(name)
    return CachedEmbeddingModel(model, cache_dir())


def _dimensions(spec: str, text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise CLIError(f"--embedding {spec!r}: give the vector size, e.g. openai:MODEL:1536")
    return int(text)


def kb_store_dir(store_dir: Path, name: str) -> Path:
    """Where knowledge base `name` keeps its data: its own directory, or the shared legacy one."""
    if (store_dir / "collections" / name).is_dir():
        return store_dir
    return store_dir / "kbs" / name


def check_kb_name(name: str) -> None:
    """A CLIError unless `name` is a valid knowledge base name (`archivist.validation`'s rule,
    which the service applies too)."""
    from archivist.validation import check_kb_name as library_rule

    try:
        library_rule(name)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def settled_record(
    record: KBRecord | None,
    name: str,
    *,
    embedding: str | None,
    chunk_size: int | None,
    overlap: int | None,
    rebuild: bool,
) -> KBRecord:
    """The settings a run uses: the KB's own, or for a new KB the given ones (else defaults).

    A value that differs from what the KB was built with is a CLIError unless `rebuild`.
    """
    if record is None:
        fresh = KBRecord(
            name,
            f"Files indexed into {name}",
            embedding or DEFAULT_EMBEDDING_MODEL,
            0,
            chunk_size,
            DEFAULT_OVERLAP if overlap is None else overlap,
        )
        check_chunking(fresh.chunk_size, fresh.overlap)  # one-line error if invalid
        return fresh
    wanted = {"embedding_model": embedding, "chunk_size": chunk_size, "overlap": overlap}
    flags = {"embedding_model": "--embedding", "chunk_size": "--chunk-size", "overlap": "--overlap"}
    changes: dict[str, Any] = {}
    for setting, value in wanted.items():
        recorded = getattr(record, setting)
        if value is None or value == recorded:
            continue
        if recorded is not None and not rebuild:
            raise CLIError(
                f"knowledge base {name!r} was built with {flags[setting]} {recorded!r}, "
                f"not {value!r}; pass --rebuild to rebuild it with the new value "
                f"(or use another --kb)"
            )
        changes[setting] = value
    settled = replace(record, **changes)
    if settled.overlap is None:  # a KB made before settings were recorded
        settled = replace(settled, overlap=DEFAULT_OVERLAP)
    check_chunking(settled.chunk_size, settled.overlap)
    return settled


async def open_store(directory: Path, name: str, wait: float) -> QdrantStore:
    """The store at `directory`, entered; while another process holds it, wait up to `wait`
    seconds with a message on stderr, then a StoreLockedError naming the knowledge base."""
    import asyncio

    from archivist.rag.store.qdrant import QdrantStore

    deadline = time.monotonic() + max(0.0, wait)
    announced = False
    while True:
        store = QdrantStore(path=directory)
        try:
            return await store.__aenter__()
        except StoreLockedError as exc:
            holder = exc.holder
            if time.monotonic() >= deadline:
                raise StoreLockedError(
                    exc.path,
                    holder,
                    message=f"knowledge base {name!r} is in use ({holder}) and stayed so for "
                    f"{wait:g} s; try again when it finishes or raise --wait",
                ) from None
            if not announced:
                print(
                    f"archivist: knowledge base {name!r} is in use ({holder}); "
                    f"waiting up to {wait:g} s (--wait)",
                    file=sys.stderr,
                    flush=True,
                )
                announced = True
            await asyncio.sleep(0.25)


@asynccontextmanager
async def open_session(
    args: argparse.Namespace,
    *,
    create: bool,
    embedding: str | None = None,
    chunk_size: int | None = None,
    overlap: int | None = None,
    rebuild: bool = False,
) -> AsyncIterator[Session]:
    """Open the KB `args.kb` in `args.store`; unknown KBs are an error unless `create`.

    With `rebuild` the KB's content (every tenant's) is dropped and the new settings recorded.
    """
    from archivist.rag import KnowledgeBase
    from archivist.rag.store.tenant import tenant_scope

    check_kb_name(args.kb)
    store_dir: Path = args.store or default_store_dir()
    record = load_kbs(store_dir).get(args.kb)
    if record is None and not create:
        known = ", ".join(sorted(load_kbs(store_dir))) or "none yet"
        raise CLIError(
            f"unknown knowledge base {args.kb!r} in {store_dir} (known: {known}); "
            f"create it with: archivist index PATH --kb {args.kb}"
        )
    settled = settled_record(
        record,
        args.kb,
        embedding=embedding,
        chunk_size=chunk_size,
        overlap=overlap,
        rebuild=rebuild,
    )
    model = embedding_model(
        settled.embedding_model, getattr(args, "embedding_timeout", DEFAULT_EMBEDDING_TIMEOUT)
    )
    settled = replace(settled, dimensions=model.dimensions)
    chunker: Callable[[], TokenChunker]
    if settled == record:  # settings as recorded: the chunker waits until a file is cut
        chunker = functools.partial(make_chunker, model, settled.chunk_size, settled.overlap)
    else:
        # New or changed settings are checked now, before they are recorded; the chunk size
        # a new KB gets is the model's input length, recorded as a number.
        made = make_chunker(model, settled.chunk_size, settled.overlap)
        settled = replace(settled, chunk_size=made.chunk_size)

        def chunker() -> TokenChunker:
            return made

    store = await open_store(kb_store_dir(store_dir, args.kb), args.kb, args.wait)
    try:
        if rebuild and record is not None:
            await store.delete_collection(args.kb)
        kb = KnowledgeBase(
            name=args.kb,
            description=settled.description,
            embedding_model=model,
            vector_store=store,
            collection=args.kb,
            metadata_filter=tenant_scope(args.tenant),
        )
        if settled != record:
            save_kb(store_dir, settled)
        yield Session(store, kb, store_dir, settled, chunker)
    finally:
        try:
            await store.__aexit__(None, None, None)
        finally:
            await model.aclose()
