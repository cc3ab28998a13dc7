"""Regressions of issue 13 found by real use: tenant scope across writes and stale versions."""

import json
from pathlib import Path

import pytest
from cli_helpers import run


@pytest.fixture
def home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps tables at 80 columns when not a tty
    return home


def index(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code, out, err = run(capsys, "index", *argv, "--json")
    assert out, err
    return code, json.loads(out)


def ls(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    code, out, err = run(capsys, "ls", "--json", *argv)
    assert code == 0, err
    documents: list[dict[str, object]] = json.loads(out)
    return documents


def test_an_untenanted_run_never_takes_a_tenants_document(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tC"
    folder.mkdir()
    doc = folder / "initech.txt"
    doc.write_text("Initech TPS reports are due Monday.\n")
    assert index(capsys, str(folder), "--kb", "ten2", "--tenant", "initech")[1]["indexed"] == 1
    # Without --tenant the run works in the "no tenant" scope: a new document, not initech's.
    assert index(capsys, str(folder), "--kb", "ten2")[1]["indexed"] == 1
    doc.write_text(doc.read_text() + "more\n")
    assert index(capsys, str(folder), "--kb", "ten2")[1]["updated"] == 1
    [mine] = ls(capsys, "--kb", "ten2", "--tenant", "initech")
    [untenanted] = ls(capsys, "--kb", "ten2")
    assert mine["id"] != untenanted["id"]
    assert mine["chunks"] == 1 and untenanted["chunks"] == 1
    # rm PATH without --tenant removes only the untenanted copy
    code, _, err = run(capsys, "rm", str(doc), "--kb", "ten2")
    assert code == 0, err
    assert ls(capsys, "--kb", "ten2") == []
    assert [d["id"] for d in ls(capsys, "--kb", "ten2", "--tenant", "initech")] == [mine["id"]]
    # and initech still finds its own (old) text
    code, out, _ = run(
        capsys, "search", "TPS reports", "--kb", "ten2", "--tenant", "initech", "--json"
    )
    [hit] = json.loads(out)
    assert "more" not in hit["text"] and hit["document_id"] == mine["id"]
    # prune in one scope never deletes another scope's document
    doc.unlink()
    assert index(capsys, str(folder), "--kb", "ten2", "--prune")[1]["pruned"] == 0
    assert len(ls(capsys, "--kb", "ten2", "--tenant", "initech")) == 1
    assert (
        index(capsys, str(folder), "--kb", "ten2", "--prune", "--tenant", "initech")[1]["pruned"]
        == 1
    )


@pytest.mark.parametrize("how", ["empty", "unparseable"])
def test_a_file_that_no_longer_parses_leaves_the_index(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    folder = tmp_path / "re"
    folder.mkdir()
    secret = folder / ("secret.txt" if how == "empty" else "secret.pdf")
    if how == "empty":
        secret.write_text("The vault password is swordfish-42.\n")
    else:
        from reportlab.pdfgen import canvas

        pdf = canvas.Canvas(str(secret))
        pdf.drawString(72, 720, "The vault password is swordfish-42.")
        pdf.save()
    assert index(capsys, str(folder), "--kb", "re")[1]["indexed"] == 1
    if how == "empty":
        secret.write_text("")
    else:
        secret.write_bytes(b"%PDF-1.4 truncated garbage")
    code, summary = index(capsys, str(folder), "--kb", "re", "--prune", "--keep-stale")
    assert summary["removed"] == 0
    code, out, _ = run(capsys, "search", "vault password", "--kb", "re", "--json")
    assert "swordfish" in json.loads(out)[0]["text"]  # kept, as asked
    code, summary = index(capsys, str(folder), "--kb", "re", "--prune")
    assert summary["removed"] == 1
    assert code == (0 if how == "empty" else 1)
    assert ls(capsys, "--kb", "re") == []
    code, out, err = run(capsys, "search", "vault password", "--kb", "re", "--json")
    assert "swordfish" not in out and "is empty" in err


def test_unsupported_and_compressed_files_are_skipped_with_a_reason(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gzip

    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "notes.txt").write_text("Plain notes about llamas.\n")
    (folder / "notes.txt.gz").write_bytes(gzip.compress(b"compressed notes"))
    (folder / "movie.mkv").write_bytes(b"\x1a\x45\xdf\xa3" + bytes(200))
    code, summary = index(capsys, str(folder))
    assert code == 0
    assert summary["indexed"] == 1 and summary["skipped"] == 2 and summary["failed"] == 0
    reasons = {Path(str(s["path"])).name: s["reason"] for s in summary["skipped_files"]}  # type: ignore[attr-defined]
    assert set(reasons) == {"notes.txt.gz", "movie.mkv"}
    assert all("not supported" in str(r) for r in reasons.values())
