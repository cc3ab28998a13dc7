"""Every malformed input of the generated corpus (`malformed.py`) gets the documented error.

Each case is parsed through `default_registry()` from a file in `tmp_path` and from bytes,
and must raise the case's exception type (a subclass is fine) with the file name in the
message, or, for damage a parser may repair, return exactly the original text. Never a
hang, a crash or a silent empty result:

- in-process cases run under `asyncio.wait_for(..., CASE_TIMEOUT)`;
- PDFium cases and zip bombs run in a worker subprocess under an address-space limit
  (`WORKER_MEMORY`) and a time limit, so a segfault, an out-of-memory kill or a hang is
  pinned to its case and fails it, instead of taking the test run down.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from malformed import (
    OBJSTM_TEXT,
    Case,
    corpus,
    describe,
    objstm_pdf,
    parse_case,
    real_pptx,
)

from archivist.message import TextBlock
from archivist.rag.chunker import ApproxTokenChunker
from archivist.rag.document import Section
from archivist.rag.parser import (
    ArchiveTooLargeError,
    ImageParser,
    PDFParser,
    PPTParser,
    TextParser,
    default_registry,
)

CASE_TIMEOUT = 30.0  # seconds per parse; generous, a hang is what it catches
WORKER_TIMEOUT = 300.0  # seconds for one worker run over all isolated cases
WORKER_MEMORY = 2 * 1024**3  # address-space limit of the worker, bytes

CASES = corpus()
IN_PROCESS = [c for c in CASES if not c.isolate]
ISOLATED = [c for c in CASES if c.isolate]
MODES = ["path", "bytes"]


def test_corpus_is_large_and_varied() -> None:
    assert len(CASES) >= 200
    categories = {c.category for c in CASES}
    assert len(categories) >= 15
    assert all(
        any(c.category == k and c.expected is not None for c in CASES)
        for k in (
            "pdf-truncated",
            "pdf-encrypted",
            "pdf-xref",
            "pptx-zip-bomb",
            "empty",
            "image-bomb",
            "text-nul",
            "lying-extension",
        )
    )


def _assert_outcome(case: Case, outcome: dict[str, Any]) -> None:
    if case.expected is None:
        assert outcome["error"] is None, f"{case.id}: {outcome.get('message')}"
        assert outcome["texts"] == list(case.texts)
        return
    assert outcome["error"] is not None, f"{case.id}: parsed to {outcome['texts']!r}"
    assert case.expected.__name__ in outcome["mro"], (
        f"{case.id}: expected {case.expected.__name__}, got {outcome['error']}: "
        f"{outcome['message']}\n{outcome.get('trace', '')}"
    )
    assert case.filename in outcome["message"], outcome["message"]


# --------------------------------------------------------------------------- in process


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", IN_PROCESS, ids=lambda c: c.id)
async def test_malformed_input(case: Case, mode: str, tmp_path: Path) -> None:
    path = tmp_path / case.filename
    path.write_bytes(case.data)
    try:
        sections = await asyncio.wait_for(parse_case(case, path, mode), CASE_TIMEOUT)
    except TimeoutError:
        pytest.fail(f"{case.id}: no answer within {CASE_TIMEOUT}s")
    except Exception as exc:
        outcome = {
            "error": type(exc).__name__,
            "mro": [k.__name__ for k in type(exc).__mro__],
            "message": str(exc),
        }
    else:
        outcome = {"error": None, "texts": describe(sections)}
    _assert_outcome(case, outcome)


# ----------------------------------------------------------------------- in a subprocess


def _run_worker(ids: list[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """Run the isolated cases in worker processes; a crash or hang is charged to the case
    that was running, and a fresh worker goes on with the rest."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    pending = list(ids)
    script = str(Path(__file__).with_name("malformed.py"))
    while pending:
        try:
            proc = subprocess.run(
                [sys.executable, script, str(WORKER_MEMORY), *pending],
                capture_output=True,
                text=True,
                timeout=WORKER_TIMEOUT,
                check=False,
            )
            stdout, returncode, stderr = proc.stdout, proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout or b""
            stdout = out.decode() if isinstance(out, bytes) else out
            returncode, stderr = None, "timed out"
        current: tuple[str, str] | None = None
        for line in stdout.splitlines():
            record = json.loads(line)
            if "start" in record:
                current = (record["start"], record["mode"])
            else:
                results[(record["id"], record["mode"])] = record
                current = None
        done = {cid for cid, _ in results}
        if current is not None:  # the worker died inside this case
            results[current] = {
                "error": "WorkerDied",
                "mro": ["WorkerDied"],
                "texts": None,
                "message": f"worker exit {returncode} while parsing: {stderr[-800:]}",
            }
            done.add(current[0])
        elif returncode != 0:
            pytest.fail(f"worker failed outside any case (exit {returncode}): {stderr[-2000:]}")
        pending = [cid for cid in pending if cid not in done]
    return results


@pytest.fixture(scope="module")
def isolated_results() -> dict[tuple[str, str], dict[str, Any]]:
    return _run_worker([c.id for c in ISOLATED])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ISOLATED, ids=lambda c: c.id)
def test_malformed_input_isolated(
    case: Case, mode: str, isolated_results: dict[tuple[str, str], dict[str, Any]]
) -> None:
    outcome = isolated_results.get((case.id, mode))
    assert outcome is not None, f"{case.id}/{mode}: the worker never reported it"
    _assert_outcome(case, outcome)


# ----------------------------------------------------------------------- targeted cases


@pytest.mark.parametrize(
    "parser", [PDFParser(), PPTParser(), ImageParser()], ids=lambda p: type(p).__name__
)
async def test_missing_path_is_file_not_found(parser: Any, tmp_path: Path) -> None:
    # (TextParser reads a str that names no file as the text itself, by contract.)
    missing = tmp_path / "gone" / "missing-file.bin"
    with pytest.raises(FileNotFoundError, match="missing-file.bin"):
        await parser.parse(str(missing), "missing-file.bin")


@pytest.mark.parametrize("name", ["missing.txt", "missing.pdf", "missing.pptx", "missing.png"])
def test_registry_missing_path_is_file_not_found(name: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=name):
        default_registry().parser_for_path(tmp_path / name)


async def test_objstm_builder_makes_a_readable_pdf() -> None:
    """The intact object-stream PDF parses, so its broken variants test real damage."""
    sections = await PDFParser().parse(objstm_pdf("ok"), "objstm.pdf")
    assert describe(sections) == [OBJSTM_TEXT]


async def test_zip_bomb_limits_are_configurable() -> None:
    deck = real_pptx()
    assert await PPTParser().parse(deck, "deck.pptx")
    with pytest.raises(ArchiveTooLargeError, match=r"deck\.pptx.*in total"):
        await PPTParser(max_total_size=10_000).parse(deck, "deck.pptx")
    with pytest.raises(ArchiveTooLargeError, match=r"deck\.pptx.*per part"):
        await PPTParser(max_part_size=1_000).parse(deck, "deck.pptx")
    with pytest.raises(ArchiveTooLargeError, match=r"deck\.pptx.*parts"):
        await PPTParser(max_parts=5).parse(deck, "deck.pptx")
    assert issubclass(ArchiveTooLargeError, ValueError)


async def test_text_str_with_lone_surrogate() -> None:
    with pytest.raises(ValueError, match=r"notes\.txt.*surrogate"):
        await TextParser().parse("fine text \ud800 then broken", "notes.txt")


# -------------------------------------------------------------------------------- chunker


async def test_chunker_rejects_lone_surrogate_naming_the_source() -> None:
    section = Section(content=TextBlock(text="ok \udcff bad"), source="weird.txt")
    with pytest.raises(ValueError, match=r"weird\.txt"):
        await ApproxTokenChunker(chunk_size=8, overlap=2).chunk([section])


@pytest.mark.parametrize(("chunk_size", "overlap"), [(0, 0), (-1, 0), (10, 10), (10, 11), (5, -1)])
def test_chunker_bad_parameters(chunk_size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        ApproxTokenChunker(chunk_size=chunk_size, overlap=overlap)


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \n", "\u3000\u00a0"])
async def test_chunker_drops_blank_sections(text: str) -> None:
    section = Section(content=TextBlock(text=text), source="blank.txt")
    assert await ApproxTokenChunker(chunk_size=4, overlap=1).chunk([section]) == []


async def test_chunker_nul_and_control_characters_pass_through() -> None:
    text = "a\x00b\x01c\x7f " * 200
    chunks = await ApproxTokenChunker(chunk_size=16, overlap=4).chunk(
        [Section(content=TextBlock(text=text), source="ctl.txt")]
    )
    assert chunks and all(len(c.content.text.encode()) <= 64 for c in chunks)


def _check_windows(text: str, pieces: list[str], budget_bytes: int) -> None:
    """Every piece fits, appears in `text` in order, and the pieces cover the text."""
    pos = 0
    for piece in pieces:
        assert 0 < len(piece.encode("utf-8")) <= budget_bytes
        found = text.find(piece, max(0, pos - budget_bytes))
        assert found >= 0
        assert found <= pos + 1, "a gap between consecutive windows"
        pos = max(pos, found + len(piece))
    assert pos >= len(text.rstrip())


@pytest.mark.heavy  # the size is the point; the ten-megabyte cases run in the fast set
async def test_hundred_megabyte_single_line(tmp_path: Path) -> None:
    """A valid 100 MB text with no line break: parses and chunks in bounded time."""
    # Numbered so that every window occurs once in the text and its place can be checked.
    unit = "archivist chunks one very long single line of text"
    count = 100 * 1024 * 1024 // (len(unit) + 10)
    text = "".join([f"{i:08d} {unit} " for i in range(count)])
    assert len(text) >= 100 * 1000 * 1000 and "\n" not in text
    path = tmp_path / "one-line.txt"
    path.write_text(text, encoding="utf-8")
    parser = default_registry().parser_for_path(path)
    sections = await asyncio.wait_for(parser.parse(str(path), "one-line.txt"), 120)
    assert len(sections) == 1 and sections[0].content.text == text
    chunker = ApproxTokenChunker(chunk_size=512, overlap=50)
    chunks = await asyncio.wait_for(chunker.chunk(sections), 120)
    del sections
    assert len(chunks) > 100 * 1024 * 1024 // 2048
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
    assert all(c.source == "one-line.txt" for c in chunks)
    _check_windows(text, [c.content.text for c in chunks], 512 * 4)


async def test_ten_megabyte_single_word() -> None:
    """No break point at all, multi-byte characters: cuts fall between characters."""
    text = "".join(f"é日🙂{i:07d}" for i in range(10 * 1024 * 1024 // 20))
    pieces = ApproxTokenChunker(chunk_size=100, overlap=10).split_text(text)
    _check_windows(text, pieces, 400)
