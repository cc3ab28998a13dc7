"""Writing a small file so that a crash leaves the old or the new content, never half."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json_atomically(target: Path, data: Any) -> None:
    """Write `data` as indented JSON to `target`: to a temporary file beside it, flushed to
    disk, then renamed over `target`."""
    temporary = target.with_name(f".{target.name}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)
