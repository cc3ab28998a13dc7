"""How each knowledge base indexes: its embedding model and chunker.

A knowledge base may choose, at creation, an embedding model among the locally registered
ones and its own chunk size and overlap; the rest use the service's defaults. Models are
loaded once per process and shared by every knowledge base that uses them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from archivist.embedding import EmbeddingModelBase
from archivist.embedding.registry import list_embedding_models
from archivist.errors import InvalidArgumentError
from archivist.rag import ChunkerBase
from archivist.rag.knowledge import factories
from archivist.rag.knowledge.profile import KnowledgeProfile
from archivist.service.retrieval.offload import OffloadedChunker
from archivist.service.settings import ServiceSettings
from archivist.service.storage.catalog import KBRecord


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

    def profile(self, kb: KBRecord) -> KnowledgeProfile:
        """`kb`'s profile, the service's defaults where it chose none."""
        return kb.profile(self.settings.default_profile())

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

    def chunker_of(self, profile: KnowledgeProfile) -> ChunkerBase:
        """The chunker `profile` describes; ValueError when its sizes do not fit the model."""
        return self._built(profile)[0]

    def chunk_size_for(self, profile: KnowledgeProfile) -> int:
        """The tokens per chunk `profile` cuts: its `chunk_size`, else its model's input
        length; ValueError as `chunker_of`."""
        return self._built(profile)[1]

    def _built(self, profile: KnowledgeProfile) -> tuple[ChunkerBase, int]:
        key = (profile.embedding_model, profile.chunk_size, profile.overlap)
        with self._lock:
            built = self._chunkers.get(key)
        if built is not None:
            return built
        inner = factories.chunker(profile, self.model_named(profile.embedding_model))
        offloaded = OffloadedChunker(  # in a child within limits, like the service's own chunker
            inner,
            self.settings.index_niceness,
            process_bytes=0,
            limits=self.settings.parse_limits,
        )
        with self._lock:
            return self._chunkers.setdefault(key, (offloaded, inner.chunk_size))

    def shown(self, kb: KBRecord) -> KnowledgeProfile:
        """`kb`'s profile as the API shows it, with the chunk size it cuts where it chose
        none (its model's input length) once that model is loaded (never loads one: before,
        the recorded None)."""
        profile = self.profile(kb)
        if profile.chunk_size is None and self.loaded(kb) is not None:
            return profile.model_copy(update={"chunk_size": self.chunk_size_for(profile)})
        return profile

    def loaded(self, kb: KBRecord) -> EmbeddingModelBase | None:
        """The model `kb` embeds with if it is loaded already, else None (no loading)."""
        with self._lock:
            return self._models.get(self.profile(kb).embedding_model)

    def model(self, kb: KBRecord) -> EmbeddingModelBase:
        """The model `kb` embeds with."""
        return self.model_named(self.profile(kb).embedding_model)

    def chunker(self, kb: KBRecord) -> ChunkerBase:
        """The chunker `kb`'s documents are cut with."""
        return self.chunker_of(self.profile(kb))
