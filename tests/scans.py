"""Scans for OCR tests: text drawn into pictures (as a scanner or camera would give them)
and image-only PDFs of such pictures. Latin text is drawn in a font a Python package ships;
Chinese text needs WenQuanYi Micro Hei (`system_programs.CHINESE_FONT`: a test drawing Chinese
without it is skipped, or failed where system tests are required)."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import reportlab
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from system_programs import CHINESE_FONT, CJK_FONT, require

LATIN_FONT = Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"
"""Bitstream Vera Sans (DejaVu Sans's Latin letters), as reportlab, a `[dev]` package, ships it."""

ENGLISH = (
    "The warranty for the Model X-200 pump covers parts and labour for 36 months. "
    "Claims must be filed within 14 days of a failure, quoting the serial number on the "
    "base plate."
)
CHINESE = "本公司自七月一日起实行新的考勤制度。年度体检安排在九月第二周，地点为总部三楼会议室。"


def _wrap(text: str, width: int) -> list[str]:
    if any(ord(c) > 0x2E80 for c in text):
        return [text[i : i + width // 2] for i in range(0, len(text), width // 2)]
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + len(word) < width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _font(size: int, *, cjk: bool) -> ImageFont.FreeTypeFont:
    if cjk:
        require(CHINESE_FONT)
        return ImageFont.truetype(str(CJK_FONT), size)
    return ImageFont.truetype(str(LATIN_FONT), size)


def page_image(
    text: str, *, size: tuple[int, int] = (1654, 2339), noisy: bool = False, font_px: int = 40
) -> Image.Image:
    """An A4 page at 200 dpi with `text` on it in black; `noisy`: rotated 1.5° and blurred,
    as a photo of a note would be."""
    font = _font(font_px, cjk=any(ord(c) > 0x2E80 for c in text))
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    y = 150
    for line in _wrap(text, 56):
        draw.text((150, y), line, font=font, fill=0)
        y += int(font_px * 1.6)
    if noisy:
        image = image.rotate(1.5, fillcolor=255, resample=Image.Resampling.BICUBIC)
        image = image.filter(ImageFilter.GaussianBlur(1.2))
    return image


def encode(image: Image.Image, fmt: str = "PNG", **options: object) -> bytes:
    """`image` as a file in Pillow format `fmt`."""
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that says it is `width` x `height` pixels and holds one byte of them: a
    decompression bomb's header, for the checks made before any pixel is decoded."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0"))


def scanned_pdf(pages: Sequence[Image.Image]) -> bytes:
    """An image-only PDF: each page one picture, no text layer (as a scanner makes them)."""
    buffer = io.BytesIO()
    first, *rest = pages
    first.save(buffer, format="PDF", save_all=True, append_images=rest, resolution=200)
    return buffer.getvalue()


NOTE = (
    "Reminder: the server room door code changes to 4471 on Monday. "
    "Ask Priya Raman at the front desk for a new badge."
)
NOTICE = "停水通知：因管道维修，本周六上午九点至下午三点全楼停水，请各位住户提前储水。"

FACTS: dict[str, tuple[str, int | None]] = {
    "how many days do I have to file a warranty claim for the pump": ("scan.pdf", 1),
    "年度体检在哪里举行": ("scan.pdf", 2),
    "what is the new server room door code": ("note.png", None),
    "周六什么时候停水": ("notice.jpg", None),
}
"""Each fact query of `scan_folder` and where its answer is: the file, and the page."""


def scan_folder(folder: Path, *, chinese_scans: bool = True) -> Path:
    """A folder of what people really have: a 2-page image-only PDF (English page, Chinese
    page), a slightly rotated and blurred photo of an English note, a Chinese notice as JPEG,
    and text files that answer none of `FACTS`. `chinese_scans=False`, for tests that never
    read the scans: the same files with English in place of the scanned Chinese, drawn
    without the Chinese font."""
    folder.mkdir(parents=True, exist_ok=True)
    second_page, notice_text = (CHINESE, NOTICE) if chinese_scans else (ENGLISH, NOTE)
    (folder / "scan.pdf").write_bytes(scanned_pdf([page_image(ENGLISH), page_image(second_page)]))
    note = page_image(NOTE, size=(1600, 700), noisy=True).convert("RGB")
    (folder / "note.png").write_bytes(encode(note))
    notice = page_image(notice_text, size=(1600, 600)).convert("RGB")
    (folder / "notice.jpg").write_bytes(encode(notice, "JPEG", quality=85))
    (folder / "menu.txt").write_text(
        "The cafeteria serves soup on Mondays and fish on Fridays. Coffee is free before nine.\n"
    )
    (folder / "travel.md").write_text(
        "# Travel policy\n\nBook flights two weeks ahead. Hotels up to 150 EUR a night are "
        "approved without a manager.\n"
    )
    (folder / "食堂.txt").write_text("员工食堂每周一供应汤，周五供应鱼。早上九点前咖啡免费。\n")
    return folder
