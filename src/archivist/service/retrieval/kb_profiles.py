"""How each knowledge base indexes: its embedding model and chunker.

A knowledge base may choose, at creation, an embedding model among the locally registered
ones and its own chunk size and overlap; the rest use the service's defaults. Models are
loaded once per process and shared by every knowledge base that uses them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from archivist.embedding import EmbeddingModelBase
from archivist.embedding.registry import list_embedding_models
from archivist.errors import InvalidArgumentError
from archivist.rag import ChunkerBase
from archivist.rag.chunker import chunker_for
from archivist.service.retrieval.offload import OffloadedChunker
from archivist.service.settings import ServiceSettings
from archivist.service.storage.catalog import KBRecord


class KBIndexing(BaseModel):
    """A knowledge base's indexing choices, as recorded."""

    model_config = ConfigDict(extra="forbid")

    embedding_model: str
    chunk_size: int | None
    overlap: int


class KBProfiles:
    """The embedding model and chunker of each knowledge base, built on first use."""

    def __init__(
        self,
        settings: ServiceSettings,
        default_model: EmbeddingModelBase,
        load: Callable[[str], EmbeddingModelBase],
    ) -> None:
        self.settings = settings
        self._load = load
        self._models: dict[str, EmbeddingModelBase] = {settings.embedding_model: default_model}
        self._chunkers: dict[tuple[str, int | None, int], tuple[ChunkerBase, int]] = {}
        """(model, chunk size, overlap) → the chunker and the chunk size it cuts."""
        self._lock = threading.Lock()

    def defaults(self) -> KBIndexing:
        """What a knowledge base that chose nothing uses."""
        return KBIndexing(
            embedding_model=self.settings.embedding_model,
            chunk_size=self.settings.chunk_size,
            overlap=self.settings.overlap,
        )

    def indexing(self, kb: KBRecord) -> KBIndexing:
        """`kb`'s recorded choices, the service's defaults where it has none."""
        if kb.embedding_model is None:
            return self.defaults()
        return KBIndexing(
            embedding_model=kb.embedding_model,
            chunk_size=kb.chunk_size,
            overlap=kb.overlap if kb.overlap is not None else self.settings.overlap,
        )

    def model_named(self, name: str) -> EmbeddingModelBase:
        """The loaded model `name`; ValueError naming the available ones when unknown."""
        with self._lock:
            model = self._models.get(name)
        if model is not None:
            return model
        available = list_embedding_models()
        if name not in available:
            raise InvalidArgumentError(
                f"embedding_model {name!r} is not available here; choose one of: "
                f"{', '.join(sorted({*available, self.settings.embedding_model}))}",
                argument="embedding_model",
            )
        loaded = self._load(name)
        with self._lock:
            return self._models.setdefault(name, loaded)

    def chunker_for(self, indexing: KBIndexing) -> ChunkerBase:
        """The chunker `indexing` describes; ValueError when its sizes do not fit the model."""
        return self._built(indexing)[0]

    def chunk_size_for(self, indexing: KBIndexing) -> int:
        """The tokens per chunk `indexing` cuts: its `chunk_size`, else its model's input
        length; ValueError as `chunker_for`."""
        return self._built(indexing)[1]

    def _built(self, indexing: KBIndexing) -> tuple[ChunkerBase, int]:
        key = (indexing.embedding_model, indexing.chunk_size, indexing.overlap)
        with self._lock:
            built = self._chunkers.get(key)
        if built is not None:
            return built
        model = self.model_named(indexing.embedding_model)
        inner = chunker_for(model.chunk_tokenizer(), indexing.chunk_size, indexing.overlap)
        offloaded = OffloadedChunker(  # in a child within limits, like the service's own chunker
            inner,
            self.settings.index_niceness,
            process_bytes=0,
            limits=self.settings.parse_limits,
        )
        with self._lock:
            return self._chunkers.setdefault(key, (offloaded, inner.chunk_size))

    def shown(self, kb: KBRecord) -> KBIndexing:
        """`kb`'s indexing as the API shows it: `indexing`, with the chunk size it cuts where
        it chose none (its model's input length) once that model is loaded (never loads
        one: before, the recorded None)."""
        indexing = self.indexing(kb)
        if indexing.chunk_size is None and self.loaded(kb) is not None:
            return indexing.model_copy(update={"chunk_size": self.chunk_size_for(indexing)})
        return indexing

    def loaded(self, kb: KBRecord) -> EmbeddingModelBase | None:
        """The model `kb` embeds with if it is loaded already, else None (no loading)."""
        with self._lock:
            return self._models.get(self.indexing(kb).embedding_model)

    def model(self, kb: KBRecord) -> EmbeddingModelBase:
        """The model `kb` embeds with."""
        return self.model_named(self.indexing(kb).embedding_model)

    def chunker(self, kb: KBRecord) -> ChunkerBase:
        """The chunker `kb`'s documents are cut with."""
        return self.chunker_for(self.indexing(kb))
