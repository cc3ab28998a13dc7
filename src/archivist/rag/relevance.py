"""Old import path, kept working: the same objects now live in `archivist.rag.store.relevance`."""

from archivist.rag.store.relevance import (
    DEFAULT_MIN_RELEVANCE as DEFAULT_MIN_RELEVANCE,
)
from archivist.rag.store.relevance import (
    check_min_relevance as check_min_relevance,
)
from archivist.rag.store.relevance import (
    relevance as relevance,
)
