"""Searching several knowledge bases at once and merging their hits into one list."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from archivist.message import DataBlock, TextBlock
from archivist.rag.knowledge.citation import citation, copy_citation
from archivist.rag.knowledge.context import context_text
from archivist.rag.knowledge.knowledge_base import KnowledgeBase, Query
from archivist.rag.knowledge.searching import same_text_key
from archivist.rag.record import VectorSearchResult

# Reciprocal-rank-fusion constant (Cormack et al. 2009): damps the weight of top ranks.
RRF_K = 60


@dataclass(frozen=True)
class Hit:
    """One merged hit: the knowledge base it came from, the store's result, the fused score."""

    knowledge_base: str
    result: VectorSearchResult
    fused_score: float

    def citation(self) -> str:
        """A label the model can cite: source file, page/slide/sheet and heading path when
        known, chunk index (and the neighbouring chunks shown with it)."""
        label = citation(self.result.chunk)
        window = self.result.context
        if window and len(window) > 1:
            label += f" (with chunks {window[0].chunk_index}-{window[-1].chunk_index})"
        if self.result.also_in:
            label += "; also in " + "; ".join(copy_citation(c) for c in self.result.also_in)
        return label


@dataclass
class Retrieval:
    """What a multi-KB search found, plus an error note for each KB that failed."""

    hits: list[Hit] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    searched: list[str] = field(default_factory=list)


async def search_and_fuse(
    knowledge_bases: Sequence[KnowledgeBase],
    queries: Sequence[Query],
    top_k: int,
    score_threshold: float | None,
    *,
    context: int = 0,
    min_relevance: float | None = None,
) -> Retrieval:
    """Search every KB concurrently; merge by relevance when every hit carries one (it means
    the same in every knowledge base), else by reciprocal rank fusion (scores of different
    embedding models are not comparable); drop duplicate passages, keep the best `top_k`.
    A KB that raises is reported in `errors` and the others still answer."""
    outcomes = await asyncio.gather(
        *(
            kb.search(
                list(queries),
                top_k=top_k,
                score_threshold=score_threshold,
                context=context,
                min_relevance=min_relevance,
            )
            for kb in knowledge_bases
        ),
        return_exceptions=True,
    )
    retrieval = Retrieval(searched=[kb.name for kb in knowledge_bases])
    fused: dict[str, Hit] = {}
    for kb, outcome in zip(knowledge_bases, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, Exception):
                raise outcome
            retrieval.errors[kb.name] = f"{type(outcome).__name__}: {outcome}"
            continue
        for rank, result in enumerate(outcome, start=1):
            score = 1.0 / (RRF_K + rank)
            key = same_text_key(result)
            if key in fused:
                kept = fused[key]
                fused[key] = Hit(kept.knowledge_base, kept.result, kept.fused_score + score)
            else:
                fused[key] = Hit(kb.name, result, score)
    hits = list(fused.values())
    if all(hit.result.relevance is not None for hit in hits):
        # Relevance means the same in every knowledge base: the merged list is ordered by
        # it, as each knowledge base's own list is.
        ranked = sorted(hits, key=lambda h: (h.result.relevance, h.fused_score), reverse=True)
    else:
        ranked = sorted(hits, key=lambda h: (h.fused_score, h.result.score), reverse=True)
    retrieval.hits = ranked[:top_k]
    return retrieval


def render_hits(retrieval: Retrieval) -> list[TextBlock | DataBlock]:
    """The hits as blocks for the model: a numbered citation line before each passage."""
    blocks: list[TextBlock | DataBlock] = []
    lines: list[str] = []
    if retrieval.hits:
        lines.append(
            "Passages retrieved from the knowledge base(s). Cite them by their [number] and "
            "source when you use them."
        )
    else:
        lines.append("No relevant passages were found in the knowledge base(s).")
    for number, hit in enumerate(retrieval.hits, start=1):
        measure = (
            f"score {hit.result.score:.3f}"
            if hit.result.relevance is None
            else f"relevance {hit.result.relevance:.2f}"
        )
        label = f"[{number}] {hit.citation()} (knowledge base: {hit.knowledge_base}, {measure})"
        content = hit.result.chunk.content
        if isinstance(content, TextBlock):
            lines.append(f"{label}\n{context_text(hit.result) or content.text}")
        else:
            lines.append(f"{label}\n<{content.source.media_type} attached below>")
            blocks.append(TextBlock(text="\n\n".join(lines)))
            blocks.append(content)
            lines = []
    for name, error in retrieval.errors.items():
        lines.append(f"Note: knowledge base {name!r} could not be searched ({error}).")
    if lines:
        blocks.append(TextBlock(text="\n\n".join(lines)))
    return blocks
