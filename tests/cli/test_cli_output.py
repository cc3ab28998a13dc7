"""What the command line prints: never a wrapped id or path, readable passages at 80 columns,
--json everywhere, one-line validation errors, and every skipped path with its reason."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run
from hypothesis import given
from hypothesis import strategies as st

from archivist.cli.output import display_width, wrap

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_ls_and_search_never_wrap_ids_or_paths_at_80_columns(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "a-rather-long-folder-name-for-projects" / "another-long-sub-folder-name"
    deep.mkdir(parents=True)
    shutil.copy(SAMPLES / "archivist-overview.md", deep / "archivist-overview-with-long-name.md")
    assert run(capsys, "index", str(tmp_path / "a-rather-long-folder-name-for-projects"))[0] == 0
    relative = str((deep / "archivist-overview-with-long-name.md").relative_to(tmp_path))
    code, out, _ = run(capsys, "ls")
    [row] = [line for line in out.splitlines() if relative in line]
    _, listed = run(capsys, "ls", "--json")[:2]
    [document] = json.loads(listed)
    assert row.startswith(document["id"])  # the full id and the whole path on one line
    assert document["path"] == str(deep / "archivist-overview-with-long-name.md")

    code, out, _ = run(capsys, "search", "incremental indexing content hash", "-k", "2")
    assert code == 0
    lines = out.splitlines()
    headers = [line for line in lines if line.startswith("[")]
    assert len(headers) == 2 and all(relative in h for h in headers)
    passage = [line for line in lines if line.startswith("    ")]
    assert passage and all(len(line) <= 80 for line in passage)
    _, hits_json, _ = run(
        capsys, "search", "incremental indexing content hash", "-k", "2", "--json"
    )
    words = " ".join(json.loads(hits_json)[0]["text"].split())
    block = lines[lines.index(headers[0]) + 1 : lines.index(headers[1])]
    assert " ".join(" ".join(block).split()) == words  # the whole passage, readable


def test_version_help_defaults_and_one_line_validation_errors(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("archivist ")
    code, out, _ = run(capsys, "search", "--help")
    assert "(default: 5)" in out
    code, out, _ = run(capsys, "--help")
    assert "exit codes:" in out and "130" in out
    md = str(SAMPLES / "archivist-overview.md")
    code, _, err = run(capsys, "index", md, "--chunk-size", "0")
    assert code == 2 and "--chunk-size: must be a whole number of 1 or more" in err
    assert "pydantic" not in err and "http" not in err
    code, _, err = run(capsys, "index", md, "--chunk-size", "64", "--overlap", "64")
    assert code == 2 and err.count("\n") == 1
    assert "--overlap: overlap (64) must be smaller than chunk_size (64)" in err
    code, _, err = run(capsys, "search", "")
    assert code == 2 and "must not be empty" in err
    code, _, err = run(capsys, "search", "   ", "--kb", "whatever")
    assert code == 2 and "must not be empty" in err


def test_json_on_every_command_and_kbs(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md = str(SAMPLES / "archivist-overview.md")
    assert run(capsys, "index", md, "--kb", "notes", "--json")[0] == 0
    code, out, _ = run(capsys, "kbs", "--json")
    [kb] = json.loads(out)
    assert (kb["name"], kb["chunk_size"], kb["overlap"], kb["documents"]) == ("notes", 254, 32, 1)
    assert kb["chunks"] >= 1 and kb["embedding_model"]
    code, out, _ = run(capsys, "kbs")
    assert "notes" in out and "254/32" in out
    for argv in (
        ["ls", "--kb", "notes"],
        ["search", "archivist", "--kb", "notes"],
        ["ask", "what is archivist", "--kb", "notes"],
        ["verify", "--kb", "notes"],
        ["repair", "--kb", "notes"],
        ["chunk", md],
        ["rm", md, "--kb", "notes"],
    ):
        code, out, err = run(capsys, *argv, "--json")
        assert code == 0, (argv, err)
        json.loads(out)


def test_every_skipped_path_is_reported_with_its_reason(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tree"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "note.txt").write_text("A note about owls.\n")
    (folder / "sub" / "loop").symlink_to(folder)
    (folder / "dangling.txt").symlink_to(folder / "gone.txt")
    code, out, _ = run(capsys, "index", str(folder), "--json")
    summary = json.loads(out)
    reasons = {Path(s["path"]).name: s["reason"] for s in summary["skipped_paths"]}
    assert reasons == {"loop": "symbolic link loop", "dangling.txt": "dangling symbolic link"}
    assert code == 0 and summary["indexed"] == 1
    code, _, err = run(capsys, "index", str(folder))
    assert "symbolic link loop" in err and "dangling symbolic link" in err


def test_an_unreadable_folder_is_reported(tmp_path: Path) -> None:
    """As root, run without the capabilities that read every folder, so it really is closed."""
    folder = tmp_path / "tree"
    (folder / "closed").mkdir(parents=True)
    (folder / "closed" / "secret.txt").write_text("hidden\n")
    (folder / "open.txt").write_text("An open note about herons.\n")
    (folder / "closed").chmod(0)
    drop = "-dac_override,-dac_read_search"
    prefix = (
        ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"] if os.geteuid() == 0 else []
    )
    env = {**os.environ, "ARCHIVIST_HOME": str(tmp_path / "home")}
    try:
        result = subprocess.run(
            [*prefix, sys.executable, "-m", "archivist", "index", str(folder), "--json"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
    finally:
        (folder / "closed").chmod(0o755)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    [skipped] = summary["skipped_paths"]
    assert skipped["path"].endswith("closed") and "unreadable folder" in skipped["reason"]
    assert summary["indexed"] == 1


@given(
    text=st.text(alphabet=st.sampled_from("ab cd 中文字。\n-"), max_size=300),
    width=st.integers(min_value=6, max_value=100),
)
def test_wrap_keeps_every_character_within_the_width(text: str, width: int) -> None:
    lines = wrap(text, width, "  ")
    assert all(display_width(line) <= width for line in lines)
    assert all(line.startswith("  ") for line in lines)
    assert "".join("".join(lines).split()) == "".join(text.split())


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `archivist ... | head` after head has exited
    try:
        done = subprocess.run(
            [sys.executable, "-m", "archivist", "kbs", "--store", str(tmp_path)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "ARCHIVIST_HOME": str(tmp_path)},
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141
    assert done.stderr == ""
