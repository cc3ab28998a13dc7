"""Where the CLI keeps its data, and the small registry of knowledge bases in a store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from archivist._util.atomic_file import write_json_atomically
from archivist.errors import ConfigurationError

if TYPE_CHECKING:  # pydantic loads when a command reads the records, not for --help
    from archivist.rag.knowledge.profile import KnowledgeProfile

KBS_FILE = "archivist-kbs.json"


def archivist_home() -> Path:
    """`$ARCHIVIST_HOME`, else the per-user data directory."""
    configured = os.environ.get("ARCHIVIST_HOME")
    if configured:
        return Path(configured)
    from platformdirs import user_data_dir

    return Path(user_data_dir("archivist", appauthor=False))


def default_store_dir() -> Path:
    """The store the CLI uses when `--store` is not given."""
    return archivist_home() / "store"


def cache_dir() -> Path:
    """The embedding cache shared by every store of this user."""
    return archivist_home() / "embedding-cache"


def load_kbs(store_dir: Path) -> dict[str, KnowledgeProfile]:
    """The knowledge bases recorded in `store_dir`, as profiles without a tenant (a command
    chooses its own). Records of every version read: keys a profile does not know are
    ignored, and one without its overlap takes the default."""
    from pydantic import ValidationError

    from archivist.rag.knowledge.profile import KnowledgeProfile

    path = store_dir / KBS_FILE
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or not all(isinstance(r, dict) for r in raw.values()):
            raise ValueError("expected an object of knowledge bases by name")
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError among them
        raise ConfigurationError(f"{path} is not a knowledge-base registry: {exc}") from None
    kbs = {}
    for name, record in raw.items():
        try:
            kbs[name] = KnowledgeProfile.model_validate({**record, "name": name, "tenant": None})
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "record"
            raise ConfigurationError(
                f"{path}: knowledge base {name!r}: {field}: {first['msg']}"
            ) from None
    return kbs


def save_kb(store_dir: Path, profile: KnowledgeProfile) -> None:
    """Record (or update) one knowledge base in `store_dir`, atomically."""
    kbs = load_kbs(store_dir)
    kbs[profile.name] = profile
    store_dir.mkdir(parents=True, exist_ok=True)
    _write(store_dir, kbs)


def forget_kb(store_dir: Path, name: str) -> None:
    """Remove knowledge base `name` from the registry of `store_dir`, atomically."""
    kbs = load_kbs(store_dir)
    kbs.pop(name, None)
    _write(store_dir, kbs)


def _write(store_dir: Path, kbs: dict[str, KnowledgeProfile]) -> None:
    write_json_atomically(store_dir / KBS_FILE, {n: p.recorded() for n, p in kbs.items()})
