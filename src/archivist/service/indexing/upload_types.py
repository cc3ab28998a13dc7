"""Which uploads the service accepts: the type is decided as the CLI decides, and the bytes
must be of it.

`ParserRegistry.media_type_of` names the type: the extension when a parser claims it, else
the content, so a `METADATA` or `notes.1` of text is read as text, as `archivist index`
reads it. The content is checked against that type: a `.pdf` that is not a PDF, or an
executable, archive or gzip file under a text name, is refused before it is queued. Images
are offered and accepted only when something reads them (OCR, or an embedding model that
reads images); otherwise the 415 says why and what to do instead.
"""

from __future__ import annotations

from pathlib import Path, PurePath

from archivist.rag.parser.image import sniff_image_type
from archivist.rag.parser.registry import HEAD_BYTES, ParserRegistry, sniff_media_type
from archivist.service.errors import UploadTypeError

BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a zip archive"),
    (b"MZ", "a Windows executable"),
    (b"\x7fELF", "an ELF executable"),
    (b"\x1f\x8b", "gzip data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
)
"""Starts of files that are never text, whatever their extension says."""

TEXT_LIKE_SIGNATURES = frozenset({b"MZ"})
"""Signatures that a text can start with too ("MZ and DZ twins ..."): they count only when
the header after them holds a NUL byte, as a DOS executable's 64-byte header always does."""

PDF_JUNK_BYTES = 1024
"""How far into a `.pdf` its `%PDF-` header may lie (readers skip leading junk this far)."""


def reads_images(registry: ParserRegistry, multimodal: bool) -> bool:
    """Whether an image upload yields something to index: its text by the registry's OCR,
    or its picture for a `multimodal` embedding model."""
    return multimodal or (registry.ocr is not None and registry.ocr.engine is not None)


def accepted_extensions(registry: ParserRegistry, multimodal: bool) -> list[str]:
    """The extensions uploads may have: every parser's, images only where `reads_images`."""
    images = reads_images(registry, multimodal)
    return [
        ext
        for ext in registry.supported_extensions()
        if images or not (registry.media_type_for("x" + ext) or "").startswith("image/")
    ]


def check_upload_type(
    name: str, path: Path, registry: ParserRegistry, multimodal: bool, model: str
) -> str:
    """The media type upload `name` (stored at `path`) is read as, by
    `registry.media_type_of`, after checking that its content is of that type and that
    something reads it (`multimodal`: the embedding model `model` reads images)."""
    ext = PurePath(name).suffix.lower()
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    found = _content_type(head)
    media_type = registry.media_type_of(path, name)
    if media_type is None:
        what = found or "not text"
        raise UploadTypeError(
            f"unsupported file type {ext or '(no extension)'}: the content is {what}; "
            "upload text (any name) or a file of a supported extension",
            filename=name,
            supported=accepted_extensions(registry, multimodal),
        )
    if media_type.startswith("image/") and not reads_images(registry, multimodal):
        raise UploadTypeError(
            f"images cannot be indexed: the embedding model {model} reads text only and OCR "
            "is off on this service. Upload the image's text instead, or run the service with "
            "OCR (install Tesseract)",
            filename=name,
            media_type=media_type,
        )
    if not _matches(media_type, found, head):
        what = found or "not of that type"
        raise UploadTypeError(
            f"the content does not match its extension {ext} ({what}); "
            "give the file its real extension",
            filename=name,
            media_type=media_type,
        )
    return media_type


def _content_type(head: bytes) -> str | None:
    """What a file starting with `head` is by its binary signature (None: no known one)."""
    for signature, what in BINARY_SIGNATURES:
        if head.startswith(signature) and (
            signature not in TEXT_LIKE_SIGNATURES or b"\x00" in head[:64]
        ):
            return what
    image = sniff_image_type(head)
    return f"an image ({image})" if image else None


def _matches(media_type: str, found: str | None, head: bytes) -> bool:
    if media_type == "application/pdf":
        return found == "a PDF" or (found is None and b"%PDF-" in head[:PDF_JUNK_BYTES])
    if media_type.startswith("application/vnd.openxmlformats"):
        return found == "a zip archive"  # the parser checks which Office package it is
    if media_type.startswith("image/"):
        return found == f"an image ({media_type})" or sniff_media_type(head) == media_type
    return found is None  # a text type: any encoding, but no known binary format
