"""The knowledge base's per-document warnings, collected during a run to be reported once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from archivist.rag.knowledge.notices import (
    SKIPPED_DATA_BLOCKS,
    SKIPPED_DATA_DOCUMENT,
    UNKNOWN_SHARE,
    UNREADABLE_DOCUMENT,
    logger,
)


class DocumentNotices(logging.Filter):
    """Holds back the warnings "most of this text is unknown to the model" and "pictures
    skipped: the model is text-only", keyed by document id, instead of one line per file;
    every other warning passes."""

    def __init__(self) -> None:
        super().__init__()
        self.unreadable: dict[str, float] = {}
        """document id → share of its sampled text in chunks the embedding model cannot read"""
        self.skipped_pictures: dict[str, int] = {}
        """document id → pictures (DataBlocks) a text-only model could not embed"""

    def filter(self, record: logging.LogRecord) -> bool:
        document = getattr(record, UNREADABLE_DOCUMENT, None)
        if isinstance(document, str):
            self.unreadable[document] = float(getattr(record, UNKNOWN_SHARE, 0.0))
            return False
        document = getattr(record, SKIPPED_DATA_DOCUMENT, None)
        if isinstance(document, str):
            count = int(getattr(record, SKIPPED_DATA_BLOCKS, 0))
            self.skipped_pictures[document] = self.skipped_pictures.get(document, 0) + count
            return False
        return True

    @contextmanager
    def collecting(self) -> Iterator[DocumentNotices]:
        """Collect the knowledge base's notices while the block runs."""
        logger.addFilter(self)
        try:
            yield self
        finally:
            logger.removeFilter(self)
