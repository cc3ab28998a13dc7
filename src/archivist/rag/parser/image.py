"""`ImageParser`: a whole image as one DataBlock Section, its type sniffed from the bytes,
and with OCR the text on it as a text Section beside it."""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

from archivist._util.extras import require
from archivist.errors import DocumentParseError
from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag.document import PICTURE_TEXT, Section
from archivist.rag.parser.base import ParserBase, read_binary
from archivist.rag.parser.ocr import OCR_HINT, Ocr, PageImage, ocr_metadata
from archivist.rag.parser.ocr.reader import as_ocr

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

# Images larger than this many pixels are refused (decompression-bomb guard).
MAX_IMAGE_PIXELS = 100_000_000


_BMP_INFO_SIZES = frozenset({12, 16, 40, 52, 56, 64, 108, 124})
"""The sizes of the BMP info headers (OS/2 and Windows versions) that follow the file header."""


def sniff_image_type(data: bytes) -> str | None:
    """The media type of image `data` from its magic bytes, or None if not a known image."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data.startswith(b"BM") and int.from_bytes(data[14:18], "little") in _BMP_INFO_SIZES:
        return "image/bmp"  # "BM" alone starts plenty of text ("BMI-1 is ..."): check the header
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _verify(data: bytes, filename: str) -> None:
    """Check the header, the pixel count and then decode every pixel once.

    `Image.verify()` alone only checks PNG chunk checksums, so a truncated JPEG, GIF or BMP
    or a PNG with a broken zlib stream would pass; decoding catches those. The pixel limit is
    checked before any pixel buffer is allocated, so memory stays bounded by it.
    """
    require("office", "PIL", f"reading {filename}")
    from PIL import Image, UnidentifiedImageError

    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                _check_size(image, filename)
                image.verify()
            with Image.open(io.BytesIO(data)) as image:
                if image.format == "JPEG":  # decode at 1/8 scale: still reads every scan
                    image.draft(image.mode, (image.width // 8 or 1, image.height // 8 or 1))
                image.load()
        except _Refused:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise DocumentParseError(
                f"image too large (decompression bomb?): {exc}", filename=filename
            ) from exc
        except UnidentifiedImageError as exc:
            raise DocumentParseError(
                "corrupt image: unreadable image header", filename=filename
            ) from exc
        except MemoryError as exc:
            raise DocumentParseError("image too large to decode", filename=filename) from exc
        except Exception as exc:  # Pillow raises OSError, SyntaxError, ... for broken files
            raise DocumentParseError(f"corrupt image: {exc}", filename=filename) from exc


class _Refused(DocumentParseError):
    """Our own verdict on an image (already names the file); Pillow's ValueErrors do not."""


def _check_size(image: Image.Image, filename: str) -> None:
    width, height = image.size
    if width <= 0 or height <= 0:
        raise _Refused(f"image has no pixels ({width}x{height})", filename=filename)
    if width * height > MAX_IMAGE_PIXELS:
        raise _Refused(
            f"image is {width}x{height} pixels, over the {MAX_IMAGE_PIXELS:,}-pixel limit",
            filename=filename,
        )


class ImageParser(ParserBase):
    """PNG, JPEG, GIF, BMP and WEBP images → one DataBlock Section with `{"media_type": ...}`,
    and with `ocr` (an `Ocr`, or "auto", "tesseract", "rapidocr") the text read on the image
    as a text Section after it, saying `ocr: true` and `ocr_confidence` (and the picture's
    Section `ocr_text: true`).

    The media type comes from the bytes, not the file name; the image header is checked
    with Pillow so a truncated or lying file is a ValueError, not a silent bad record. A
    text-only embedding model indexes the text and leaves the picture out.
    """

    supported_media_types: ClassVar[list[str]] = [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/bmp",
        "image/webp",
    ]

    def __init__(self, ocr: Ocr | str | None = None) -> None:
        self.ocr = as_ocr(ocr)

    @property
    def unread_text_hint(self) -> str:
        """Why an image gave no text: OCR off, no engine here (and how to get one), or
        none found on it."""
        if self.ocr is None:
            return "OCR is off"
        try:
            return OCR_HINT if self.ocr.engine is None else "OCR found none on it"
        except ValueError as exc:
            return str(exc)

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = read_binary(file, filename)
        media_type = sniff_image_type(data)
        if media_type is None:
            raise DocumentParseError(
                "not a supported image (expected PNG, JPEG, GIF, BMP or WEBP bytes)",
                filename=filename,
            )
        await asyncio.to_thread(_verify, data, filename)
        block = DataBlock(
            source=Base64Source(data=base64.b64encode(data).decode("ascii"), media_type=media_type),
            name=filename,
        )
        picture = Section(content=block, source=filename, metadata={"media_type": media_type})
        if self.ocr is None:
            return [picture]
        return await asyncio.to_thread(_with_text, picture, data, filename, self.ocr)


def _with_text(picture: Section, data: bytes, where: str, ocr: Ocr | None) -> list[Section]:
    """`picture` and, when `ocr` reads text on it, that text as a Section after it (with the
    picture's metadata, `ocr: true` ...), the picture then saying `ocr_text: true`."""
    if ocr is None:
        return [picture]
    try:
        result = None if ocr.engine is None else ocr.read(_page_of(data, ocr), where)
    except ValueError as exc:  # OcrError, or an engine named but not installed
        raise DocumentParseError(f"OCR: {exc}", filename=where) from exc
    text = result.text.strip() if result is not None else ""
    if result is None or not text:
        return [picture]
    metadata = {k: v for k, v in picture.metadata.items() if k != "media_type"}
    return [
        picture.model_copy(update={"metadata": {**picture.metadata, PICTURE_TEXT: True}}),
        Section(
            content=TextBlock(text=text),
            source=picture.source,
            metadata={**metadata, **ocr_metadata(result)},
        ),
    ]


def _page_of(data: bytes, ocr: Ocr) -> PageImage:
    """Checked image `data` in grayscale, upright by its EXIF orientation, scaled down to
    `ocr.max_pixels` (a JPEG is decoded at the reduced size; an animation's first frame)."""
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as image:
        scale = ocr.scale_for(*image.size)
        if scale < 1.0 and image.format == "JPEG":
            image.draft("L", (int(image.width * scale) + 1, int(image.height * scale) + 1))
        upright = ImageOps.exif_transpose(image)  # a photo's orientation is in its EXIF
        if _has_alpha(upright):  # text drawn on a transparent picture: onto white
            picture = upright.convert("RGBA")
            gray = Image.new("L", picture.size, 255)
            gray.paste(picture.convert("L"), mask=picture.getchannel("A"))
        else:
            gray = upright.convert("L")
    scale = ocr.scale_for(*gray.size)
    if scale < 1.0:
        size = (max(1, int(gray.width * scale)), max(1, int(gray.height * scale)))
        gray = gray.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return PageImage(gray.width, gray.height, gray.tobytes())


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def embedded_image_sections(
    data: bytes, filename: str, name: str, metadata: dict[str, Any], ocr: Ocr | None = None
) -> list[Section]:
    """A DataBlock Section for a picture inside a document, checked like `ImageParser`
    checks image files (type from the bytes, header, pixel limit, full decode), and with
    `ocr` the text on it as a text Section after it, as `ImageParser` gives them.

    Pictures that fail the check, or are in a format ImageParser does not read (EMF, TIFF,
    ...), are left out with a warning rather than failing the whole document.
    """
    media_type = sniff_image_type(data)
    where = f"{filename}: picture {name}"
    if media_type is None:
        logger.warning("%s: picture %s skipped: not a PNG, JPEG, GIF, BMP or WEBP", filename, name)
        return []
    try:
        _verify(data, where)
    except ValueError as exc:
        logger.warning("%s (picture skipped)", exc)
        return []
    block = DataBlock(
        source=Base64Source(data=base64.b64encode(data).decode("ascii"), media_type=media_type),
        name=name,
    )
    picture = Section(
        content=block, source=filename, metadata={**metadata, "media_type": media_type}
    )
    return _with_text(picture, data, where, ocr)
