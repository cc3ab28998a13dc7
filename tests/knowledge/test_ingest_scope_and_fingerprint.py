"""ingest_files in the library: the pipeline fingerprint decides re-embedding, a handle without
a filter writes in the "no tenant" scope, and a file that stops yielding text leaves the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from archivist.embedding import EmbeddingModelBase
from archivist.rag import ApproxTokenChunker, KnowledgeBase, default_registry
from archivist.rag.knowledge.ingest import (
    HASH_KEY,
    PIPELINE_KEY,
    Outcome,
    document_id_for,
    ingest_files,
    pipeline_fingerprint,
)
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.tenant import TENANT_KEY, tenant_scope

TEXT = " ".join(f"Sentence {i} talks about herons, owls and kestrels." for i in range(60))


def kb_on(store: QdrantStore, embedder: EmbeddingModelBase, scope: dict | None) -> KnowledgeBase:  # type: ignore[type-arg]
    return KnowledgeBase("k", "k", embedder, store, "k", scope)


async def test_the_fingerprint_decides_what_is_re_embedded(
    tmp_path: Path, store: QdrantStore, embedder: EmbeddingModelBase
) -> None:
    path = tmp_path / "birds.txt"
    path.write_text(TEXT)
    kb = kb_on(store, embedder, None)
    small, large = ApproxTokenChunker(64, 8), ApproxTokenChunker(128, 8)
    assert pipeline_fingerprint(small, kb) != pipeline_fingerprint(large, kb)
    assert pipeline_fingerprint(small, kb) == pipeline_fingerprint(ApproxTokenChunker(64, 8), kb)
    assert pipeline_fingerprint(small, kb) != pipeline_fingerprint(ApproxTokenChunker(64, 9), kb)

    class OtherChunker(ApproxTokenChunker):
        """Same parameters, another way of cutting: its chunks may differ."""

    assert pipeline_fingerprint(small, kb) != pipeline_fingerprint(OtherChunker(64, 8), kb)
    registry = default_registry()

    async def ingest(chunker: ApproxTokenChunker) -> Outcome:
        report = await ingest_files(kb, [path], registry=registry, chunker=chunker)
        [result] = report.results
        return result.outcome

    assert await ingest(small) is Outcome.INDEXED
    assert await ingest(small) is Outcome.UNCHANGED
    [before] = await kb.list_documents()
    assert before.metadata[PIPELINE_KEY] == pipeline_fingerprint(small, kb)
    assert await ingest(large) is Outcome.UPDATED  # same bytes, another pipeline
    [after] = await kb.list_documents()
    assert after.chunk_count < before.chunk_count
    assert after.metadata[HASH_KEY] == before.metadata[HASH_KEY]
    assert await ingest(large) is Outcome.UNCHANGED


async def test_a_handle_without_a_filter_writes_in_the_no_tenant_scope(
    tmp_path: Path, store: QdrantStore, embedder: EmbeddingModelBase
) -> None:
    path = tmp_path / "birds.txt"
    path.write_text(TEXT)
    registry, chunker = default_registry(), ApproxTokenChunker(128, 8)
    acme = kb_on(store, embedder, tenant_scope("acme"))
    await ingest_files(acme, [path], registry=registry, chunker=chunker)
    everyone = kb_on(store, embedder, None)
    report = await ingest_files(everyone, [path], registry=registry, chunker=chunker)
    assert [r.outcome for r in report.results] == [Outcome.INDEXED]  # not acme's "unchanged"
    assert report.results[0].document_id == document_id_for(path)
    assert document_id_for(path) != document_id_for(path, tenant_scope("acme"))
    assert document_id_for(path) == document_id_for(path, tenant_scope(None))
    untenanted = kb_on(store, embedder, tenant_scope(None))
    [mine] = await untenanted.list_documents()
    assert TENANT_KEY not in mine.metadata
    path.unlink()
    report = await ingest_files(
        everyone, [], registry=registry, chunker=chunker, prune_missing=True
    )
    assert [r.outcome for r in report.results] == [Outcome.PRUNED]  # only its own copy
    [kept] = await acme.list_documents()
    assert kept.document_id == document_id_for(path, tenant_scope("acme"))


@pytest.mark.parametrize("keep_stale", [False, True])
async def test_a_file_that_no_longer_parses_is_removed_unless_kept(
    tmp_path: Path, store: QdrantStore, embedder: EmbeddingModelBase, keep_stale: bool
) -> None:
    path = tmp_path / "birds.txt"
    path.write_text(TEXT)
    registry, chunker = default_registry(), ApproxTokenChunker(128, 8)
    kb = kb_on(store, embedder, None)
    await ingest_files(kb, [path], registry=registry, chunker=chunker)
    path.write_bytes(b"\xff\xfe not utf-8 \x00\x00")
    report = await ingest_files(
        kb, [path], registry=registry, chunker=chunker, keep_stale=keep_stale
    )
    outcomes = [r.outcome for r in report.results]
    if keep_stale:
        assert outcomes == [Outcome.FAILED] and len(await kb.list_documents()) == 1
    else:
        assert outcomes == [Outcome.FAILED, Outcome.REMOVED]
        assert await kb.list_documents() == []


@pytest.mark.parametrize("bad", ["", "   ", 5, b"acme"])
def test_a_tenant_must_be_a_non_empty_string(bad: object) -> None:
    with pytest.raises(ValueError, match=f"tenant must be a non-empty string or None, got {bad!r}"):
        tenant_scope(bad)  # type: ignore[arg-type]
    assert tenant_scope("acme") == {TENANT_KEY: "acme"} and tenant_scope(None) == {TENANT_KEY: None}


def test_document_ids_are_stable_across_versions() -> None:
    """Pinned: an id that changed would make every re-index a duplicate."""
    path = "/srv/docs/notes.txt"
    assert document_id_for(path) == "dd41bf10-892e-532b-963b-5e0829ff1a4a"
    assert document_id_for(path, tenant_scope(None)) == "dd41bf10-892e-532b-963b-5e0829ff1a4a"
    assert document_id_for(path, tenant_scope("Zürich")) == "422eff7a-b535-5a76-bdda-f88f52e8f71b"


@pytest.mark.parametrize("how", ["emptied", "gzipped", "binary"])
async def test_a_file_that_stops_holding_text_is_removed_with_the_reason(
    tmp_path: Path, store: QdrantStore, embedder: EmbeddingModelBase, how: str
) -> None:
    import gzip

    path = tmp_path / "birds"  # no extension: the type is sniffed from the content
    path.write_text(TEXT)
    registry, chunker = default_registry(), ApproxTokenChunker(128, 8)
    kb = kb_on(store, embedder, None)
    assert (await ingest_files(kb, [path], registry=registry, chunker=chunker)).results[
        0
    ].outcome is Outcome.INDEXED
    new = {"emptied": b"", "gzipped": gzip.compress(TEXT.encode()), "binary": bytes(range(256))}
    path.write_bytes(new[how])
    report = await ingest_files(kb, [path], registry=registry, chunker=chunker)
    skipped, removed = report.results
    assert (skipped.outcome, removed.outcome) == (Outcome.SKIPPED, Outcome.REMOVED)
    reason = {
        "emptied": "empty file",
        "gzipped": "compressed (gzip)",
        "binary": "an unknown file type is not supported",
    }[how]
    assert skipped.error is not None and skipped.error.startswith(reason)
    assert removed.error == f"old version removed: {skipped.error}"
    assert removed.document_id == document_id_for(path)
    assert await kb.list_documents() == []


async def test_a_scan_no_engine_can_read_is_skipped_saying_how_to_read_it(
    tmp_path: Path,
    store: QdrantStore,
    embedder: EmbeddingModelBase,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from archivist.errors import ScansUnreadError
    from factories import make_scanned_pdf

    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(make_scanned_pdf([["A scanned page."]]))
    report = await ingest_files(
        kb_on(store, embedder, None),
        [scan],
        registry=default_registry("auto"),
        chunker=ApproxTokenChunker(64, 8),
    )
    [result] = report.results
    assert result.outcome is Outcome.SKIPPED
    assert result.error is not None and "pip install 'archivist[ocr]'" in result.error
    assert not result.error.startswith("scan.pdf")  # the reason alone: the line names the file
    assert isinstance(result.cause, ScansUnreadError)


async def test_the_chunks_cut_while_a_file_is_read_are_reported_as_they_grow(
    tmp_path: Path,
    store: QdrantStore,
    embedder: EmbeddingModelBase,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from archivist.rag.knowledge import ingest

    monkeypatch.setattr(ingest, "READ_PROGRESS_EVERY", 4)
    path = tmp_path / "birds.txt"
    path.write_text(TEXT)
    seen: list[tuple[str, int]] = []
    report = await ingest_files(
        kb_on(store, embedder, None),
        [path],
        registry=default_registry(),
        chunker=ApproxTokenChunker(16, 0),
        on_read=lambda name, chunks: seen.append((name, chunks)),
    )
    [result] = report.results
    assert result.chunks >= 8
    assert seen == [(str(path), n) for n in range(4, result.chunks + 1, 4)]
