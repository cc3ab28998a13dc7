"""The one road from a `KnowledgeProfile` and a `StoreSpec` to an open `KnowledgeBase`.

Every shell (CLI, MCP, the service, eval) builds its embedding model, chunker, OCR reader and
store here and nowhere else; they wrap what these return (a cache, a child process, a
batcher) but never name the concrete classes themselves. Engines and providers are imported
only when a spec names them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.errors import ConfigurationError, InvalidArgumentError, StoreLockedError
from archivist.rag.knowledge.profile import KnowledgeProfile, StoreSpec
from archivist.rag.store.tenant import tenant_scope

if TYPE_CHECKING:
    from archivist.embedding import EmbeddingModelBase
    from archivist.rag.chunker import TokenChunker
    from archivist.rag.knowledge.knowledge_base import KnowledgeBase
    from archivist.rag.parser.ocr import Ocr
    from archivist.rag.store.base import VectorStoreBase

__all__ = [
    "DEFAULT_EMBEDDING_TIMEOUT",
    "chunker",
    "embedding_model",
    "enter_store",
    "knowledge_base",
    "ocr",
    "open_knowledge_base",
    "open_store",
]

DEFAULT_EMBEDDING_TIMEOUT = 30.0
"""Seconds one request to a remote embedding model may take."""
DEFAULT_DASHSCOPE_DIMENSIONS = 1024

WaitNotice = Callable[[str], None]
"""Told once, with the holder's description, that a store is busy and the opener waits."""


def embedding_model(
    name: str,
    *,
    cache_dir: Path | None = None,
    timeout: float = DEFAULT_EMBEDDING_TIMEOUT,
    **local_options: Any,
) -> EmbeddingModelBase:
    """The model `name` names, behind an on-disk cache at `cache_dir` when given.

    A registry name runs offline (`local_options` go to its constructor);
    `dashscope:MODEL[:DIMS]` takes its key from DASHSCOPE_API_KEY and `openai:MODEL:DIMS`
    its key and endpoint from OPENAI_API_KEY / OPENAI_BASE_URL. A spec that names no vector
    size where one is needed is an InvalidArgumentError naming `embedding_model`.
    """
    from archivist.embedding import CachedEmbeddingModel, LocalEmbeddingModel

    provider, _, rest = name.partition(":")
    model: EmbeddingModelBase
    if provider == "dashscope" and rest:
        from archivist.credential import DashScopeCredential
        from archivist.embedding import DashScopeEmbeddingModel

        model_name, _, dims = rest.partition(":")
        dimensions = _dimensions(name, dims or str(DEFAULT_DASHSCOPE_DIMENSIONS))
        model = DashScopeEmbeddingModel(
            credential=DashScopeCredential(),
            model=model_name,
            dimensions=dimensions,
            timeout=timeout,
        )
    elif provider == "openai" and rest:
        from archivist.embedding import OpenAIEmbeddingModel

        model_name, _, dims = rest.partition(":")
        model = OpenAIEmbeddingModel(model_name, _dimensions(name, dims), timeout=timeout)
    else:
        model = LocalEmbeddingModel(name, **local_options)
    return model if cache_dir is None else CachedEmbeddingModel(model, cache_dir)


def _dimensions(spec: str, text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise InvalidArgumentError(
            f"embedding model {spec!r}: give the vector size, e.g. openai:MODEL:1536",
            argument="embedding_model",
        )
    return int(text)


def chunker(profile: KnowledgeProfile, model: EmbeddingModelBase) -> TokenChunker:
    """The chunker `profile` describes, measuring with `model`'s own tokenizer; a size that
    does not fit the model is an InvalidArgumentError naming `chunk_size` or `overlap`."""
    from archivist.rag.chunker import chunker_for

    return chunker_for(
        model.chunk_tokenizer(),
        profile.chunk_size,
        profile.overlap,
        context_header=profile.context_header,
    )


def ocr(
    engine: str,
    languages: Sequence[str],
    *,
    cache_dir: Path | None,
    on_page: Callable[[str, int | None, int | None], None] | None = None,
) -> Ocr | None:
    """The OCR reader of `engine` ("off": None), resolved now: an engine named but not usable
    is a ConfigurationError naming `ocr` and what to install. "auto" never fails."""
    if engine == "off":
        return None
    from archivist.rag.parser.ocr import Ocr

    try:
        reader = Ocr(
            engine,  # type: ignore[arg-type]  # the name is checked there
            languages=languages,
            cache_dir=cache_dir,
            on_page=on_page,
        )
        reader.engine  # noqa: B018  # resolved once, here, rather than at every page
    except ValueError as exc:
        raise ConfigurationError(f"--ocr {engine}: {exc}", setting="ocr") from None
    return reader


def open_store(spec: StoreSpec) -> VectorStoreBase:
    """The store `spec` names, not yet entered."""
    if spec.kind == "pgvector":
        from archivist.rag.store.pgvector import PgVectorStore  # the pgvector extra's

        assert spec.url is not None  # StoreSpec's rule
        return PgVectorStore(spec.url, **spec.options)
    from archivist.rag.store.qdrant import QdrantStore

    if spec.kind == "qdrant":
        return QdrantStore(url=spec.url, api_key=spec.api_key, **spec.options)
    where: dict[str, Any] = {"path": spec.path} if spec.path else {"location": ":memory:"}
    if spec.in_child_process:
        from archivist.rag.store.process import ProcessStore

        return ProcessStore.of(QdrantStore, **where, **spec.options)
    return QdrantStore(**where, **spec.options)


async def enter_store(
    spec: StoreSpec, *, wait: float = 0.0, on_wait: WaitNotice | None = None
) -> VectorStoreBase:
    """The store `spec` names, entered. While another process holds it (an Edge directory
    admits one), retry for up to `wait` seconds, telling `on_wait` once; then the
    StoreLockedError."""
    deadline = time.monotonic() + max(0.0, wait)
    told = False
    while True:
        store = open_store(spec)
        try:
            return await store.__aenter__()
        except StoreLockedError as exc:
            if time.monotonic() >= deadline:
                raise
            if on_wait is not None and not told:
                on_wait(exc.holder)
                told = True
            await asyncio.sleep(0.25)


def knowledge_base(
    profile: KnowledgeProfile,
    store: VectorStoreBase,
    model: EmbeddingModelBase,
    *,
    scoped: bool = True,
) -> KnowledgeBase:
    """A handle on `profile`'s collection in `store`, confined to `profile.tenant` (None: the
    records of no tenant); unless `scoped` is False, for a store no one else writes to."""
    from archivist.rag.knowledge.knowledge_base import KnowledgeBase

    return KnowledgeBase(
        name=profile.name,
        description=profile.description,
        embedding_model=model,
        vector_store=store,
        collection=profile.collection_name,
        metadata_filter=tenant_scope(profile.tenant) if scoped else None,
    )


@asynccontextmanager
async def open_knowledge_base(
    profile: KnowledgeProfile,
    store: StoreSpec,
    *,
    model: EmbeddingModelBase | None = None,
    cache_dir: Path | None = None,
    wait: float = 0.0,
    on_wait: WaitNotice | None = None,
) -> AsyncIterator[KnowledgeBase]:
    """`profile`'s knowledge base in the store `store` names, open for the block: the store
    is entered (waiting as `enter_store`) and closed after it, and so is the model unless
    `model` was given."""
    made = model is None
    used = (
        model
        if model is not None
        else embedding_model(profile.embedding_model, cache_dir=cache_dir)
    )
    try:
        opened = await enter_store(store, wait=wait, on_wait=on_wait)
        try:
            yield knowledge_base(profile, opened, used)
        finally:
            await opened.__aexit__(None, None, None)
    finally:
        if made:
            await used.aclose()
