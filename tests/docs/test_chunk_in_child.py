"""A file parsed and chunked in a child process gives the chunks it gives in process, and the
child's failures (a parser's error, a crash, a library printing) stay the file's own."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from child_parsers import (
    ClaimsThenHogs,
    Crashes,
    Hogs,
    Prints,
    RaisesUnpicklable,
    Slow,
    Spins,
    WhoParses,
)

from archivist.embedding import LocalEmbeddingModel
from archivist.errors import DocumentParseError
from archivist.rag import ApproxTokenChunker, KnowledgeBase, QdrantStore, default_registry
from archivist.rag.chunker import chunker_for
from archivist.rag.chunker.base import ChunkerBase
from archivist.rag.chunker.child_process import (
    ChildLimits,
    child_processes_available,
    chunk_file_in_child,
)
from archivist.rag.document import Chunk
from archivist.rag.knowledge.ingest import Outcome, ingest_files
from archivist.rag.parser.base import ParserBase
from archivist.service.retrieval.offload import OffloadedChunker
from factories import make_docx, make_docx_bomb, make_pdf, make_scanned_pdf

pytestmark = pytest.mark.skipif(not child_processes_available(), reason="POSIX only")

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def child_imports_this_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child unpickles the parsers of `child_parsers` by name."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(HERE), path) if p))


def plain(chunks: list[Chunk]) -> list[tuple[str, str, int, dict[str, object]]]:
    """What a chunk says (its blocks' ids and times are new in every run)."""
    return [
        (c.content.text if hasattr(c.content, "text") else "", c.source, c.chunk_index, c.metadata)
        for c in chunks
    ]


async def in_child(
    chunker: ChunkerBase, parser: ParserBase, path: Path, niceness: int = 0
) -> list[Chunk]:
    return [
        c
        async for c in chunk_file_in_child(chunker, parser, str(path), path.name, niceness=niceness)
    ]


@pytest.fixture(scope="module")
def token_chunker() -> ChunkerBase:
    return chunker_for(LocalEmbeddingModel().chunk_tokenizer(), 120, 16)


async def test_real_files_give_the_same_chunks_as_in_process(
    tmp_path: Path, token_chunker: ChunkerBase
) -> None:
    registry = default_registry()
    files = {
        "notes.md": "# Leases\n\n" + "A replica renews its lease every second. " * 80 + "\n\n"
        "## 租约\n\n" + "副本每秒续约一次。" * 60,
        "report.pdf": make_pdf(["Invoices are kept for seven years. " * 30, "Page two. " * 40]),
        "memo.docx": make_docx([("h1", "Minutes"), ("p", "Quorum was met. " * 60)]),
    }
    for name, body in files.items():
        path = tmp_path / name
        path.write_bytes(body.encode() if isinstance(body, str) else body)
        parser = registry.parser_for_path(path)
        here = [c async for c in token_chunker.chunk_file(parser, str(path), name)]
        assert len(here) > 2, name
        assert plain(await in_child(token_chunker, parser, path)) == plain(here), name


async def test_the_file_is_parsed_in_another_process_at_a_lower_priority(tmp_path: Path) -> None:
    path = tmp_path / "who.txt"
    path.write_text("body")
    (chunk,) = await in_child(ApproxTokenChunker(), WhoParses(), path, niceness=5)
    words = chunk.content.text.split()  # type: ignore[union-attr]
    assert words[0] == "pid" and int(words[1]) != os.getpid()
    if os.uname().sysname == "Linux":  # only Linux lowers a thread's priority
        assert int(words[3]) == min(os.getpriority(os.PRIO_PROCESS, 0) + 5, 19)


async def test_a_parser_error_comes_through_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cut.pdf"
    path.write_bytes(make_pdf(["Some text on a page."])[:200])
    parser = default_registry().parser_for_path(path)
    with pytest.raises(ValueError) as here:
        await token_chunker_free_run(parser, path)
    with pytest.raises(ValueError) as there:
        await in_child(ApproxTokenChunker(), parser, path)
    assert type(there.value) is type(here.value)
    assert str(there.value) == str(here.value) and "cut.pdf" in str(there.value)


async def token_chunker_free_run(parser: ParserBase, path: Path) -> list[Chunk]:
    return [c async for c in ApproxTokenChunker().chunk_file(parser, str(path), path.name)]


async def test_an_error_that_cannot_be_pickled_arrives_in_words_naming_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "odd.txt"
    path.write_text("anything")
    with pytest.raises(DocumentParseError, match="_Unpicklable: the library's own words") as e:
        await in_child(ApproxTokenChunker(), RaisesUnpicklable(), path)
    assert e.value.filename == "odd.txt"


async def test_a_crashing_parser_fails_its_file_and_leaves_the_caller_running(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hostile.txt"
    path.write_text("anything")
    with pytest.raises(DocumentParseError, match="killed by SIGKILL") as failed:
        await in_child(ApproxTokenChunker(), Crashes(), path)
    assert failed.value.filename == "hostile.txt"


async def test_what_a_library_prints_does_not_corrupt_the_chunks(tmp_path: Path) -> None:
    path = tmp_path / "chatty.txt"
    path.write_text("anything")
    chunks = await in_child(ApproxTokenChunker(), Prints(), path)
    assert [c.content.text for c in chunks] == ["printed but parsed"]  # type: ignore[union-attr]


async def test_stopping_early_ends_the_child(tmp_path: Path, token_chunker: ChunkerBase) -> None:
    path = tmp_path / "long.txt"
    path.write_text("x")
    pid_file = tmp_path / "pid"
    stream = chunk_file_in_child(token_chunker, Slow(str(pid_file)), str(path), path.name)
    first = await anext(stream)
    assert "section 0" in first.content.text  # type: ignore[union-attr]
    await stream.aclose()
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)


async def test_a_cancelled_caller_ends_the_child(
    tmp_path: Path, token_chunker: ChunkerBase
) -> None:
    path = tmp_path / "long.txt"
    path.write_text("x")
    pid_file = tmp_path / "pid"

    async def consume() -> None:
        async for _ in chunk_file_in_child(
            token_chunker, Slow(str(pid_file)), str(path), path.name
        ):
            pass

    task = asyncio.create_task(consume())
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_the_service_chunker_sends_only_large_files_to_a_child(tmp_path: Path) -> None:
    chunker = OffloadedChunker(ApproxTokenChunker(), process_bytes=1000)
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_text("short")
    large.write_text("long " * 400)

    async def parsed_by(path: Path) -> int:
        chunks = [c async for c in chunker.chunk_file(WhoParses(), str(path), path.name)]
        return int(chunks[0].content.text.split()[1])  # type: ignore[union-attr]

    assert await parsed_by(small) == os.getpid()
    assert await parsed_by(large) != os.getpid()


async def test_a_large_file_indexes_through_the_child(tmp_path: Path) -> None:
    path = tmp_path / "ledger.md"
    path.write_text("# Ledger\n\n" + "The orchard ledger counts apple trees. " * 300)
    model = LocalEmbeddingModel()
    chunker = OffloadedChunker(chunker_for(model.chunk_tokenizer(), 120, 16), process_bytes=0)
    async with QdrantStore(path=tmp_path / "store") as store:
        kb = KnowledgeBase("kb", "", model, store, "docs")
        report = await ingest_files(kb, [path], registry=default_registry(), chunker=chunker)
        (result,) = report.results
        assert result.outcome is Outcome.INDEXED and result.chunks > 2
        hits = await kb.search("orchard ledger apple trees", top_k=1)
        assert hits and "orchard ledger" in hits[0].chunk.content.text  # type: ignore[union-attr]


async def limited(parser: ParserBase, path: Path, limits: ChildLimits) -> list[Chunk]:
    stream = chunk_file_in_child(ApproxTokenChunker(), parser, str(path), path.name, limits=limits)
    return [c async for c in stream]


async def test_a_parse_past_the_memory_limit_fails_naming_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "greedy.txt"
    path.write_text("anything")
    with pytest.raises(DocumentParseError, match="more than the 256 MiB memory limit") as e:
        await limited(Hogs(), path, ChildLimits(memory_bytes=256 * 1024 * 1024))
    assert e.value.filename == "greedy.txt"


async def test_a_real_zip_bomb_document_fails_on_the_memory_limit_and_a_normal_one_passes(
    tmp_path: Path,
) -> None:
    """A 1 MB .docx within the archive limits whose XML takes over 600 MB to hold parsed; a
    normal document parses within the same limit."""
    limits = ChildLimits(memory_bytes=256 * 1024 * 1024)
    bomb, normal = tmp_path / "bomb.docx", tmp_path / "normal.docx"
    bomb.write_bytes(make_docx_bomb(60))
    normal.write_bytes(make_docx([("h1", "Harbour"), ("p", "Tolls are paid at the gate.")]))
    parser = default_registry().parser_for("x.docx")
    with pytest.raises(DocumentParseError, match="256 MiB memory limit") as e:
        await limited(parser, bomb, limits)
    assert e.value.filename == "bomb.docx"
    chunks = await limited(parser, normal, limits)
    assert "Tolls are paid" in "".join(c.content.text for c in chunks)  # type: ignore[union-attr]


async def test_ocr_gets_its_engines_memory_on_top_of_the_parse_limit(tmp_path: Path) -> None:
    """RapidOCR's models need more address space than the parse limit gives: the reserve
    above it lets a scan be read, and without the reserve the same file fails naming the
    limit."""
    pytest.importorskip("rapidocr_onnxruntime")
    from archivist.rag.parser import PDFParser
    from archivist.rag.parser.ocr import Ocr, RapidOcrEngine

    path = tmp_path / "scan.pdf"
    path.write_bytes(make_scanned_pdf([["The boiler is serviced every October."]]))
    parser = PDFParser(ocr=Ocr("rapidocr"))
    base = 512 * 1024 * 1024
    reserve = RapidOcrEngine.memory_mb * 1024 * 1024
    chunks = await limited(parser, path, ChildLimits(memory_bytes=base, ocr_memory_bytes=reserve))
    assert "boiler is serviced" in "".join(c.content.text for c in chunks)  # type: ignore[union-attr]
    with pytest.raises(DocumentParseError, match="512 MiB memory limit"):
        await limited(parser, path, ChildLimits(memory_bytes=base))


def test_the_child_reads_with_the_engine_its_parent_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parser crosses into the child pickled: "auto" resolved where no engine is found
    stays without one there, though the child could find one itself."""
    import pickle
    import sys

    from archivist.rag.parser import PDFParser
    from archivist.rag.parser.ocr import Ocr

    monkeypatch.setenv("PATH", str(tmp_path))
    with monkeypatch.context() as hidden:
        hidden.setitem(sys.modules, "rapidocr_onnxruntime", None)
        parser = PDFParser(ocr=Ocr("auto"))
        assert parser.ocr is not None and parser.ocr.engine is None
        sent = pickle.dumps(parser)
    received = pickle.loads(sent)
    assert received.ocr.engine is None
    assert "RapidOCR is not installed" in received.ocr.summary()


async def test_the_claimed_reserve_still_bounds_the_child_naming_both_limits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "greedy-scan.txt"
    path.write_text("anything")
    limits = ChildLimits(memory_bytes=256 * 1024**2, ocr_memory_bytes=256 * 1024**2)
    with pytest.raises(DocumentParseError) as e:
        await limited(ClaimsThenHogs(), path, limits)
    assert "more than the 512 MiB memory limit (256 MiB for parsing and 256 MiB for OCR)" in (
        str(e.value)
    )


def test_a_reserve_is_claimed_once_and_only_where_one_is_held() -> None:
    """In a fresh interpreter (the limits would bind this one)."""
    import subprocess
    import sys

    script = """
from archivist._util import address_space as a
print(a.current_limit(), a.claim_reserve())
a.hold(3 << 30, 1 << 30)
print(a.current_limit(), a.claim_reserve(), a.current_limit(), a.claim_reserve())
a.hold(3 << 30)
print(a.claim_reserve(), a.current_limit())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split("\n")[:3] == [
        "None False",
        f"{3 << 30} True {4 << 30} False",
        f"False {3 << 30}",
    ]


async def test_the_ocr_reserve_is_not_given_to_a_file_without_scans(tmp_path: Path) -> None:
    path = tmp_path / "greedy.txt"
    path.write_text("anything")
    limits = ChildLimits(memory_bytes=256 * 1024 * 1024, ocr_memory_bytes=8 * 1024**3)
    with pytest.raises(DocumentParseError, match="more than the 256 MiB memory limit") as e:
        await limited(Hogs(), path, limits)
    assert "for OCR" not in str(e.value)


async def test_a_parse_past_the_cpu_limit_fails_naming_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "endless.txt"
    path.write_text("anything")
    with pytest.raises(DocumentParseError, match="more than the 1 s CPU-time limit") as e:
        await limited(Spins(), path, ChildLimits(cpu_seconds=1))
    assert e.value.filename == "endless.txt"


async def test_a_parse_past_the_time_limit_fails_naming_it_and_ends_the_child(
    tmp_path: Path,
) -> None:
    path = tmp_path / "slow.txt"
    path.write_text("x")
    pid_file = tmp_path / "pid"
    with pytest.raises(DocumentParseError, match="longer than the 2 s time limit"):
        await limited(Slow(str(pid_file)), path, ChildLimits(wall_seconds=2))
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="wall_seconds"):
        ChildLimits(wall_seconds=0)
    with pytest.raises(ValueError, match="memory_bytes"):
        ChildLimits(memory_bytes=-1)
    with pytest.raises(ValueError, match="ocr_memory_bytes"):
        ChildLimits(ocr_memory_bytes=-1)


def test_the_memory_limit_is_named_with_the_ocr_reserve() -> None:
    limits = ChildLimits(memory_bytes=512 * 1024**2, ocr_memory_bytes=1536 * 1024**2)
    assert limits.memory_words(ocr_started=False) == "512 MiB memory limit"
    assert limits.memory_words(ocr_started=True) == (
        "2048 MiB memory limit (512 MiB for parsing and 1536 MiB for OCR)"
    )
    assert limits.memory_words() == "512 MiB memory limit (2048 MiB once OCR starts)"
    assert ChildLimits(memory_bytes=512 * 1024**2).memory_words() == "512 MiB memory limit"
