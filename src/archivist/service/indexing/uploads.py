"""Turning uploaded files into durable files on disk: safe names, size and type checks."""

from __future__ import annotations

import os
import re
import shutil
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from archivist.errors import ArchivistError
from archivist.rag.knowledge.ingest import document_id_for
from archivist.rag.parser.registry import ParserRegistry
from archivist.rag.store.base import MetadataFilter
from archivist.service.guards.upload_types import UploadTypeError, check_upload_type
from archivist.service.storage.catalog import NewUpload

MAX_NAME_BYTES = 200
_INVISIBLE = frozenset({"Cf", "Cs", "Co", "Cn"})
"""Format (bidi, zero-width), surrogate, private-use and unassigned characters: dropped."""
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f/\\:*?\"<>|]")


class UploadRejected(ArchivistError, ValueError):
    """An upload that cannot be accepted; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def safe_filename(raw: str | None) -> str:
    """`raw` reduced to a harmless base name: no directories, control characters or NULs,
    no invisible format characters (bidi overrides such as U+202E, zero-width marks), no
    leading dots, at most 200 UTF-8 bytes (the extension kept); never empty."""
    name = unicodedata.normalize("NFC", raw or "")
    name = "".join(c for c in name if unicodedata.category(c) not in _INVISIBLE)
    name = name.replace("\\", "/")
    name = PurePosixPath(name).name if "/" in name else name
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if not name or set(name) <= {"_", "."}:
        name = "upload" + (PurePosixPath(name).suffix if name.count(".") else "")
    if len(name.encode()) > MAX_NAME_BYTES:
        stem, suffix = os.path.splitext(name)
        suffix = suffix if len(suffix.encode()) <= 16 else ""
        budget = MAX_NAME_BYTES - len(suffix.encode())
        stem = stem.encode()[:budget].decode("utf-8", "ignore")
        name = stem + suffix
    return name


@dataclass
class IncomingFile:
    """One part of a multipart upload: its client-given name and a readable body."""

    filename: str | None
    body: BinaryIO


def store_uploads(
    files: list[IncomingFile],
    kb_dir: Path,
    files_root: Path,
    registry: ParserRegistry,
    max_bytes: int,
    scope: MetadataFilter,
    multimodal: bool = False,
    model: str = "the model",
) -> list[NewUpload]:
    """Write every file to its own folder under `kb_dir`, fsynced, and check each one; each
    gets the document id ingestion will give it in `scope` (the knowledge base's tenant).

    All or nothing: if any file is empty (422), too large (413) or of a type not accepted
    (415: see `check_upload_type`; `multimodal` models accept images), everything this
    call wrote is removed and `UploadRejected` is raised.
    """
    written: list[Path] = []
    accepted: list[NewUpload] = []
    total = 0
    try:
        for incoming in files:
            name = safe_filename(incoming.filename)
            folder = kb_dir / uuid.uuid4().hex
            folder.mkdir(parents=True)
            written.append(folder)
            target = folder / name
            size = _copy_synced(incoming.body, target, max_bytes - total)
            if size < 0:
                raise UploadRejected(
                    413, f"{name}: the upload is larger than the limit of {max_bytes} bytes"
                )
            total += size
            if size == 0:
                raise UploadRejected(422, f"{name}: the file is empty")
            try:
                media_type = check_upload_type(name, target, registry, multimodal, model)
            except UploadTypeError as exc:
                raise UploadRejected(415, str(exc)) from None
            _sync_directory(folder)
            accepted.append(
                NewUpload(
                    id=document_id_for(target, scope),
                    filename=name,
                    media_type=media_type,
                    path=str(target.relative_to(files_root)),
                    size=size,
                )
            )
        _sync_directory(kb_dir)
    except BaseException:
        for folder in written:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return accepted


def _copy_synced(body: BinaryIO, target: Path, budget: int) -> int:
    """Copy `body` to `target` and fsync it; -1 as soon as it exceeds `budget` bytes."""
    size = 0
    with open(target, "xb") as out:
        while block := body.read(1 << 20):
            size += len(block)
            if size > budget:
                return -1
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    return size


def _sync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
