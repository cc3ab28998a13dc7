"""The small JSON file beside each Edge shard: what the shard itself does not say cheaply."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from archivist._util.atomic_file import write_json_atomically
from archivist.rag.store.core.datatype import VECTOR_DATATYPES, VectorDatatype
from archivist.rag.store.qdrant.filter import IndexKind

META_FILE = "meta.json"
_FORMAT = 1


@dataclass
class EdgeMeta:
    """A collection's vector size and distance, its live shard directory, its payload indexes,
    (for collections with BM25 vectors) the chunk-length totals and the term layout, whether
    its dense vectors are quantized and how they are stored (fixed when it is created;
    collections made before `datatype` existed hold float32, before `term_layout` existed
    layout 1)."""

    dimensions: int
    distance: str
    shard: str
    indexes: dict[str, IndexKind] = field(default_factory=dict)
    sparse: bool = False
    bm25_tokens: int = 0
    bm25_chunks: int = 0
    quantized: bool = False
    datatype: VectorDatatype = "float32"
    term_layout: int = 1


def load_meta(directory: Path) -> EdgeMeta | None:
    """The meta file of the collection in `directory`, or None when the collection is incomplete."""
    path = directory / META_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if not isinstance(raw, dict) or raw.get("format") != _FORMAT:
        raise RuntimeError(f"{path} is not an Archivist collection meta file (format {_FORMAT})")
    data = cast(dict[str, Any], raw)
    return EdgeMeta(
        dimensions=int(data["dimensions"]),
        distance=str(data["distance"]),
        shard=str(data["shard"]),
        indexes=dict(data["indexes"]),
        sparse=bool(data.get("sparse", False)),
        bm25_tokens=int(data.get("bm25_tokens", 0)),
        bm25_chunks=int(data.get("bm25_chunks", 0)),
        quantized=bool(data.get("quantized", False)),
        datatype=_datatype(data.get("datatype", "float32"), path),
        term_layout=int(data.get("term_layout", 1)),
    )


def _datatype(value: object, path: Path) -> VectorDatatype:
    if value not in VECTOR_DATATYPES:
        raise RuntimeError(f"{path}: unknown vector datatype {value!r}")
    return value


def save_meta(directory: Path, meta: EdgeMeta) -> None:
    """Write the meta file atomically (a crash leaves the old or the new file, never half)."""
    write_json_atomically(directory / META_FILE, {"format": _FORMAT, **asdict(meta)})
