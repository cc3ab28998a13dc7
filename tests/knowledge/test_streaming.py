"""Streaming parse → chunk → write gives exactly the chunks of the list path, and a stream
cut short leaves the old version whole."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kb_helpers import CountingModel

from archivist.embedding import EmbeddingModelBase
from archivist.message import TextBlock
from archivist.rag import (
    ApproxTokenChunker,
    Chunk,
    ChunkerBase,
    KnowledgeBase,
    NewDocument,
    PDFParser,
    Section,
    TextParser,
    default_registry,
)
from archivist.rag.chunker import EstimatedTokenizer, TokenChunker
from archivist.rag.knowledge.ingest import Outcome, ingest_files
from archivist.rag.parser import text as text_module
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.embedding import HashEmbeddingModel
from factories import make_pdf

_TEXT = "\n\n".join(
    f"Paragraph {i}: the façade of the old ✓ library holds {i * 7} volumes. "
    + ("数据库索引与检索。" * (i % 3))
    + " ".join(f"word{i}x{j}" for j in range(i % 40))
    + ("Supercalifragilisticexpialidocious" * (i % 5))
    for i in range(60)
)


def _shape(chunks: list[Chunk]) -> list[tuple[str, int, int]]:
    return [
        (
            c.content.text if isinstance(c.content, TextBlock) else "<data>",
            c.chunk_index,
            c.total_chunks,
        )
        for c in chunks
    ]


async def _streamed(chunker: ChunkerBase, sections: AsyncIterator[Section]) -> list[Chunk]:
    chunks = [chunk async for chunk in chunker.chunk_stream(sections)]
    assert all(c.total_chunks == 0 for c in chunks)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        chunk.total_chunks = len(chunks)
    return chunks


@pytest.mark.parametrize("block", [7, 257, 4096])
@pytest.mark.parametrize("overlap", [0, 16])
async def test_text_streamed_in_blocks_chunks_like_the_whole_text(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: EmbeddingModelBase,
    block: int,
    overlap: int,
) -> None:
    path = tmp_path / "big.txt"
    path.write_text(_TEXT, encoding="utf-8")
    monkeypatch.setattr(text_module, "STREAM_FROM", 0)
    monkeypatch.setattr(text_module, "STREAM_BLOCK", block)
    parser = TextParser()
    sections = [s async for s in parser.stream_sections(str(path), "big.txt")]
    assert len(sections) > 1 and all(s.continued for s in sections[1:])  # really in blocks
    for tokenizer in (embedder.chunk_tokenizer(), EstimatedTokenizer(64)):
        chunker = TokenChunker(tokenizer, 48, overlap)
        whole = await chunker.chunk(await parser.parse(str(path), "big.txt"))
        streamed = await _streamed(chunker, parser.stream_sections(str(path), "big.txt"))
        assert len(whole) > 20
        assert _shape(streamed) == _shape(whole)


async def test_a_bom_and_a_legacy_encoding_stream_like_they_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_module, "STREAM_FROM", 0)
    monkeypatch.setattr(text_module, "STREAM_BLOCK", 101)
    text = "Café crème, naïve façade, élève über Straße. " * 400
    cases = {
        "utf16.txt": "\ufeff".encode("utf-16-le") + text.encode("utf-16-le"),
        "latin1.txt": text.encode("cp1252"),
    }
    chunker = TokenChunker(EstimatedTokenizer(40), overlap=5)
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        whole = await chunker.chunk(await TextParser().parse(str(path), name))
        streamed = await _streamed(chunker, TextParser().stream_sections(str(path), name))
        assert _shape(streamed) == _shape(whole), name


async def test_blank_or_binary_streamed_files_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_module, "STREAM_FROM", 0)
    blank = tmp_path / "blank.txt"
    blank.write_text(" \n" * 1000)
    with pytest.raises(ValueError, match="blank.txt: the file holds no text"):
        [s async for s in TextParser().stream_sections(str(blank), "blank.txt")]
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"text\x00" * 100)
    with pytest.raises(ValueError, match="nul.txt: .*NUL"):
        [s async for s in TextParser().stream_sections(str(nul), "nul.txt")]


async def test_default_chunk_stream_joins_continued_sections() -> None:
    chunker = ApproxTokenChunker(chunk_size=20, overlap=4)
    whole = await chunker.chunk([Section(content=TextBlock(text=_TEXT), source="t")])

    async def pieces() -> AsyncIterator[Section]:
        for start in range(0, len(_TEXT), 333):
            text = _TEXT[start : start + 333]
            yield Section(content=TextBlock(text=text), source="t", continued=start > 0)

    assert _shape(await _streamed(chunker, pieces())) == _shape(whole)


async def test_pdf_streams_page_by_page_like_it_parses(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(make_pdf([f"Page {n} about topic {n}." for n in range(1, 30)] + [""]))
    parser = PDFParser()
    streamed = [s async for s in parser.stream_sections(str(path), "book.pdf")]
    parsed = await parser.parse(str(path), "book.pdf")
    assert [(s.content.text, s.metadata) for s in streamed] == [  # type: ignore[union-attr]
        (s.content.text, s.metadata)  # type: ignore[union-attr]
        for s in parsed
    ]
    assert [s.metadata["page"] for s in streamed] == list(range(1, 30))
    empty = tmp_path / "scan.pdf"
    empty.write_bytes(make_pdf([""]))
    with pytest.raises(ValueError, match="scan.pdf: the PDF has no extractable text"):
        [s async for s in parser.stream_sections(str(empty), "scan.pdf")]


async def test_ingest_stores_a_streamed_file_exactly_as_the_list_path_chunks_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: EmbeddingModelBase,
    hash_model: HashEmbeddingModel,
    store: QdrantStore,
) -> None:
    monkeypatch.setattr(text_module, "STREAM_FROM", 0)
    monkeypatch.setattr(text_module, "STREAM_BLOCK", 999)
    path = tmp_path / "big.txt"
    path.write_text(_TEXT)
    chunker = TokenChunker(embedder.chunk_tokenizer(), 64, 8)
    expected = await chunker.chunk(await TextParser().parse(str(path), "big.txt"))
    counting = CountingModel(hash_model)  # chunks by the real tokenizer, vectors by hashing
    kb = KnowledgeBase("kb", "d", counting, store, "c", write_batch_size=16)
    report = await ingest_files(kb, [path], registry=default_registry(), chunker=chunker)
    assert [r.outcome for r in report.results] == [Outcome.INDEXED]
    assert report.results[0].chunks == len(expected) > 16
    assert max(len(inputs) for inputs, _ in counting.calls) <= 16
    stored = await kb.list_chunks(report.results[0].document_id or "", limit=10_000)
    assert _shape(stored) == _shape(expected)
    assert (await kb.verify()).ok


class _FailAfter(CountingModel):
    """Fails on the n-th embedding call, after earlier batches were written."""

    def __init__(self, inner: EmbeddingModelBase, fail_on_call: int) -> None:
        super().__init__(inner)
        self.fail_on_call = fail_on_call

    async def __call__(self, inputs, input_type="document"):  # type: ignore[no-untyped-def,override]
        if len(self.calls) + 1 == self.fail_on_call:
            self.calls.append((list(inputs), input_type))
            raise OSError("embedding service went away mid-stream")
        return await super().__call__(inputs, input_type)


async def test_a_stream_cut_short_leaves_the_old_version_whole(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: EmbeddingModelBase,
    hash_model: HashEmbeddingModel,
    store: QdrantStore,
) -> None:
    monkeypatch.setattr(text_module, "STREAM_FROM", 0)
    path = tmp_path / "big.txt"
    path.write_text(_TEXT)
    chunker = TokenChunker(embedder.chunk_tokenizer(), 64, 8)
    kb = KnowledgeBase("kb", "d", hash_model, store, "c", write_batch_size=16)
    first = await ingest_files(kb, [path], registry=default_registry(), chunker=chunker)
    document_id = first.results[0].document_id or ""
    old = _shape(await kb.list_chunks(document_id, limit=10_000))
    path.write_text(_TEXT.replace("volumes", "books"))
    failing = KnowledgeBase("kb", "d", _FailAfter(hash_model, 3), store, "c", write_batch_size=16)
    second = await ingest_files(failing, [path], registry=default_registry(), chunker=chunker)
    assert second.results[0].outcome is Outcome.FAILED
    assert "mid-stream" in (second.results[0].error or "")
    assert _shape(await kb.list_chunks(document_id, limit=10_000)) == old
    assert (await kb.verify()).ok


async def test_a_stream_whose_count_is_wrong_writes_nothing_new(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = KnowledgeBase("kb", "d", embedder, store, "c", write_batch_size=2)
    await kb.insert_document([_chunk("old", 0, 1)], document_id="doc")

    async def short() -> AsyncIterator[Chunk]:
        for index in range(3):
            yield _chunk(f"new {index}", index, 5)

    async def misnumbered() -> AsyncIterator[Chunk]:
        yield _chunk("new 0", 0, 2)
        yield _chunk("new 2", 2, 2)

    with pytest.raises(ValueError, match="ended after 3 chunks but said total_chunks=5"):
        await kb.insert_documents([NewDocument(short(), "doc")])
    with pytest.raises(ValueError, match="numbered 0..N-1"):
        await kb.insert_document(misnumbered(), "doc")
    assert _shape(await kb.list_chunks("doc")) == [("old", 0, 1)]
    assert (await kb.verify()).ok


def _chunk(text: str, index: int, total: int) -> Chunk:
    return Chunk(content=TextBlock(text=text), source="s", chunk_index=index, total_chunks=total)


def _texts(chunks: list[Chunk]) -> list[tuple[int, int, str]]:
    return [
        (c.chunk_index, c.total_chunks, c.content.text if isinstance(c.content, TextBlock) else "")
        for c in chunks
    ]


async def test_a_listed_and_a_streamed_file_leave_out_pictures_alike(
    embedder: EmbeddingModelBase, store: QdrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    """One DataBlock rule for both paths of `ingest_files`: a text-only model's pictures are
    left out before numbering and reported once, whether the file is written as a list or
    (more chunks than a batch) as a stream."""
    deck = Path(__file__).resolve().parents[2] / "samples" / "archivist-architecture.pptx"
    stored: list[list[tuple[int, int, str]]] = []
    reported: list[list[int]] = []
    for collection, batch in (("listed", 64), ("streamed", 2)):
        kb = KnowledgeBase("kb", "d", embedder, store, collection, write_batch_size=batch)
        caplog.clear()
        with caplog.at_level("WARNING", logger="archivist.rag.knowledge"):
            report = await ingest_files(
                kb, [deck], registry=default_registry(), chunker=ApproxTokenChunker(64, 8)
            )
        [result] = report.results
        assert result.outcome is Outcome.INDEXED, result
        chunks = await kb.list_chunks(result.document_id or "", limit=1000)
        assert result.chunks == len(chunks)
        stored.append(_texts(chunks))
        reported.append([getattr(r, "skipped_data_blocks", 0) for r in caplog.records])
        assert (await kb.verify()).ok
    assert stored[0] == stored[1]
    assert len(stored[0]) > 2  # the streamed run did stream
    assert [i for i, _, _ in stored[0]] == list(range(len(stored[0])))
    assert reported[0] == reported[1] == [1]  # the deck's one picture


async def test_lists_and_streams_are_held_to_one_numbering_rule(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = KnowledgeBase("kb", "d", embedder, store, "c")
    bad_numberings = [
        [(0, 3), (2, 3), (1, 3)],  # out of order
        [(0, 2), (0, 2)],  # an index twice
        [(0, 2), (1, 3)],  # two totals
        [(0, 3), (1, 3)],  # fewer than said
        [(1, 2), (2, 2)],  # not from 0
    ]
    for numbering in bad_numberings:
        chunks = [_chunk(f"part {i}", i, total) for i, total in numbering]

        async def stream(chunks: list[Chunk] = chunks) -> AsyncIterator[Chunk]:
            for chunk in chunks:
                yield chunk

        with pytest.raises(ValueError, match="numbered 0..N-1 in order") as listed:
            await kb.insert_document(chunks, "doc")
        with pytest.raises(ValueError) as streamed:
            await kb.insert_document(stream(), "doc")
        assert str(listed.value) == str(streamed.value), numbering
    assert not await kb.list_documents()
