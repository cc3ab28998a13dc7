"""`archivist search` steered: filters by path, type, date and metadata, and bad values refused
naming the option."""

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from archivist.cli.main import main

FILES = {
    "guide/install.md": ("Install the archiver with the package manager, then run tar.", 2023),
    "guide/usage.md": ("Use tar to create archives; bzip2 compresses them further.", 2025),
    "notes/tar.txt": ("Notes on tar: extracting an archive keeps file permissions.", 2025),
    "notes/old.rst": ("Old notes about cpio archives and their formats.", 2020),
}


@pytest.fixture
def indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "100")
    folder = tmp_path / "docs"
    for name, (text, year) in FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{text}\n")
        stamp = datetime(year, 6, 1).timestamp()
        os.utime(path, (stamp, stamp))
    assert main(["index", str(folder), "--json"]) == 0
    capsys.readouterr()
    return folder


def found(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    code = main(["search", "tar archives", "--json", "-k", "10", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return sorted(hit["path"].split("/docs/")[1] for hit in json.loads(out))


def test_filters_narrow_the_search(indexed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert len(found(capsys)) == 4
    assert found(capsys, "--type", "md") == ["guide/install.md", "guide/usage.md"]
    assert found(capsys, "--type", "rst", "--type", "txt") == ["notes/old.rst", "notes/tar.txt"]
    assert found(capsys, "--path", "*/notes/*") == ["notes/old.rst", "notes/tar.txt"]
    assert found(capsys, "--path", "usage*") == ["guide/usage.md"]
    assert found(capsys, "--since", "2024-01-01") == ["guide/usage.md", "notes/tar.txt"]
    assert found(capsys, "--since", "2024-01-01", "--type", "md") == ["guide/usage.md"]
    assert found(capsys, "--where", "modified<2021-01-01") == ["notes/old.rst"]
    assert found(capsys, "--where", "lang=xx") == []


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--since", "yesterday"], "--since"),
        (["--type", "*.md"], "--type"),
        (["--path", ""], "--path"),
        (["--where", "lang"], "--where"),
        (["--where", "pages>=lots"], "--where"),
    ],
)
def test_bad_filter_values_name_the_option(
    indexed: Path, capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    try:
        code = main(["search", "tar", *argv])
    except SystemExit as exit_:  # argparse refuses a bad --since itself
        code = exit_.code  # type: ignore[assignment]
    _, err = capsys.readouterr()
    assert code == 2
    assert named in err and "Traceback" not in err


def test_context_shows_the_neighbouring_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    sections = [f"## Part {n}\n\nFiller sentence {n} about nothing much." for n in range(6)]
    sections[3] = "## Part 3\n\nThe --strip-components option drops leading path parts."
    sections[4] = "## Part 4\n\nIt takes a number: --strip-components=2 drops two."
    doc = tmp_path / "manual.md"
    doc.write_text("\n\n".join(sections))
    assert main(["index", str(doc), "--chunk-size", "24", "--overlap", "0", "--json"]) == 0
    capsys.readouterr()
    assert (
        main(["search", "--json", "-k", "1", "--context", "1", "--", "drops leading path parts"])
        == 0
    )
    (hit,) = json.loads(capsys.readouterr().out)
    context = hit["context"]
    assert context["first_chunk"] == hit["chunk_index"] - 1
    assert context["last_chunk"] == hit["chunk_index"] + 1
    assert "--strip-components=2" in context["text"]
    assert main(["search", "-k", "1", "--context", "1", "--", "drops leading path parts"]) == 0
    out = capsys.readouterr().out
    assert "(with " in out and "--strip-components=2" in out
    assert max(len(line) for line in out.splitlines() if line.startswith("    ")) <= 80
    with pytest.raises(SystemExit):
        main(["search", "x", "--context", "11"])
    assert "--context" in capsys.readouterr().err


def test_a_file_under_two_paths_is_one_hit_listing_the_other(
    indexed: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = indexed / "mirror" / "tar.txt"
    copy.parent.mkdir()
    copy.write_bytes((indexed / "notes" / "tar.txt").read_bytes())
    assert main(["index", str(indexed), "--json"]) == 0
    capsys.readouterr()
    monkeypatch.chdir(indexed)
    assert main(["search", "extracting keeps permissions", "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("Notes on tar") == 1
    assert "also in mirror/tar.txt  chunk 0" in out or "also in notes/tar.txt  chunk 0" in out
    assert main(["search", "extracting keeps permissions", "-k", "2", "--json"]) == 0
    [first, second] = json.loads(capsys.readouterr().out)
    paths = {first["path"], first["also_in"][0]["path"]}
    assert paths == {str(copy.resolve()), str((indexed / "notes" / "tar.txt").resolve())}
    assert second["text"] != first["text"]
    assert main(["search", "extracting keeps permissions", "-k", "2", "--all-copies"]) == 0
    assert capsys.readouterr().out.count("Notes on tar") == 2
