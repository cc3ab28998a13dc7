"""`file_sha256` is the one file digest: ingestion records it and the ONNX model checks it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from archivist._util.file_digest import file_sha256
from archivist.embedding import onnx
from archivist.rag.knowledge import ingest


def test_file_sha256_is_the_digest_of_the_whole_file(tmp_path: Path) -> None:
    data = bytes(range(256)) * 9000  # several read blocks
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert file_sha256(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()


def test_ingestion_and_the_model_check_share_it() -> None:
    assert ingest.file_sha256 is file_sha256
    assert onnx.file_sha256 is file_sha256
