"""Where the CLI keeps its data, and the small registry of knowledge bases in a store."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from archivist._util.atomic_file import write_json_atomically

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


@dataclass(frozen=True)
class KBRecord:
    """What the CLI must remember about a knowledge base to search it later."""

    name: str
    description: str
    embedding_model: str
    dimensions: int
    chunk_size: int | None = None
    """Chunking recorded at creation (None: a KB made before settings were recorded)."""
    overlap: int | None = None


def load_kbs(store_dir: Path) -> dict[str, KBRecord]:
    """The knowledge bases recorded in `store_dir`."""
    path = store_dir / KBS_FILE
    if not path.exists():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8"))
    known = {f.name for f in fields(KBRecord)}
    return {
        name: KBRecord(**{k: v for k, v in record.items() if k in known})
        for name, record in raw.items()
    }


def save_kb(store_dir: Path, record: KBRecord) -> None:
    """Record (or update) one knowledge base in `store_dir`, atomically."""
    kbs = load_kbs(store_dir)
    kbs[record.name] = record
    store_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomically(store_dir / KBS_FILE, {n: asdict(r) for n, r in kbs.items()})


def forget_kb(store_dir: Path, name: str) -> None:
    """Remove knowledge base `name` from the registry of `store_dir`, atomically."""
    kbs = load_kbs(store_dir)
    kbs.pop(name, None)
    write_json_atomically(store_dir / KBS_FILE, {n: asdict(r) for n, r in kbs.items()})
