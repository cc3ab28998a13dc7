"""Opening the store and a KnowledgeBase handle for one CLI command.

Each knowledge base lives in its own store directory (`STORE/kbs/NAME`), locked by the one
process that has it open: Qdrant Edge lets a single process own a shard (its write-ahead log
is exclusive, and a second opener can damage the owner's files), so a command finding its
knowledge base busy waits, saying so, up to `--wait` seconds. Knowledge bases never block
each other. A store made before this layout (`STORE/collections/NAME`) is used where it is.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.cli.arguments import (
    CHUNKING_OPTIONS,
    CLIError,
    chunk_settings,
    chunking_error,
)
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
    from archivist.rag.chunker import TokenChunker
    from archivist.rag.knowledge.profile import KnowledgeProfile
    from archivist.rag.store.base import VectorStoreBase

DEFAULT_EMBEDDING_TIMEOUT = 30.0
"""Seconds one request to a remote embedding model may take (the factories' default)."""


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


@dataclass(frozen=True)
class SessionPlan:
    """What opening a knowledge base needs besides its store, settled once: its settings and
    loaded model, so a long-running command (`index --watch`) can enter the store again and
    again without loading the model each time."""

    name: str
    tenant: str | None
    wait: float
    store_dir: Path
    recorded: KnowledgeProfile | None
    """The settings as the registry held them when the plan was made (None: a new KB)."""
    settled: KnowledgeProfile
    model: EmbeddingModelBase
    make_chunker: Callable[[], TokenChunker] = field(repr=False)
    rebuild: bool = False

    def recorded_now(self) -> SessionPlan:
        """This plan once its store was entered: the settings recorded, nothing to rebuild."""
        return dataclasses.replace(self, recorded=self.settled, rebuild=False)


def plan_session(
    args: argparse.Namespace,
    *,
    create: bool,
    embedding: str | None = None,
    chunk_size: int | None = None,
    overlap: int | None = None,
    rebuild: bool = False,
) -> SessionPlan:
    """Settle the KB `args.kb` in `args.store` and load its model; unknown KBs are an error
    unless `create`. The caller closes the plan's model."""
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
        chunker = functools.cache(functools.partial(make_chunker, model, settled))
    else:
        # New or changed settings are checked now, before they are recorded; the chunk size
        # a new KB gets is the model's input length, recorded as a number.
        made = make_chunker(model, settled)
        settled = settled.model_copy(update={"chunk_size": made.chunk_size})

        def chunker() -> TokenChunker:
            return made

    return SessionPlan(
        args.kb, args.tenant, args.wait, store_dir, record, settled, model, chunker, rebuild
    )


@asynccontextmanager
async def enter_session(plan: SessionPlan) -> AsyncIterator[Session]:
    """The plan's store entered (waiting up to `plan.wait` while another process holds it),
    rebuilt and recorded as planned, and closed on exit; the model stays open."""
    from archivist.rag.knowledge import factories

    store = await enter_kb_store(kb_store_dir(plan.store_dir, plan.name), plan.name, plan.wait)
    try:
        if plan.rebuild and plan.recorded is not None:
            await store.delete_collection(plan.settled.collection_name)
        kb = factories.knowledge_base(
            plan.settled.model_copy(update={"tenant": plan.tenant}), store, plan.model
        )
        if plan.settled != plan.recorded:
            save_kb(plan.store_dir, plan.settled)
        yield Session(store, kb, plan.store_dir, plan.settled, plan.make_chunker)
    finally:
        await store.__aexit__(None, None, None)


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
    plan = plan_session(
        args,
        create=create,
        embedding=embedding,
        chunk_size=chunk_size,
        overlap=overlap,
        rebuild=rebuild,
    )
    try:
        async with enter_session(plan) as session:
            yield session
    finally:
        await plan.model.aclose()
