"""Search returns one hit per text: a file indexed under two paths is one hit naming both."""

from __future__ import annotations

from pathlib import Path

from archivist.embedding import EmbeddingModelBase
from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, Chunk, KnowledgeBase, default_registry
from archivist.rag.knowledge.ingest import PATH_KEY, Outcome, ingest_files
from archivist.rag.store.qdrant import QdrantStore

HERONS = "Grey herons stand still in shallow water and strike at fish with their long bills."
OWLS = "Barn owls hunt at night and find voles by sound alone, even under snow."


async def test_one_file_under_two_paths_is_one_hit_naming_both(
    tmp_path: Path, store: QdrantStore, embedder: EmbeddingModelBase
) -> None:
    first, second = tmp_path / "a" / "birds.txt", tmp_path / "b" / "copy.txt"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(HERONS)
    (tmp_path / "owls.txt").write_text(OWLS)
    kb = KnowledgeBase("k", "k", embedder, store, "k")
    report = await ingest_files(
        kb,
        [first, second, tmp_path / "owls.txt"],
        registry=default_registry(),
        chunker=ApproxTokenChunker(64, 8),
    )
    assert report.count(Outcome.INDEXED) == 3

    hits = await kb.search("How do herons catch fish?", top_k=2)
    assert [h.chunk.content.text for h in hits] == [HERONS, OWLS]  # type: ignore[union-attr]
    [copy] = hits[0].also_in
    paths = {hits[0].chunk.metadata[PATH_KEY], copy.metadata[PATH_KEY]}
    assert paths == {str(first.resolve()), str(second.resolve())}
    assert copy.document_id != hits[0].document_id
    assert copy.score <= hits[0].score
    assert hits[1].also_in == []
    [only] = await kb.search("How do herons catch fish?", top_k=1)
    assert len(only.also_in) == 1  # the copy ranked just past top_k is still named

    every = await kb.search("How do herons catch fish?", top_k=2, collapse_duplicates=False)
    assert [h.chunk.content.text for h in every] == [HERONS, HERONS]  # type: ignore[union-attr]
    assert all(h.also_in == [] for h in every)


def chunk(text: str, source: str) -> list[Chunk]:
    return [Chunk(content=TextBlock(text=text), source=source, chunk_index=0, total_chunks=1)]


async def test_white_space_aside_copies_collapse_and_near_copies_stay(
    store: QdrantStore, embedder: EmbeddingModelBase
) -> None:
    kb = KnowledgeBase("k", "k", embedder, store, "k")
    await kb.insert_document(chunk(HERONS, "one.txt"), document_id="one")
    spaced = HERONS.replace(" ", "  \n", 3)
    await kb.insert_document(chunk(f"  {spaced}\n", "two.txt"), document_id="two")
    near = HERONS.replace("fish", "frogs")
    await kb.insert_document(chunk(near, "three.txt"), document_id="three")
    hits = await kb.search("herons fish", top_k=5)
    assert len(hits) == 2
    by_id = {h.document_id: h for h in hits}
    assert "three" in by_id and by_id["three"].also_in == []
    [kept] = [h for h in hits if h.document_id != "three"]
    assert {kept.document_id, *(c.document_id for c in kept.also_in)} == {"one", "two"}
    assert [c.source for c in kept.also_in] == [
        "two.txt" if kept.document_id == "one" else "one.txt"
    ]


async def test_top_k_fills_with_distinct_texts_past_many_copies(
    store: QdrantStore, embedder: EmbeddingModelBase
) -> None:
    kb = KnowledgeBase("k", "k", embedder, store, "k")
    for n in range(12):  # twelve copies of the best text crowd out a first page
        await kb.insert_document(chunk(HERONS, f"copy{n}.txt"), document_id=f"copy{n}")
    others = [
        OWLS,
        "Kestrels hover over verges, watching for mice in the grass.",
        "Kingfishers dive from a perch and swallow small fish head first.",
    ]
    for n, text in enumerate(others):
        await kb.insert_document(chunk(text, f"other{n}.txt"), document_id=f"other{n}")
    hits = await kb.search("herons fish birds", top_k=4, mode="dense")
    texts = [h.chunk.content.text for h in hits]  # type: ignore[union-attr]
    assert len(hits) == 4 and len(set(texts)) == 4
    assert set(texts) == {HERONS, *others}
    [heron] = [h for h in hits if h.chunk.content.text == HERONS]  # type: ignore[union-attr]
    assert len(heron.also_in) == 11
    scores = [heron.score, *(c.score for c in heron.also_in)]
    assert scores == sorted(scores, reverse=True)
