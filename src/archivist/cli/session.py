"""Opening the store and a KnowledgeBase handle for one CLI command."""

from __future__ import annotations

import argparse
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from archivist.cli.home import KBRecord, cache_dir, default_store_dir, load_kbs, save_kb
from archivist.credential import DashScopeCredential
from archivist.embedding import (
    CachedEmbeddingModel,
    DashScopeEmbeddingModel,
    EmbeddingModelBase,
    LocalEmbeddingModel,
    OpenAIEmbeddingModel,
)
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.rag import KnowledgeBase
from archivist.rag.store.qdrant import QdrantStore, StoreLockedError
from archivist.rag.tenant import tenant_scope

_KB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class CLIError(Exception):
    """A problem to report to the user in one line, with exit code 2."""


@dataclass
class Session:
    """An open store and the knowledge-base handle the command works on."""

    store: QdrantStore
    kb: KnowledgeBase
    store_dir: Path


def add_common_arguments(cmd: argparse.ArgumentParser) -> None:
    """`--kb`, `--store` and `--tenant`, shared by every command that opens a store."""
    cmd.add_argument("--kb", default="default", help="knowledge base name (default: default)")
    cmd.add_argument("--store", type=Path, default=None, help="store directory")
    cmd.add_argument(
        "--tenant",
        default=None,
        help="tenant id: confines every read and write to that tenant "
        "(default: the records that belong to no tenant)",
    )


def add_json_argument(cmd: argparse.ArgumentParser) -> None:
    """`--json`: machine-readable output on stdout."""
    cmd.add_argument("--json", action="store_true", help="print JSON for scripts")


def embedding_model(name: str) -> EmbeddingModelBase:
    """The model `name` names, behind the on-disk embedding cache.

    A registry name (offline), `dashscope:MODEL[:DIMS]` (key from DASHSCOPE_API_KEY) or
    `openai:MODEL:DIMS` (key and endpoint from OPENAI_API_KEY / OPENAI_BASE_URL).
    """
    provider, _, rest = name.partition(":")
    model: EmbeddingModelBase
    if provider == "dashscope" and rest:
        model_name, _, dims = rest.partition(":")
        model = DashScopeEmbeddingModel(
            credential=DashScopeCredential(),
            model=model_name,
            dimensions=_dimensions(name, dims or "1024"),
        )
    elif provider == "openai" and rest:
        model_name, _, dims = rest.partition(":")
        model = OpenAIEmbeddingModel(model_name, _dimensions(name, dims))
    else:
        model = LocalEmbeddingModel(name)
    return CachedEmbeddingModel(model, cache_dir())


def _dimensions(spec: str, text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise CLIError(f"--embedding {spec!r}: give the vector size, e.g. openai:MODEL:1536")
    return int(text)


@asynccontextmanager
async def open_session(
    args: argparse.Namespace, *, create: bool, embedding: str | None = None
) -> AsyncIterator[Session]:
    """Open `args.store` and the KB `args.kb`; unknown KBs are an error unless `create`."""
    if not _KB_NAME.match(args.kb):
        raise CLIError(f"invalid knowledge base name {args.kb!r} (letters, digits, _ . -)")
    store_dir: Path = args.store or default_store_dir()
    kbs = load_kbs(store_dir)
    record = kbs.get(args.kb)
    if record is None and not create:
        known = ", ".join(sorted(kbs)) or "none yet"
        raise CLIError(
            f"unknown knowledge base {args.kb!r} in {store_dir} (known: {known}); "
            f"create it with: archivist index PATH --kb {args.kb}"
        )
    wanted = embedding or (record.embedding_model if record else DEFAULT_EMBEDDING_MODEL)
    if record is not None and wanted != record.embedding_model:
        raise CLIError(
            f"knowledge base {args.kb!r} was built with {record.embedding_model!r}, "
            f"not {wanted!r}; use another --kb for another model"
        )
    model = embedding_model(wanted)
    store = QdrantStore(path=store_dir)
    try:
        await store.__aenter__()
    except StoreLockedError as exc:
        raise CLIError(f"{exc}; wait for the other archivist process to finish") from None
    try:
        kb = KnowledgeBase(
            name=args.kb,
            description=record.description if record else f"Files indexed into {args.kb}",
            embedding_model=model,
            vector_store=store,
            collection=args.kb,
            metadata_filter=tenant_scope(args.tenant),
        )
        if record is None:
            save_kb(store_dir, KBRecord(args.kb, kb.description, wanted, model.dimensions))
        yield Session(store, kb, store_dir)
    finally:
        await store.__aexit__(None, None, None)
