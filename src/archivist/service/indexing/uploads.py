"""Turning uploaded files into durable files on disk: safe names, size and type checks."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from archivist.rag.knowledge.ingest import document_id_for
from archivist.rag.parser.registry import ParserRegistry
from archivist.rag.store.base import MetadataFilter
from archivist.service.errors import UploadRejected, UploadTypeError
from archivist.service.indexing.upload_types import check_upload_type
from archivist.service.storage.catalog import NewUpload

MAX_NAME_BYTES = 200
_INVISIBLE = frozenset({"Cf", "Cs", "Co", "Cn"})
"""Format (bidi, zero-width), surrogate, private-use and unassigned characters: dropped."""
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f/\\:*?\"<>|]")


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


def new_folders(kb_id: str, count: int) -> list[str]:
    """`count` fresh file-store folders in knowledge base `kb_id`, one per upload."""
    return [f"{kb_id}/{uuid.uuid4().hex}" for _ in range(count)]


@dataclass(frozen=True)
class RefusedUpload:
    """A file of an upload that is not accepted: its safe name, the status it alone would
    be answered with (415: a type not read, 422: empty), the reason (naming the file), and
    its folder (already removed) and content digest."""

    filename: str
    status: int
    reason: str
    folder: str
    digest: str


def store_uploads(
    files: list[IncomingFile],
    folders: list[str],
    files_root: Path,
    registry: ParserRegistry,
    max_bytes: int,
    scope: MetadataFilter,
    multimodal: bool = False,
    model: str = "the model",
) -> list[NewUpload | RefusedUpload]:
    """Write each file into its folder (of `folders`, under `files_root`), fsynced, and
    check it; each accepted one gets its content digest and the document id ingestion will
    give it in `scope` (the knowledge base's tenant). The answer has one entry per file, in
    order.

    A file that is empty or of a type not accepted (see `check_upload_type`; `multimodal`
    models accept images) is refused alone: its folder is removed and its entry says why.
    Past `max_bytes` for all files together, everything this call wrote is removed and
    `UploadRejected` 413 is raised.
    """
    written: list[Path] = []
    stored: list[NewUpload | RefusedUpload] = []
    total = 0
    try:
        for incoming, key in zip(files, folders, strict=True):
            name = safe_filename(incoming.filename)
            folder = files_root / key
            folder.mkdir(parents=True)
            written.append(folder)
            target = folder / name
            size, digest = _copy_synced(incoming.body, target, max_bytes - total)
            if size < 0:
                raise UploadRejected(
                    413, f"{name}: the upload is larger than the limit of {max_bytes} bytes"
                )
            total += size
            media_type, refusal = "", None
            if size == 0:
                refusal = (422, f"{name}: the file is empty")
            else:
                try:
                    media_type = check_upload_type(name, target, registry, multimodal, model)
                except UploadTypeError as exc:
                    refusal = (415, str(exc))
            if refusal is not None:
                shutil.rmtree(folder, ignore_errors=True)
                stored.append(RefusedUpload(name, *refusal, folder=key, digest=digest))
                continue
            _sync_directory(folder)
            stored.append(
                NewUpload(
                    id=document_id_for(target, scope),
                    filename=name,
                    media_type=media_type,
                    path=str(target.relative_to(files_root)),
                    size=size,
                    digest=digest,
                )
            )
        for parent in {folder.parent for folder in written}:
            _sync_directory(parent)
    except BaseException:
        for folder in written:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return stored


def _copy_synced(body: BinaryIO, target: Path, budget: int) -> tuple[int, str]:
    """Copy `body` to `target` and fsync it; its size and SHA-256 (hex), or size -1 as soon
    as it exceeds `budget` bytes."""
    size = 0
    digest = hashlib.sha256()
    with open(target, "xb") as out:
        while block := body.read(1 << 20):
            size += len(block)
            if size > budget:
                return -1, ""
            digest.update(block)
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    return size, digest.hexdigest()


def _sync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
