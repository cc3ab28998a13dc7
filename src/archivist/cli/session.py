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
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.chunk_defaults import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP
from archivist.cli.home import (
    cache_dir,
    default_store_dir,
    forget_kb,
    load_kbs,
    save_kb,
)
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.errors import InvalidArgumentError, StoreLockedError

if TYPE_CHECKING:  # the heavy modules load inside the functions that use them
    from archivist.embedding import EmbeddingModelBase
    from archivist.rag import KnowledgeBase
    from archivist.rag.chunker import ChunkSettings, TokenChunker
    from archivist.rag.knowledge.profile import KnowledgeProfile
    from archivist.rag.store.base import VectorStoreBase

DEFAULT_WAIT_SECONDS = 60.0
DEFAULT_EMBEDDING_TIMEOUT = 30.0
"""Seconds one request to a remote embedding model may take (the factories' default)."""


class CLIError(InvalidArgumentError):
    """A bad command line (an option's value, a name, a path): reported in one line, with
    exit code 2."""


@dataclass
class Session:
    """An open store and the knowledge-base handle the command works on."""

    store: VectorStoreBase
    kb: KnowledgeBase
    store_dir: Path
    record: KnowledgeProfile
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
    add_store_arguments(cmd)


def add_store_arguments(cmd: argparse.ArgumentParser, *, searches_only: bool = False) -> None:
    """`--store`, `--tenant` and `--wait`; `searches_only` words their help for a command
    that only searches."""
    cmd.add_argument(
        "--store", type=Path, default=None, help="store directory (default: $ARCHIVIST_HOME/store)"
    )
    confines = (
        "searches only that tenant's records"
        if searches_only
        else ("confines every read and write to that tenant")
    )
    cmd.add_argument(
        "--tenant",
        default=None,
        help=f"tenant id: {confines} (default: the records that belong to no tenant)",
    )
    waits = "how long a search waits" if searches_only else "how long to wait"
    cmd.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"{waits} while another archivist process has the knowledge base open",
    )


CHUNKING_OPTIONS = {"chunk_size": "--chunk-size", "overlap": "--overlap"}
"""The command-line option of each `ChunkSettings` field."""


def add_chunking_arguments(cmd: argparse.ArgumentParser, *, from_kb: bool) -> None:
    """`--chunk-size` and `--overlap`, defaulting to `ChunkSettings`'; with `from_kb`, unset
    means the knowledge base's own settings."""
    kb = "the KB's; for a new KB " if from_kb else ""
    size = (
        "the model's input length, so no chunk is truncated"
        if DEFAULT_CHUNK_SIZE is None
        else DEFAULT_CHUNK_SIZE
    )
    cmd.add_argument(
        "--chunk-size",
        type=positive_int,
        default=None if from_kb else DEFAULT_CHUNK_SIZE,
        help="tokens per chunk, measured with the embedding model's own tokenizer "
        f"(default: {kb}{size})",
    )
    cmd.add_argument(
        "--overlap",
        type=non_negative_int,
        default=None if from_kb else DEFAULT_OVERLAP,
        help=f"tokens shared by neighbouring chunks (default: {kb}{DEFAULT_OVERLAP})",
    )


def chunking_error(exc: ValueError) -> CLIError:
    """A chunker's or `ChunkSettings`' refusal as a one-line CLIError naming the option."""
    argument = exc.argument if isinstance(exc, InvalidArgumentError) else None
    return CLIError(f"{CHUNKING_OPTIONS.get(argument or '', '--chunk-size')}: {exc}")


def chunk_settings(chunk_size: int | None, overlap: int | None) -> ChunkSettings:
    """`--chunk-size` and `--overlap` as `ChunkSettings` (None: its default), or a one-line
    CLIError naming the option."""
    from archivist.rag.chunker import ChunkSettings

    try:
        return ChunkSettings.of(chunk_size=chunk_size, overlap=overlap)
    except ValueError as exc:
        raise chunking_error(exc) from None


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


def make_chunker(model: EmbeddingModelBase, profile: KnowledgeProfile) -> TokenChunker:
    """The chunker of `profile`'s settings for `model`, or a one-line CLIError naming the
    option."""
    from archivist.rag.knowledge import factories

    try:
        return factories.chunker(profile, model)
    except ValueError as exc:
        raise chunking_error(exc) from None


def embedding_model(name: str, timeout: float = DEFAULT_EMBEDDING_TIMEOUT) -> EmbeddingModelBase:
    """The model `--embedding` names, behind the on-disk embedding cache.

    A registry name (offline), `dashscope:MODEL[:DIMS]` (key from DASHSCOPE_API_KEY) or
    `openai:MODEL:DIMS` (key and endpoint from OPENAI_API_KEY / OPENAI_BASE_URL).
    """
    from archivist.rag.knowledge import factories

    try:
        return factories.embedding_model(name, cache_dir=cache_dir(), timeout=timeout)
    except InvalidArgumentError as exc:
        if exc.argument != "embedding_model":
            raise
        raise CLIError(f"--embedding: {exc}") from None


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
    record: KnowledgeProfile | None,
    name: str,
    *,
    embedding: str | None,
    chunk_size: int | None,
    overlap: int | None,
    rebuild: bool,
) -> KnowledgeProfile:
    """The settings a run uses: the KB's own, or for a new KB the given ones (else defaults).

    A value that differs from what the KB was built with is a CLIError unless `rebuild`; new
    or changed sizes are checked here, before the model loads (recorded ones are not, so a
    search loads no chunker).
    """
    from archivist.rag.knowledge.profile import KnowledgeProfile

    if record is None:
        chunking = chunk_settings(chunk_size, overlap)
        return KnowledgeProfile(
            name=name,
            description=f"Files indexed into {name}",
            embedding_model=embedding or DEFAULT_EMBEDDING_MODEL,
            chunk_size=chunking.chunk_size,
            overlap=chunking.overlap,
        )
    wanted = {"embedding_model": embedding, "chunk_size": chunk_size, "overlap": overlap}
    flags = {"embedding_model": "--embedding", **CHUNKING_OPTIONS}
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
    if changes.keys() & CHUNKING_OPTIONS.keys():
        chunk_settings(
            changes.get("chunk_size", record.chunk_size), changes.get("overlap", record.overlap)
        )
    return record.model_copy(update=changes) if changes else record


def unknown_kb(name: str, store_dir: Path, hint: str) -> CLIError:
    """The one-line error for a knowledge base `store_dir` does not hold, listing those it
    does, then `hint` (what to do)."""
    known = ", ".join(sorted(load_kbs(store_dir))) or "none yet"
    return CLIError(f"unknown knowledge base {name!r} in {store_dir} (known: {known}); {hint}")


def empty_kb(name: str) -> CLIError:
    """The one-line error for a search of a knowledge base that holds no document."""
    return CLIError(
        f"knowledge base {name!r} is empty; add files with: archivist index PATH --kb {name}"
    )


async def remove_kb(store: VectorStoreBase, store_dir: Path, name: str) -> None:
    """Delete knowledge base `name` from `store` (its open store): its collection, every
    tenant's documents, then its record. In that order an interruption leaves a recorded,
    empty knowledge base to delete again, never stored vectors without a record."""
    await store.delete_collection(name)
    forget_kb(store_dir, name)


async def enter_kb_store(directory: Path, name: str, wait: float) -> VectorStoreBase:
    """Knowledge base `name`'s store at `directory`, entered; while another process holds it,
    wait up to `wait` seconds with a message on stderr, then a StoreLockedError naming it."""
    from archivist.rag.knowledge import factories
    from archivist.rag.knowledge.profile import StoreSpec

    def waiting(holder: str) -> None:
        print(
            f"archivist: knowledge base {name!r} is in use ({holder}); "
            f"waiting up to {wait:g} s (--wait)",
            file=sys.stderr,
            flush=True,
        )

    try:
        return await factories.enter_store(
            StoreSpec(kind="edge", path=directory), wait=wait, on_wait=waiting
        )
    except StoreLockedError as exc:
        raise StoreLockedError(
            exc.path,
            exc.holder,
            message=f"knowledge base {name!r} is in use ({exc.holder}) and stayed so for "
            f"{wait:g} s; try again when it finishes or raise --wait",
        ) from None


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
    from archivist.rag.knowledge import factories

    check_kb_name(args.kb)
    store_dir: Path = args.store or default_store_dir()
    record = load_kbs(store_dir).get(args.kb)
    if record is None and not create:
        raise unknown_kb(args.kb, store_dir, f"create it with: archivist index PATH --kb {args.kb}")
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
    settled = settled.model_copy(update={"dimensions": model.dimensions})
    chunker: Callable[[], TokenChunker]
    if settled == record:  # settings as recorded: the chunker waits until a file is cut
        chunker = functools.partial(make_chunker, model, settled)
    else:
        # New or changed settings are checked now, before they are recorded; the chunk size
        # a new KB gets is the model's input length, recorded as a number.
        made = make_chunker(model, settled)
        settled = settled.model_copy(update={"chunk_size": made.chunk_size})

        def chunker() -> TokenChunker:
            return made

    store = await enter_kb_store(kb_store_dir(store_dir, args.kb), args.kb, args.wait)
    try:
        if rebuild and record is not None:
            await store.delete_collection(settled.collection_name)
        kb = factories.knowledge_base(
            settled.model_copy(update={"tenant": args.tenant}), store, model
        )
        if settled != record:
            save_kb(store_dir, settled)
        yield Session(store, kb, store_dir, settled, chunker)
    finally:
        try:
            await store.__aexit__(None, None, None)
        finally:
            await model.aclose()
