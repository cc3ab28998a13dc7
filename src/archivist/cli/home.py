"""Where the CLI keeps its data, and the small registry of knowledge bases in a store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from archivist._util.atomic_file import write_json_atomically

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
    from archivist.rag.knowledge.profile import KnowledgeProfile

    path = store_dir / KBS_FILE
    if not path.exists():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: KnowledgeProfile.model_validate({**record, "name": name, "tenant": None})
        for name, record in raw.items()
    }


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
