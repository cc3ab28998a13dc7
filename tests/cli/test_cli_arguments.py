"""The command line takes options only as spelled: an abbreviation is an error, never a
different option (`--reb` must not rebuild a knowledge base), and a misspelt command, option
or choice is answered with the closest one. What it prints fits the terminal."""

from __future__ import annotations

import argparse
import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import run

from archivist.cli import confirm
from archivist.cli.main import EXIT_DATA, EXIT_USAGE, build_parser
from archivist.cli.output import display_path
from archivist.cli.search_command import hit_header
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorSearchResult

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_parser_accepts_an_abbreviated_option() -> None:
    parsers = list(_parsers(build_parser()))
    assert len(parsers) > 15  # every command and the keys actions
    assert [p.prog for p in parsers if p.allow_abbrev] == []


@pytest.fixture
def indexed(home: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = home.parent / "docs"
    shutil.copytree(SAMPLES, folder)
    code, _, _ = run(capsys, "index", str(folder))
    assert code == 0
    return folder


@pytest.mark.parametrize(
    ("typed", "meant"), [("--reb", "--rebuild"), ("--prun", "--prune"), ("--rebuil", "--rebuild")]
)
def test_an_abbreviated_option_is_refused_and_changes_nothing(
    indexed: Path, capsys: pytest.CaptureFixture[str], typed: str, meant: str
) -> None:
    _, before, _ = run(capsys, "ls")
    (indexed / "archivist-overview.md").unlink()  # what --prune would remove
    code, _, err = run(capsys, "index", str(indexed), typed)
    assert code == EXIT_USAGE
    assert f"unrecognized arguments: {typed} (did you mean {meant}?)" in err
    _, after, _ = run(capsys, "ls")
    assert after == before and "archivist-overview.md" in after


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["serach", "x"], "invalid choice: 'serach'; did you mean 'search'?"),
        (["search", "x", "--mode", "hybird"], "invalid choice: 'hybird'; did you mean 'hybrid'?"),
        (["keys", "creat"], "invalid choice: 'creat'; did you mean 'create'?"),
        (["search", "x", "--max-per-doc", "1"], "(did you mean --max-per-document?)"),
        (["kbs", "--jsn"], "(did you mean --json?)"),
    ],
)
def test_a_misspelling_names_the_closest_command_option_or_choice(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == EXIT_USAGE
    assert expected in err
    assert "query that starts with '-'" not in err  # a misspelt option, not a dashed query


def test_a_dashed_query_still_gets_its_hint(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "search", "-x")
    assert code == EXIT_USAGE
    assert "archivist search -- --flag" in err and "did you mean" not in err


def test_removing_an_unknown_document_is_a_document_error(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "rm", "nosuchdoc")
    assert code == EXIT_DATA
    assert err.strip() == "archivist: error: no document 'nosuchdoc' in knowledge base 'default'"


def _hit(path: str, headings: list[str]) -> VectorSearchResult:
    chunk = Chunk(
        content=TextBlock(text="text"),
        source=Path(path).name,
        chunk_index=16,
        total_chunks=20,
        metadata={"path": path, "heading_path": headings},
    )
    return VectorSearchResult(score=0.5, document_id="d", chunk=chunk, relevance=0.51)


def test_a_hit_header_fits_the_width_and_keeps_the_path_whole(home: Path) -> None:
    headings = ["Archivist", "Python quickstart (the seed's flow)", "Steering and trusting search"]
    hit = _hit(str(home / "docs" / "README.md"), headings)
    wide = hit_header(1, hit, 200)
    assert " > ".join(headings) in wide and len(wide) <= 200
    narrow = hit_header(1, hit, 80)
    assert len(narrow) <= 80
    assert narrow.startswith(f"[1]  relevance 0.51  {display_path(hit.chunk.metadata['path'])}  ")
    assert narrow.endswith("  chunk 16") and "…" in narrow
    deep = _hit(str(home / ("very-long-folder-name/" * 4 + "notes.md")), headings)
    header = hit_header(1, deep, 80)
    assert "very-long-folder-name/" * 4 + "notes.md" in header  # the path is never cut
    assert header.endswith("  chunk 16")


def test_rebuild_without_a_terminal_needs_yes_and_changes_nothing(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, before, _ = run(capsys, "ls")
    code, _, err = run(capsys, "index", str(indexed / "archivist-overview.md"), "--rebuild")
    assert code == EXIT_USAGE
    assert "--rebuild empties knowledge base 'default'" in err and "pass --yes" in err
    assert run(capsys, "ls")[1] == before
    code, _, _ = run(capsys, "index", str(indexed / "archivist-overview.md"), "--rebuild", "-y")
    assert code == 0
    _, after, _ = run(capsys, "ls")
    assert "archivist-overview.md" in after and "archivist-guide.pdf" not in after


@pytest.mark.parametrize(("answer", "rebuilt"), [("y\n", True), ("n\n", False), ("", False)])
def test_rebuild_on_a_terminal_asks_first(
    indexed: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    rebuilt: bool,
) -> None:
    monkeypatch.setattr(confirm, "can_ask", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    code, _, err = run(capsys, "index", str(indexed / "archivist-overview.md"), "--rebuild")
    assert "Continue? [y/N]" in err
    assert (code == 0) is rebuilt
    _, listed, _ = run(capsys, "ls")
    assert ("archivist-guide.pdf" not in listed) is rebuilt  # only the rebuilt file is left
    if not rebuilt:
        assert "nothing was changed" in err


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["search", "--topk", "3", "question", "--kb", "x"], "did you mean -k/--top-k?"),
        (["index", ".", "--rebuid"], "did you mean --rebuild?"),
        (["kbs", "rm", "x", "--ys"], "did you mean -y/--yes?"),
    ],
)
def test_a_misspelt_option_is_answered_with_the_commands_usage(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], meant: str
) -> None:
    code, out, err = run(capsys, *argv)
    command = " ".join(argv[:2] if argv[0] == "kbs" else argv[:1])
    assert code == EXIT_USAGE and out == ""
    assert err.startswith(f"usage: archivist {command} [-h]"), err
    assert "usage: archivist [-h]" not in err  # not the top-level usage
    [error] = [line for line in err.splitlines() if "error:" in line]
    assert error.startswith(f"archivist {command}: error: unrecognized arguments: ")
    assert error.endswith(f"({meant})")
    assert not (home / "store").exists()  # nothing ran


@pytest.mark.parametrize("command", ["search", "ask"])
def test_a_query_of_words_without_quotes_is_told_to_quote_them(
    home: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, _, err = run(capsys, command, "how", "tenants", "work")
    assert code == EXIT_USAGE
    assert err.startswith(f"usage: archivist {command} ")
    assert f"archivist {command}: error: unrecognized arguments: tenants work (a " in err
    assert f'goes in quotes: archivist {command} "how' in err
    code, _, err = run(capsys, command)
    missing = "search needs a query, e.g." if command == "search" else "required: QUESTION"
    assert code == EXIT_USAGE and missing in err
