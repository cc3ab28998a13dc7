"""`KnowledgeBase.search(..., context=N)`: each hit with its neighbouring chunks, merged."""

from __future__ import annotations

import pytest

from archivist.embedding import EmbeddingModelBase
from archivist.message import TextBlock
from archivist.rag import KnowledgeBase
from archivist.rag.document import Chunk
from archivist.rag.knowledge.context import context_text
from archivist.rag.store.qdrant import QdrantStore

SENTENCES = [
    "The archive opens with a list of members.",
    "Each member starts with a header block of 512 bytes.",
    "The header names the file and gives its permissions.",
    "Volcanoes erupt when magma pressure exceeds the strength of the crust.",
    "After the header come the file's data blocks.",
    "Two zero blocks mark the end of the archive.",
    "Compression is applied to the whole archive, not to each member.",
    "Extraction restores the permissions the header recorded.",
]
OVERLAP = "(shared tail words between chunks) "


def _chunks() -> list[Chunk]:
    """Chunks that repeat the end of the previous one, as an overlapping chunker makes."""
    texts = [SENTENCES[0] + " " + OVERLAP]
    for sentence in SENTENCES[1:]:
        texts[-1] = texts[-1].rstrip() + " "
        texts.append(OVERLAP + sentence + " " + OVERLAP)
    return [
        Chunk(content=TextBlock(text=t), source="tar.txt", chunk_index=n, total_chunks=len(texts))
        for n, t in enumerate(texts)
    ]


async def _kb(embedder: EmbeddingModelBase, store: QdrantStore) -> KnowledgeBase:
    kb = KnowledgeBase("tar", "tar", embedder, store, "tar")
    await kb.insert_document(_chunks(), document_id="tar")
    await kb.insert_document(
        [
            Chunk(
                content=TextBlock(text="Magma and lava."),
                source="geo.txt",
                chunk_index=0,
                total_chunks=1,
            )
        ],
        document_id="geo",
    )
    return kb


async def test_a_hit_comes_with_its_neighbours(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = await _kb(embedder, store)
    (hit,) = await kb.search("volcano magma pressure crust", top_k=1, context=1)
    assert hit.chunk.chunk_index == 3
    assert hit.context is not None
    assert [c.chunk_index for c in hit.context] == [2, 3, 4]
    text = context_text(hit)
    assert text is not None
    for sentence in SENTENCES[2:5]:
        assert text.count(sentence) == 1
    assert text.count(OVERLAP.strip()) == 4  # each shared tail once, not twice
    plain = await kb.search("volcano magma pressure crust", top_k=1)
    assert plain[0].context is None


async def test_windows_of_one_document_that_overlap_are_merged(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = await _kb(embedder, store)
    hits = await kb.search("archive header block permissions", top_k=3, context=2)
    tar = [h for h in hits if h.document_id == "tar"]
    windows = [[c.chunk_index for c in h.context or []] for h in tar]
    flat = [index for window in windows for index in window]
    assert len(flat) == len(set(flat))  # no chunk shown twice
    for window in windows:
        assert window == list(range(window[0], window[-1] + 1))
    assert len(hits) <= 3


async def test_context_at_the_edges_and_bad_values(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = await _kb(embedder, store)
    (hit,) = await kb.search("Magma and lava", top_k=1, context=3)
    assert hit.document_id == "geo" and [c.chunk_index for c in hit.context or []] == [0]
    for bad in (-1, 11, 1.5, True):
        with pytest.raises(ValueError, match="context"):
            await kb.search("x", context=bad)  # type: ignore[arg-type]
