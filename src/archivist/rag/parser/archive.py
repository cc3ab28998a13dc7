"""Zip-bomb guard for Office Open XML files (DOCX, XLSX, PPTX), checked before inflating."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from archivist.errors import DocumentParseError

_MIB = 1024 * 1024


class ArchiveTooLargeError(DocumentParseError):
    """An Office archive is over its parser's size limits (a zip bomb?); names the file."""


@dataclass(frozen=True)
class ArchiveLimits:
    """Limits on a zip archive's directory, checked before any member is inflated.

    The declared sizes can be trusted as upper bounds: Python's zipfile never inflates a
    member past its declared size (one that tries fails its size/CRC check).
    """

    max_parts: int = 10_000  # members in the archive
    max_part_size: int = 256 * _MIB  # declared uncompressed bytes of one member
    max_total_size: int = 512 * _MIB  # declared uncompressed bytes of all members
    max_compression_ratio: float = 200.0  # uncompressed/compressed bytes of one member ...
    ratio_check_min_size: int = 1 * _MIB  # ... checked for members over this many bytes


def zip_members(data: bytes, filename: str, kind: str) -> list[str]:
    """Member names of the zip `data`; not a zip or an unreadable directory → ValueError."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentParseError(f"not a {kind} file (not a zip archive)", filename=filename)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.namelist()
    except Exception as exc:  # BadZipFile, NotImplementedError (zip version), ...
        raise DocumentParseError(
            f"not a valid {kind} file: {type(exc).__name__}: {exc}",
            filename=filename,
        ) from exc


def check_archive(data: bytes, filename: str, kind: str, limits: ArchiveLimits) -> list[str]:
    """Member names of the zip `data` (a `kind` file such as "DOCX"); over `limits` →
    `ArchiveTooLargeError`, not a zip → ValueError."""
    names = zip_members(data, filename, kind)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
    if len(members) > limits.max_parts:
        raise ArchiveTooLargeError(
            f"the {kind} archive has {len(members):,} parts, over the "
            f"limit of {limits.max_parts:,}",
            filename=filename,
        )
    total = 0
    for member in members:
        size = member.file_size
        if size > limits.max_part_size:
            raise ArchiveTooLargeError(
                f"part {member.filename!r} inflates to {size:,} bytes, over the "
                f"{limits.max_part_size:,}-byte limit per part (a zip bomb?)",
                filename=filename,
            )
        ratio = size / max(member.compress_size, 1)
        if size > limits.ratio_check_min_size and ratio > limits.max_compression_ratio:
            raise ArchiveTooLargeError(
                f"part {member.filename!r} is compressed {ratio:,.0f}:1, over "
                f"the {limits.max_compression_ratio:,.0f}:1 limit (a zip bomb?)",
                filename=filename,
            )
        total += size
        if total > limits.max_total_size:
            raise ArchiveTooLargeError(
                f"the {kind} archive inflates to over {limits.max_total_size:,} "
                f"bytes in total (a zip bomb?)",
                filename=filename,
            )
    _refuse_dtds(data, filename, kind)
    return names


# A DOCTYPE can only sit in the prolog, before the root element: the head of a part is enough.
_PROLOG_BYTES = 64 * 1024


def _refuse_dtds(data: bytes, filename: str, kind: str) -> None:
    """Office never writes DTDs; one in an XML part is an entity attack (billion laughs,
    external entities), refused here whatever the XML library downstream would do."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for member in archive.infolist():
            if not member.filename.endswith((".xml", ".rels")):
                continue
            try:
                with archive.open(member) as part:
                    head = part.read(_PROLOG_BYTES)
            except Exception as exc:  # bad CRC, unsupported compression, truncated data
                raise DocumentParseError(
                    f"{kind} part {member.filename!r} is unreadable: {type(exc).__name__}: {exc}",
                    filename=filename,
                ) from exc
            if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
                raise DocumentParseError(
                    f"{kind} part {member.filename!r} declares a DTD or XML "
                    f"entities, which Office files never do (an entity attack?)",
                    filename=filename,
                )
