"""Context around search hits: windows of neighbouring chunks, merged where they overlap."""

from __future__ import annotations

from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorSearchResult

MAX_CONTEXT = 10
"""The most neighbours a search may ask for on each side of a hit."""
_MAX_OVERLAP = 4000
"""Longest text two consecutive chunks are checked to share (a chunker's overlap)."""


def merged_windows(
    hits: list[VectorSearchResult], context: int
) -> list[tuple[VectorSearchResult, int, int]]:
    """Each hit with its window (first, last chunk index), best first; a hit whose window
    overlaps or touches a better hit's of the same document is folded into that one."""
    windows: list[tuple[VectorSearchResult, int, int]] = []
    for hit in hits:
        index = hit.chunk.chunk_index
        first, last = max(0, index - context), index + context
        for position, (kept, kept_first, kept_last) in enumerate(windows):
            if (
                kept.document_id == hit.document_id
                and first <= kept_last + 1
                and (kept_first <= last + 1)
            ):
                windows[position] = (kept, min(first, kept_first), max(last, kept_last))
                break
        else:
            windows.append((hit, first, last))
    # A widened window can now reach another: merge until stable.
    merged = True
    while merged:
        merged = False
        for i, (kept, first, last) in enumerate(windows):
            for j in range(i + 1, len(windows)):
                other, other_first, other_last = windows[j]
                if other.document_id == kept.document_id and (
                    other_first <= last + 1 and first <= other_last + 1
                ):
                    windows[i] = (kept, min(first, other_first), max(last, other_last))
                    del windows[j]
                    merged = True
                    break
            if merged:
                break
    return windows


def context_text(result: VectorSearchResult) -> str | None:
    """The text of the hit's context window (or of the hit alone), with the text that
    consecutive chunks share (the chunker's overlap) given once; None for a non-text hit."""
    chunks = result.context or [result.chunk]
    texts = [c.content.text for c in chunks if isinstance(c.content, TextBlock)]
    if not texts:
        return None
    joined = texts[0]
    for text in texts[1:]:
        shared = _shared(joined, text)
        joined = joined + text[shared:] if shared else f"{joined}\n\n{text}"
    return joined


def _shared(before: str, after: str) -> int:
    """Length of the longest end of `before` that `after` starts with (at least 20 chars)."""
    limit = min(len(before), len(after), _MAX_OVERLAP)
    for size in range(limit, 19, -1):
        if before.endswith(after[:size]):
            return size
    return 0


def window_bounds(chunks: list[Chunk]) -> tuple[int, int]:
    """The first and last chunk index of a window."""
    return chunks[0].chunk_index, chunks[-1].chunk_index
