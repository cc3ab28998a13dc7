"""Old import path, kept working: the same objects live in `archivist.rag.store.core.relevance`."""

from archivist.rag.store.core.relevance import (
    DEFAULT_MIN_RELEVANCE as DEFAULT_MIN_RELEVANCE,
)
from archivist.rag.store.core.relevance import (
    check_min_relevance as check_min_relevance,
)
from archivist.rag.store.core.relevance import (
    relevance as relevance,
)
