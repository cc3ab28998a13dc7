"""Old import path, kept working: the same objects now live in `archivist.rag.knowledge.context`."""

from archivist.rag.knowledge.context import (
    MAX_CONTEXT as MAX_CONTEXT,
)
from archivist.rag.knowledge.context import (
    context_text as context_text,
)
from archivist.rag.knowledge.context import (
    merged_windows as merged_windows,
)
from archivist.rag.knowledge.context import (
    window_bounds as window_bounds,
)
