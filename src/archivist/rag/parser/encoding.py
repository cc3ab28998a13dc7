"""Decode the bytes of a text file whose encoding nobody told us: BOM, UTF-8, then detection."""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

from archivist.errors import DocumentParseError

# Byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# The detector only chooses among encodings real text files use; the full list of code
# pages lets it pick exotic ones (cp1006, johab, ...) for short Western or Chinese texts.
DETECTABLE_ENCODINGS: tuple[str, ...] = (
    "cp1252",
    "cp1250",
    "cp1251",
    "koi8_r",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp1258",
    "iso8859_2",
    "iso8859_5",
    "iso8859_7",
    "iso8859_15",
    "gb18030",
    "big5",
    "cp932",
    "euc_jp",
    "cp949",
    "tis_620",
    "mac_roman",
)

# Bytes the detector looks at; the whole file is then decoded with its verdict.
DETECTION_SAMPLE = 1024 * 1024

# Non-ASCII characters Western European text (Windows-1252 / Latin-1) is made of.
_WESTERN = re.compile(r"[À-ÖØ-öø-ÿŒœŠšŽžŸ“”‘’‚„–—…€•™«»°§£\u00a0]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")


# Magic bytes of binary formats whose bytes a legacy code page would happily "decode".
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a zip archive (DOCX, XLSX, PPTX, ...)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"RIFF", "a RIFF file (WEBP, WAV, AVI)"),
    (b"\x1f\x8b", "gzip-compressed"),
    (b"BZh", "bzip2-compressed"),
    (b"\xfd7zXZ", "xz-compressed"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
    (b"\x7fELF", "an executable"),
    (b"\xd0\xcf\x11\xe0", "an old Office document (DOC, XLS, PPT)"),
)


def bom_encoding(data: bytes) -> tuple[str, int] | None:
    """The encoding a byte-order mark announces and the mark's length, or None."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    return None


def decode_text(data: bytes, filename: str, encoding: str = "utf-8", detect: bool = True) -> str:
    """Text of `data`: a BOM decides first, then `encoding`, then (if `detect`) a detector.

    Binary content (NUL bytes without a UTF-16/32 BOM, control characters) and text whose
    encoding cannot be told are a ValueError naming `filename`.
    """
    announced = bom_encoding(data)
    if announced is not None:
        name, skip = announced
        try:
            return data[skip:].decode(name)
        except UnicodeDecodeError as exc:
            raise DocumentParseError(
                f"the file starts with a {name.upper()} byte-order mark but is "
                f"not valid {name.upper()} at byte {exc.start + skip}",
                filename=filename,
            ) from exc
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        first_error = exc
    _refuse_undetectable(data, filename, encoding, first_error, detect)
    text = _western(data) or _detected(data)
    if text is None:
        raise DocumentParseError(
            f"not valid {encoding} at byte {first_error.start} and no other text "
            f"encoding fits (a binary file, or mixed encodings?)",
            filename=filename,
        )
    if len(_CONTROL.findall(text[:DETECTION_SAMPLE])) > max(8, len(text[:DETECTION_SAMPLE]) // 100):
        raise DocumentParseError(
            "the file holds control characters (a binary file?)", filename=filename
        )
    return text


def _refuse_undetectable(
    data: bytes, filename: str, encoding: str, first_error: UnicodeDecodeError, detect: bool
) -> None:
    """ValueError naming the file when bytes that are not `encoding` must not be detected:
    a known binary format, NUL bytes, damaged UTF-8, or detection turned off."""
    for magic, what in _BINARY_MAGIC:
        if data.startswith(magic):
            raise DocumentParseError(f"the file is {what}, not text", filename=filename)
    if b"\x00" in data:
        raise DocumentParseError(
            "the file holds NUL bytes (a binary file, or UTF-16/32 without a byte-order mark?)",
            filename=filename,
        )
    if not detect or _damaged_utf8(data):
        raise DocumentParseError(
            f"cannot decode as {encoding} at byte {first_error.start} "
            f"(a damaged file, or pass TextParser(encoding=...))",
            filename=filename,
        ) from first_error


def stream_encoding(
    head: bytes, filename: str, encoding: str = "utf-8", detect: bool = True
) -> tuple[str, int]:
    """The encoding to decode a file in blocks with, and the BOM bytes to skip, decided on
    its first block `head` the way `decode_text` decides on a whole file."""
    announced = bom_encoding(head)
    if announced is not None:
        return announced
    try:
        codecs.getincrementaldecoder(encoding)(errors="strict").decode(head, final=False)
        return encoding, 0
    except UnicodeDecodeError as exc:
        first_error = exc
    _refuse_undetectable(head, filename, encoding, first_error, detect)
    if _western(head) is not None:
        return "cp1252", 0
    match = from_bytes(head[:DETECTION_SAMPLE], cp_isolation=list(DETECTABLE_ENCODINGS)).best()
    if match is None:
        raise DocumentParseError(
            f"not valid {encoding} at byte {first_error.start} and no other text "
            f"encoding fits (a binary file, or mixed encodings?)",
            filename=filename,
        )
    return match.encoding, 0


def _western(data: bytes) -> str | None:
    """Windows-1252 text (a superset of Latin-1's letters) if `data` reads as Western text.

    Detectors confuse the single-byte Western code pages with each other on short texts;
    Western text is mostly ASCII with a few accented letters, which is checked here.
    """
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    non_ascii = len(_NON_ASCII.findall(text))
    if not non_ascii or len(_WESTERN.findall(text)) != non_ascii:
        return None
    sample = text[:DETECTION_SAMPLE]
    letters = sum(1 for c in sample if c.isalpha())
    return text if len(_NON_ASCII.findall(sample)) * 2 <= letters else None


def _damaged_utf8(data: bytes) -> bool:
    """UTF-8 text with a few broken bytes: a legacy code page would garble the rest of it."""
    text = data[:DETECTION_SAMPLE].decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    good = len(_NON_ASCII.findall(text)) - bad
    return good > 0 and bad * 5 <= good


def _detected(data: bytes) -> str | None:
    """`data` decoded with the encoding charset-normalizer finds in its first bytes."""
    match = from_bytes(data[:DETECTION_SAMPLE], cp_isolation=list(DETECTABLE_ENCODINGS)).best()
    if match is None:
        return None
    if len(data) <= DETECTION_SAMPLE:
        return str(match)
    try:
        return data.decode(match.encoding)
    except UnicodeDecodeError:
        return None
