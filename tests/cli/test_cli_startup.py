"""What the CLI imports: `--version` and `--help` nothing outside the standard library and
the CLI's own light modules; `search` what searching needs and none of the parsers, the
service stack or the agent; the core (the library, `index` and `search`) no package of an
extra, so a core install (`pip install archivist`) runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from archivist._util.extras import EXTRAS
from archivist.cli.main import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# Runs the CLI in a fresh interpreter and prints the modules it loaded.
PROBE = """
import json, sys
from archivist.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

# Every module `--version` and `--help` may load besides the standard library's.
STARTUP_MODULES = {
    "archivist",
    "archivist._util",
    "archivist._util.extras",
    "archivist._util.lazy",
    "archivist._util.text",
    "archivist._util.atomic_file",
    "archivist.chunk_defaults",
    "archivist.errors",
    "archivist.cli",
    "archivist.cli.arguments",
    "archivist.cli.ask_command",
    "archivist.cli.chat_server_command",
    "archivist.cli.chunk_command",
    "archivist.cli.docs_command",
    "archivist.cli.doctor_command",
    "archivist.cli.eval_command",
    "archivist.cli.files",
    "archivist.cli.home",
    "archivist.cli.index_command",
    "archivist.cli.kb_commands",
    "archivist.cli.keys_command",
    "archivist.cli.main",
    "archivist.cli.mcp_command",
    "archivist.cli.ocr_options",
    "archivist.cli.output",
    "archivist.cli.search_command",
    "archivist.cli.serve_command",
    "archivist.cli.session",
    "archivist.cli.worker_command",
    "archivist.embedding",
    "archivist.embedding.registry",
    "archivist.options",
    "archivist.rag",
    "archivist.rag.parser",
    "archivist.rag.parser.ocr",
    "archivist.rag.parser.ocr.choices",
}

# Loaded by no search: parsers, the service, the agent and chat models (the parsers' lazy
# packages and the OCR choices, plain values the options show, are no parser).
LIGHT_PARSER_MODULES = {
    "archivist.rag.parser",
    "archivist.rag.parser.ocr",
    "archivist.rag.parser.ocr.choices",
}
NOT_FOR_SEARCH = (
    "archivist.rag.parser",
    "archivist.rag.chunker.token",
    "archivist.rag.chunker.approx_token",
    "archivist.rag.knowledge.ingest",
    "archivist.service",
    "archivist.agent",
    "archivist.model",
    "openpyxl",
    "pptx",
    "docx",
    "pypdfium2",
    "PIL",
    "selectolax",
    "fastapi",
    "uvicorn",
    "sqlalchemy",
    "rich",
)

# The top-level packages the extras bring (`pip install 'archivist[EXTRA]'`) and the packages
# they pull in; the core never imports them at module import time.
EXTRA_PACKAGES = {module for modules in EXTRAS.values() for module in modules} | {
    "starlette.applications",  # FastAPI's (mcp brings starlette, not its application)
    "lxml",
    "grpc",
    "boto3",
    "botocore",
}


def loaded_modules(*argv: str) -> tuple[int, set[str]]:
    """The exit code of `archivist ARGV` in a fresh interpreter and the modules it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stdout.rsplit("\n", 2)[-2])
    return report["code"], set(report["modules"])


def bare_interpreter_modules() -> set[str]:
    """What this interpreter loads by itself (the standard library's, site hooks)."""
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(done.stdout))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["search", "--help"]])
def test_version_and_help_load_only_the_cli(argv: list[str]) -> None:
    code, modules = loaded_modules(*argv)
    assert code == 0
    assert {m for m in modules if m.split(".")[0] == "archivist"} == STARTUP_MODULES
    others = {
        m
        for m in modules - bare_interpreter_modules()
        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "archivist"
    }
    assert others == {"__main__"} or others == set()
    assert "asyncio" not in modules


def test_search_loads_what_searching_needs_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    assert main(["index", str(SAMPLES / "archivist-overview.md"), "--kb", "demo"]) == 0
    capsys.readouterr()
    code, modules = loaded_modules("search", "How are tenants kept apart?", "--kb", "demo")
    assert code == 0
    assert {
        "onnxruntime",
        "archivist.rag.knowledge.knowledge_base",
        "archivist.rag.store.qdrant",
    } <= modules
    loaded = sorted(
        m
        for m in modules - LIGHT_PARSER_MODULES
        for banned in NOT_FOR_SEARCH
        if m == banned or m.startswith(banned + ".")
    )
    assert loaded == []
    # The same query again comes from the embedding cache: no model session, so neither
    # onnxruntime nor numpy (about a third of the process's start).
    code, modules = loaded_modules("search", "How are tenants kept apart?", "--kb", "demo")
    assert code == 0
    assert "archivist.rag.knowledge.knowledge_base" in modules
    assert "onnxruntime" not in modules
    assert "numpy" not in modules


def extras_loaded(modules: set[str]) -> list[str]:
    """The modules in `modules` that belong to an extra's package."""
    return sorted(
        m for m in modules for pkg in EXTRA_PACKAGES if m == pkg or m.startswith(pkg + ".")
    )


def test_the_core_library_imports_no_extra() -> None:
    """`import archivist.rag` and its core names (the knowledge base, the in-process store,
    every parser class and the default registry) load no package of an extra."""
    probe = (
        "import json, sys\n"
        "import archivist, archivist.rag, archivist.embedding, archivist.agent\n"
        "from archivist.rag import (KnowledgeBase, QdrantStore, default_registry, WordParser,\n"
        "    PPTParser, ExcelParser, HTMLParser, ImageParser, PDFParser, MarkdownParser)\n"
        "assert '.docx' in default_registry().supported_extensions()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert extras_loaded(set(json.loads(done.stdout))) == []


def test_index_and_search_of_core_formats_import_no_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`archivist index` on Markdown and PDF and `archivist search` run on the core alone."""
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    files = [str(SAMPLES / "archivist-overview.md"), str(SAMPLES / "archivist-guide.pdf")]
    code, modules = loaded_modules("index", *files, "--kb", "core")
    assert code == 0
    assert "pypdfium2" in modules
    assert extras_loaded(modules) == []
    code, modules = loaded_modules("search", "How are tenants kept apart?", "--kb", "core")
    assert code == 0
    assert extras_loaded(modules) == []
