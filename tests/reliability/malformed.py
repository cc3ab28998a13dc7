"""A generated corpus of malformed (and a few damaged-but-recoverable) input files.

Everything is built by code from a fixed seed: no binary fixtures are committed. Each `Case`
names the file, the parser the registry must pick for it and the expected outcome:
an exception type (the parser must raise it, or a subclass, with the file name in the
message) or `None` for damage a parser may repair, in which case `texts` is exactly what
it must return.

Run as a script, this module is the isolated worker of `test_bad_inputs.py`:
`python malformed.py CASE_ID ...` parses the named cases (from a temporary file and from
bytes) under an address-space limit and prints one JSON line per case and mode, preceded
by a `START` line, so a crash or a hang in a native library is pinned to its case.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import random
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for factories

from archivist.rag.parser import (
    ArchiveTooLargeError,
    ExcelParser,
    HTMLParser,
    ImageParser,
    MarkdownParser,
    ParserBase,
    PDFParser,
    PPTParser,
    RSTParser,
    TextParser,
    UnsupportedFileTypeError,
    WordParser,
)
from factories import make_docx, make_image, make_pdf, make_pptx, make_xlsx

SEED = 20240607
PDF_PAGES = ["Hello page one", "Second page text here", "Third page"]
OBJSTM_TEXT = "Object stream text"
DECK_TEXTS = ["Agenda\n\nhello deck", "two"]  # default_registry: no slide tags
TEXT = (
    "Archivist parses files into sections and cuts them into chunks. "
    "Café, naïve, 日本語 and emoji 🙂 are all UTF-8 here.\n"
) * 3


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    filename: str
    parser: type[ParserBase] | None  # what the registry must pick; None: no parser at all
    expected: type[Exception] | None  # None: a repairable file that must give `texts`
    build: Callable[[], bytes] = field(repr=False, compare=False)
    texts: tuple[str, ...] = ()
    isolate: bool = False  # run in the subprocess worker (native crash risk or big memory)

    @functools.cached_property
    def data(self) -> bytes:
        return self.build()


def _const(data: bytes) -> Callable[[], bytes]:
    return lambda: data


# ---------------------------------------------------------------------------------- PDF


@functools.cache
def real_pdf() -> bytes:
    return make_pdf(PDF_PAGES)


def _pdf_cases(rng: random.Random) -> list[Case]:
    pdf = real_pdf()
    cases: list[Case] = []

    def add(
        cid: str,
        cat: str,
        data: bytes,
        expected: type[Exception] | None = ValueError,
        name: str | None = None,
        texts: tuple[str, ...] = (),
    ) -> None:
        cases.append(
            Case(
                cid,
                cat,
                name or f"{cid}.pdf",
                PDFParser,
                expected,
                _const(data),
                texts,
                isolate=True,
            )
        )

    # Truncated anywhere before the trailer is complete: the catalog is unreachable.
    trailer_end = pdf.rfind(b">>", 0, pdf.rfind(b"startxref"))
    offsets = sorted(
        {1, 4, 5, 8, 9, 15, 16, trailer_end - 1, trailer_end - 10}
        | {int(trailer_end * i / 40) for i in range(1, 40)}
    )
    # Ids name the cut's position in the list, not its byte offset: a generated file's size
    # may differ by a byte between processes (timestamps), and pytest-xdist workers must
    # collect the same ids.
    for number, off in enumerate(offsets):
        add(f"pdf-truncated-{number:02d}", "pdf-truncated", pdf[:off])
    # Cut after the trailer: every object is there, so the text must come back whole.
    for number, off in enumerate((trailer_end + 2, len(pdf) - 6, len(pdf) - 1)):
        add(
            f"pdf-truncated-tail-{number}",
            "pdf-truncated",
            pdf[:off],
            None,
            texts=tuple(PDF_PAGES),
        )

    for i, password in enumerate(["secret", "ünïcode-pässword", "x" * 32]):
        add(
            f"pdf-encrypted-{i}",
            "pdf-encrypted",
            make_pdf(["top secret"], encrypt_password=password),
        )

    for i, length in enumerate([0, 1, 10, 100, 1000, 5000, 20000]):
        header = [b"%PDF-", b"%PDF-1.4\n", b"%PDF-1.7\r\n%\xe2\xe3\xcf\xd3\n"][i % 3]
        add(f"pdf-garbage-after-header-{i}", "pdf-garbage", header + rng.randbytes(length))
    add("pdf-header-then-text", "pdf-garbage", b"%PDF-1.5\n" + b"just some words\n" * 50)
    add(
        "pdf-header-then-obj-soup",
        "pdf-garbage",
        b"%PDF-1.4\n" + b"1 0 obj\n<< /Type /Catalog /Pages 1 0 R >>\nendobj\n" * 20 + b"%%EOF\n",
    )

    for i, length in enumerate([3, 64, 512, 4096, 50_000]):
        add(f"pdf-random-{i}", "pdf-random", rng.randbytes(length))
    add("pdf-header-late", "pdf-random", rng.randbytes(2000) + pdf)  # %PDF- past 1 KiB

    # Damaged cross-reference data and trailers.
    xref = pdf.rfind(b"\nxref") + 1
    startxref = pdf.rfind(b"startxref")
    trailer = pdf.rfind(b"trailer")
    garbled = (
        pdf[:xref]
        + b"xref\n"
        + bytes(
            (b if not 0x30 <= b <= 0x39 else rng.randrange(0x30, 0x3A))
            for b in pdf[xref + 5 : trailer]
        )
        + pdf[trailer:]
    )
    add("pdf-xref-garbled-offsets", "pdf-xref", garbled, None, texts=tuple(PDF_PAGES))
    add("pdf-xref-deleted", "pdf-xref", pdf[:xref] + pdf[trailer:], None, texts=tuple(PDF_PAGES))
    add(
        "pdf-startxref-past-eof",
        "pdf-xref",
        pdf[:startxref] + b"startxref\n99999999\n%%EOF\n",
        None,
        texts=tuple(PDF_PAGES),
    )
    add("pdf-trailer-deleted", "pdf-xref", pdf[:trailer] + pdf[startxref:])
    add("pdf-xref-and-trailer-deleted", "pdf-xref", pdf[:xref] + pdf[startxref:])
    add("pdf-root-dangling", "pdf-xref", pdf.replace(b"/Root 6 0 R", b"/Root 99 0 R"))
    add(
        "pdf-xref-zeroed",
        "pdf-xref",
        pdf[:xref] + b"xref\n" + b"\0" * (trailer - xref - 5) + pdf[trailer:],
        None,
        texts=tuple(PDF_PAGES),
    )
    add(
        "pdf-xref-zeroed-no-trailer",
        "pdf-xref",
        pdf[:xref] + b"xref\n" + b"\0" * (trailer - xref - 5) + pdf[startxref:],
    )

    # Object streams (PDF 1.5): a hand-built file whose catalog and pages live in one.
    for variant in ("deflate-garbage", "bad-offsets", "truncated", "no-filter-data"):
        add(f"pdf-objstm-{variant}", "pdf-objstm", objstm_pdf(variant))
    # PDFium repairs these (it rescans the file): the one page must come back intact.
    for variant in ("bad-count", "xref-stream-broken"):
        add(f"pdf-objstm-{variant}", "pdf-objstm", objstm_pdf(variant), None, texts=(OBJSTM_TEXT,))

    add("pdf-no-text", "pdf-empty-result", make_pdf([""]))
    add("pdf-blank-pages", "pdf-empty-result", make_pdf(["", "   "]))
    return cases


def objstm_pdf(variant: str = "ok") -> bytes:
    """A PDF 1.5 whose catalog, page tree and page sit in a compressed object stream,
    indexed by a cross-reference stream; `variant` breaks one piece ("ok": intact)."""
    content = f"BT /F1 24 Tf 72 720 Td ({OBJSTM_TEXT}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> "
        b">> >> >>",
    ]
    numbers = [1, 2, 3]
    body = b""
    header_parts = []
    for number, obj in zip(numbers, objs, strict=True):
        header_parts.append(f"{number} {len(body)}".encode())
        body += obj + b"\n"
    head = b" ".join(header_parts) + b"\n"
    count = len(objs)
    if variant == "bad-count":
        count = 9
    if variant == "bad-offsets":
        head = b" ".join(f"{n} {999 + 7 * n}".encode() for n in numbers) + b"\n"
    raw = head + body
    packed = zlib.compress(raw)
    if variant == "deflate-garbage":
        packed = packed[:2] + bytes(b ^ 0xA5 for b in packed[2:])
    if variant == "truncated":
        packed = packed[: len(packed) // 2]
    if variant == "no-filter-data":
        packed = b""
    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    offsets[4] = len(out)
    out += (
        (
            f"4 0 obj\n<< /Type /ObjStm /N {count} /First {len(head)} /Filter /FlateDecode "
            f"/Length {len(packed)} >>\nstream\n"
        ).encode()
        + packed
        + b"\nendstream\nendobj\n"
    )
    offsets[5] = len(out)
    out += f"5 0 obj\n<< /Length {len(content)} >>\nstream\n".encode() + content
    out += b"\nendstream\nendobj\n"
    # Cross-reference stream (object 6): type 1 = offset, type 2 = in object stream 4.
    rows = [b"\x00\x00\x00\x00\xff\xff"]
    for index in range(3):
        rows.append(b"\x02" + struct.pack(">I", 4) + struct.pack(">B", index))
    rows.append(b"\x01" + struct.pack(">I", offsets[4]) + b"\x00")
    rows.append(b"\x01" + struct.pack(">I", offsets[5]) + b"\x00")
    xref_at = len(out)
    rows.append(b"\x01" + struct.pack(">I", xref_at) + b"\x00")
    xdata = zlib.compress(b"".join(rows))
    if variant == "xref-stream-broken":
        xdata = bytes(b ^ 0x5A for b in xdata)
    out += (
        (
            f"6 0 obj\n<< /Type /XRef /Size 7 /W [1 4 1] /Root 1 0 R /Filter /FlateDecode "
            f"/Length {len(xdata)} >>\nstream\n"
        ).encode()
        + xdata
        + b"\nendstream\nendobj\n"
    )
    out += f"startxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


# --------------------------------------------------------------------------------- PPTX


@functools.cache
def real_pptx() -> bytes:
    return make_pptx(
        [
            {"title": "Agenda", "texts": ["hello deck"], "pictures": [make_image()]},
            {"texts": ["two"]},
        ]
    )


def _rezip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in members.items():
            out.writestr(name, data)
    return buffer.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _patch_sizes(data: bytes, sizes: dict[str, int]) -> bytes:
    """Rewrite the declared uncompressed size of members in the central directory."""
    out = bytearray(data)
    pos = out.find(b"PK\x01\x02")
    while pos != -1:
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", out, pos + 28)
        name = bytes(out[pos + 46 : pos + 46 + name_len]).decode()
        if name in sizes:
            struct.pack_into("<I", out, pos + 24, sizes[name])
        pos = out.find(b"PK\x01\x02", pos + 46 + name_len + extra_len + comment_len)
    return bytes(out)


def ratio_bomb(megabytes: int = 64) -> bytes:
    """A deck whose first slide inflates from ~64 KiB to `megabytes` MiB of blanks."""
    members = _members(real_pptx())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for name, data in members.items():
            if name != "ppt/slides/slide1.xml":
                out.writestr(name, data)
                continue
            with out.open(name, "w") as part:
                part.write(data[: -len(b"</p:sld>")])
                block = b" " * (1024 * 1024)
                for _ in range(megabytes):
                    part.write(block)
                part.write(b"</p:sld>")
    return buffer.getvalue()


def total_size_bomb() -> bytes:
    """Three media parts that each declare 200 MiB (under the per-part limit, ratio < 200)
    but together exceed the 512 MiB total."""
    rng = random.Random(SEED)
    members = _members(real_pptx())
    for i in range(3):
        members[f"ppt/media/filler{i}.bin"] = rng.randbytes(1_100_000)
    data = _rezip(members)
    return _patch_sizes(data, {f"ppt/media/filler{i}.bin": 200 * 1024 * 1024 for i in range(3)})


def many_parts_bomb(parts: int = 10_050) -> bytes:
    members = _members(real_pptx())
    for i in range(parts):
        members[f"ppt/junk/{i}.xml"] = b"<a/>"
    return _rezip(members)


def _pptx_cases(rng: random.Random) -> list[Case]:
    deck = real_pptx()
    members = _members(deck)
    cases: list[Case] = []

    def add(
        cid: str,
        cat: str,
        build: Callable[[], bytes],
        expected: type[Exception] | None = ValueError,
        texts: tuple[str, ...] = (),
        isolate: bool = False,
    ) -> None:
        cases.append(Case(cid, cat, f"{cid}.pptx", PPTParser, expected, build, texts, isolate))

    def without(*names: str) -> Callable[[], bytes]:
        return lambda: _rezip({k: v for k, v in members.items() if k not in names})

    def replaced(name: str, data: bytes) -> Callable[[], bytes]:
        return lambda: _rezip({**members, name: data})

    # Zip archives that are not decks.
    add("zip-empty", "zip-not-pptx", lambda: _rezip({}))
    add("zip-one-text-file", "zip-not-pptx", lambda: _rezip({"readme.txt": b"hello"}))
    add(
        "zip-docx-like",
        "zip-not-pptx",
        lambda: _rezip(
            {
                "[Content_Types].xml": b'<?xml version="1.0"?><Types xmlns="http://schemas.'
                b'openxmlformats.org/package/2006/content-types"><Default Extension="xml" '
                b'ContentType="application/xml"/></Types>',
                "word/document.xml": b"<w:document/>",
            }
        ),
    )
    add(
        "zip-random-members",
        "zip-not-pptx",
        lambda: _rezip({f"f{i}.bin": rng.randbytes(100) for i in range(5)}),
    )
    add("zip-nested-pptx", "zip-not-pptx", lambda: _rezip({"deck.pptx": deck}))
    add(
        "zip-stored-encrypted-flag", "zip-not-pptx", lambda: _set_flag(_rezip(members), 0x1)
    )  # every member claims encryption
    add(
        "zip-pptx-content-type-wrong",
        "zip-not-pptx",
        replaced(
            "[Content_Types].xml",
            members["[Content_Types].xml"].replace(b"presentation.main+xml", b"template.main+xml"),
        ),
    )

    # Missing essential parts.
    for name in (
        "[Content_Types].xml",
        "_rels/.rels",
        "ppt/presentation.xml",
        "ppt/_rels/presentation.xml.rels",
        "ppt/slides/slide1.xml",
        "ppt/slides/_rels/slide1.xml.rels",
        "ppt/slides/slide2.xml",
        "ppt/media/image1.png",
    ):
        slug = name.replace("/", "_").replace("[", "").replace("]", "").replace(".", "_")
        add(f"pptx-missing-{slug}", "pptx-missing-part", without(name))
    add(
        "pptx-missing-all-slides",
        "pptx-missing-part",
        without(
            "ppt/slides/slide1.xml",
            "ppt/slides/slide2.xml",
            "ppt/slides/_rels/slide1.xml.rels",
            "ppt/slides/_rels/slide2.xml.rels",
        ),
    )
    # Parts the text does not depend on: the deck must still read whole.
    for name in ("docProps/core.xml", "docProps/app.xml", "ppt/theme/theme1.xml"):
        slug = name.replace("/", "_").replace(".", "_")
        add(
            f"pptx-missing-optional-{slug}",
            "pptx-missing-part",
            without(name),
            None,
            texts=(*DECK_TEXTS[:1], "<picture>", DECK_TEXTS[1]),
        )

    # Broken XML in parts that are read.
    for name in (
        "[Content_Types].xml",
        "_rels/.rels",
        "ppt/presentation.xml",
        "ppt/_rels/presentation.xml.rels",
        "ppt/slides/slide1.xml",
        "ppt/slides/_rels/slide1.xml.rels",
    ):
        slug = name.replace("/", "_").replace("[", "").replace("]", "").replace(".", "_")
        original = members[name]
        add(
            f"pptx-xml-truncated-{slug}",
            "pptx-broken-xml",
            replaced(name, original[: len(original) // 2]),
        )
        add(f"pptx-xml-garbage-{slug}", "pptx-broken-xml", replaced(name, rng.randbytes(200)))
        add(f"pptx-xml-empty-{slug}", "pptx-broken-xml", replaced(name, b""))
    add(
        "pptx-xml-unclosed-slide",
        "pptx-broken-xml",
        replaced(
            "ppt/slides/slide1.xml", members["ppt/slides/slide1.xml"].replace(b"</p:sld>", b"")
        ),
    )
    add(
        "pptx-xml-deep-nesting",
        "pptx-broken-xml",
        replaced("ppt/slides/slide1.xml", b"<a>" * 100_000 + b"</a>" * 100_000),
    )

    # Damaged archives.
    for frac in (0.05, 0.25, 0.5, 0.75, 0.95, 0.999):
        cut = int(len(deck) * frac)
        add(f"pptx-truncated-{frac}", "pptx-truncated", _const(deck[:cut]))
    add(
        "pptx-crc-mismatch",
        "pptx-truncated",
        lambda: _corrupt_member(deck, "ppt/slides/slide1.xml"),
    )
    add(
        "pptx-size-understated",
        "pptx-truncated",
        lambda: _patch_sizes(deck, {"ppt/slides/slide1.xml": 10}),
    )

    # Zip bombs: refused from the zip directory, before anything is inflated.
    add("pptx-bomb-ratio", "pptx-zip-bomb", ratio_bomb, ArchiveTooLargeError, isolate=True)
    add(
        "pptx-bomb-declared-4gib",
        "pptx-zip-bomb",
        lambda: _patch_sizes(deck, {"ppt/slides/slide1.xml": 0xFFFF_FFF0}),
        ArchiveTooLargeError,
        isolate=True,
    )
    add(
        "pptx-bomb-total-size", "pptx-zip-bomb", total_size_bomb, ArchiveTooLargeError, isolate=True
    )
    add(
        "pptx-bomb-many-parts", "pptx-zip-bomb", many_parts_bomb, ArchiveTooLargeError, isolate=True
    )
    return cases


def _set_flag(data: bytes, flag: int) -> bytes:
    out = bytearray(data)
    for sig, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        pos = out.find(sig)
        while pos != -1:
            (bits,) = struct.unpack_from("<H", out, pos + offset)
            struct.pack_into("<H", out, pos + offset, bits | flag)
            pos = out.find(sig, pos + 4)
    return bytes(out)


def _set_field(data: bytes, sig: bytes, offset: int, value: int) -> bytes:
    """Set a 2-byte field at `offset` in every zip record that starts with `sig`."""
    out = bytearray(data)
    pos = out.find(sig)
    while pos != -1:
        struct.pack_into("<H", out, pos + offset, value)
        pos = out.find(sig, pos + 4)
    return bytes(out)


def _corrupt_member(data: bytes, name: str) -> bytes:
    """Flip bytes inside one member's compressed data (its CRC no longer matches)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(name)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    out = bytearray(data)
    for i in range(start + 2, start + min(info.compress_size, 40)):
        out[i] ^= 0xFF
    return bytes(out)


# -------------------------------------------------------------------------------- images


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))
        + kind
        + payload
        + struct.pack(">I", zlib.crc32(kind + payload))
    )


def png_with(width: int, height: int, idat: bytes | None = None) -> bytes:
    """A PNG with an honest-looking header of any size and `idat` as its data."""
    if idat is None:
        idat = zlib.compress(b"\0" * 64)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


def gif_with(width: int, height: int) -> bytes:
    return (
        b"GIF89a"
        + struct.pack("<HH", width, height)
        + b"\x00\x00\x00"
        + b"\x2c"
        + struct.pack("<HHHH", 0, 0, width, height)
        + b"\x00\x02\x02\x44\x01\x00\x3b"
    )


def bmp_with(width: int, height: int) -> bytes:
    header = struct.pack("<2sIHHI", b"BM", 54 + 16, 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, 16, 2835, 2835, 0, 0)
    return header + info + b"\0" * 16


def jpeg_with(width: int, height: int) -> bytes:
    """A real small JPEG whose SOF0 frame header is rewritten to claim `width`x`height`."""
    data = bytearray(make_image("JPEG", size=(16, 16)))
    sof = data.find(b"\xff\xc0")
    struct.pack_into(">HH", data, sof + 5, height, width)
    return bytes(data)


def webp_vp8l_with(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    payload = b"\x2f" + struct.pack("<I", bits) + b"\0" * 16
    chunk = b"VP8L" + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def _image_cases(rng: random.Random) -> list[Case]:
    cases: list[Case] = []

    def add(
        cid: str,
        cat: str,
        name: str,
        build: Callable[[], bytes],
        parser: type[ParserBase] = ImageParser,
        expected: type[Exception] = ValueError,
    ) -> None:
        cases.append(Case(cid, cat, name, parser, expected, build))

    images = {fmt: make_image(fmt, size=(64, 48)) for fmt in ("PNG", "JPEG", "GIF", "BMP", "WEBP")}
    ext = {"PNG": "png", "JPEG": "jpg", "GIF": "gif", "BMP": "bmp", "WEBP": "webp"}
    for fmt, data in images.items():
        for frac in (0.02, 0.2, 0.5, 0.8, 0.97):
            cut = max(1, int(len(data) * frac))
            add(
                f"img-truncated-{fmt.lower()}-{frac}",
                "image-truncated",
                f"trunc-{cut}.{ext[fmt]}",
                _const(data[:cut]),
            )

    # Huge declared dimensions: refused from the header, nothing decoded.
    for cid, name, build in (
        ("png-100000x100000", "bomb.png", lambda: png_with(100_000, 100_000)),
        ("png-20000x20000", "bomb2.png", lambda: png_with(20_000, 20_000)),
        ("png-1x2147483647", "tall.png", lambda: png_with(1, 2_147_483_647)),
        ("gif-65535x65535", "bomb.gif", lambda: gif_with(65_535, 65_535)),
        ("bmp-100000x100000", "bomb.bmp", lambda: bmp_with(100_000, 100_000)),
        ("jpeg-65500x65500", "bomb.jpg", lambda: jpeg_with(65_500, 65_500)),
        ("webp-16384x16384", "bomb.webp", lambda: webp_vp8l_with(16_384, 16_384)),
    ):
        add(f"img-bomb-{cid}", "image-bomb", name, build)

    # Corrupt pixel data or headers.
    add("img-png-bad-zlib", "image-corrupt", "badzlib.png", lambda: png_with(64, 64, b"not zlib!"))
    add(
        "img-png-short-idat",
        "image-corrupt",
        "short.png",
        lambda: png_with(640, 480, zlib.compress(b"\0" * 100)),
    )
    add("img-png-zero-size", "image-corrupt", "zero.png", lambda: png_with(0, 0))
    add(
        "img-png-bad-crc",
        "image-corrupt",
        "crc.png",
        lambda: (
            images["PNG"][:40] + bytes(b ^ 0xFF for b in images["PNG"][40:48]) + images["PNG"][48:]
        ),
    )
    add("img-gif-zero-size", "image-corrupt", "zero.gif", lambda: gif_with(0, 0))
    add(
        "img-gif-bad-lzw",
        "image-corrupt",
        "lzw.gif",
        lambda: images["GIF"][:-20] + rng.randbytes(19) + b";",
    )
    add("img-bmp-bad-header", "image-corrupt", "hdr.bmp", lambda: b"BM" + rng.randbytes(60))
    add(
        "img-jpeg-garbage-after-soi",
        "image-corrupt",
        "soi.jpg",
        lambda: b"\xff\xd8\xff" + rng.randbytes(500),
    )
    add(
        "img-webp-garbage",
        "image-corrupt",
        "riff.webp",
        lambda: b"RIFF" + struct.pack("<I", 600) + b"WEBP" + rng.randbytes(600),
    )
    # Found by atheris: Pillow's own ValueError ("tile cannot extend outside image") escaped
    # without the file name.
    add(
        "img-gif-tile-outside",
        "image-corrupt",
        "tile.gif",
        _const(
            base64.b64decode(
                "R0lGODdhDAAJAIEAAP7/9gAAAAAAAAAAACwAAQAAAAAAABoAAAAMAAkAAAgUAAEIHEiwoMGDCBOuKlzIsKHDgQEBADs="
            )
        ),
    )
    for i, fmt in enumerate(("png", "jpg", "gif", "webp")):
        add(
            f"img-random-{fmt}",
            "image-corrupt",
            f"random{i}.{fmt}",
            _const(rng.randbytes(300 * (i + 1))),
        )

    # Lying extensions: the content is something else (or nothing an image parser reads).
    pdf, deck = real_pdf(), real_pptx()
    for cid, name, data, parser in (
        ("pdf-as-png", "doc.png", pdf, ImageParser),
        ("pptx-as-jpg", "deck.jpg", deck, ImageParser),
        ("text-as-gif", "notes.gif", TEXT.encode(), ImageParser),
        ("html-as-webp", "page.webp", b"<html><body>hi</body></html>", ImageParser),
        ("png-as-pdf", "image.pdf", images["PNG"], PDFParser),
        ("jpeg-as-pdf", "photo.pdf", images["JPEG"], PDFParser),
        ("png-as-pptx", "image.pptx", images["PNG"], PPTParser),
        ("pdf-as-pptx", "doc.pptx", pdf, PPTParser),
        ("png-as-txt", "image.txt", images["PNG"], TextParser),
        ("jpeg-as-md", "photo.md", images["JPEG"], MarkdownParser),
        ("gif-as-csv", "anim.csv", images["GIF"], TextParser),
        ("pdf-as-txt", "doc.txt", pdf, TextParser),
        ("pptx-as-json", "deck.json", deck, TextParser),
        ("webp-as-html", "img.html", images["WEBP"], HTMLParser),
        ("bmp-as-xml", "img.xml", images["BMP"], TextParser),
    ):
        cases.append(
            Case(
                f"lying-{cid}",
                "lying-extension",
                name,
                parser,
                ValueError,
                _const(data),
                isolate=parser is PDFParser,
            )
        )
    return cases


# ---------------------------------------------------------------------------------- text


# The parser the registry picks for a text-based extension (TextParser for the rest).
TEXT_PARSERS: dict[str, type[ParserBase]] = {
    "html": HTMLParser,
    "htm": HTMLParser,
    "md": MarkdownParser,
    "markdown": MarkdownParser,
    "rst": RSTParser,
}


def _text_cases(rng: random.Random) -> list[Case]:
    cases: list[Case] = []
    good = TEXT.encode("utf-8")

    def add(cid: str, cat: str, data: bytes, name: str | None = None) -> None:
        name = name or f"{cid}.txt"
        parser = TEXT_PARSERS.get(name.rsplit(".", 1)[-1], TextParser)
        cases.append(Case(cid, cat, name, parser, ValueError, _const(data)))

    for off in (0, 1, 2, 10, 63, 64, 65, 100, len(good) // 2, len(good) - 1, len(good)):
        for bad in (b"\xff", b"\x80"):
            add(
                f"text-invalid-{bad.hex()}-at-{off}",
                "text-invalid-utf8",
                good[:off] + bad + good[off:],
            )
    for cid, seq in (
        ("cut-2byte", b"caf\xc3"),
        ("cut-3byte", b"\xe6\x97"),
        ("cut-4byte", b"\xf0\x9f\x99"),
        ("overlong-slash", b"\xc0\xaf"),
        ("overlong-nul", b"\xc0\x80"),
        ("surrogate-d800", b"\xed\xa0\x80"),
        ("above-10ffff", b"\xf4\x90\x80\x80"),
        ("five-byte", b"\xf8\x88\x80\x80\x80"),
        ("lone-continuation", b"\xbf\xbf"),
    ):
        add(f"text-{cid}", "text-invalid-utf8", good + seq)

    jp = "日本語のテキストです。文字化けを検出します。" * 5
    zh = "中文文本，用于检测错误的编码。" * 5
    # Legacy encodings and BOM-marked UTF-16/32 are detected and must read back exactly.
    for cid, text, codec in (
        ("latin1", "café résumé naïve déjà vu " * 10, "latin-1"),
        ("cp1252-quotes", "“smart quotes” – and — dashes " * 10, "cp1252"),
        ("shift-jis", jp, "shift_jis"),
        ("euc-jp", jp, "euc_jp"),
        ("gbk", zh, "gbk"),
        ("gb18030", "检索增强生成把文档切成块。" * 5, "gb18030"),
        ("big5", "繁體中文文本測試編碼。" * 5, "big5"),
        ("euc-kr", "한국어 텍스트 인코딩 " * 10, "euc_kr"),
        ("koi8-r", "Привет мир, это текст " * 10, "koi8_r"),
        ("utf16-le-bom", TEXT, "utf-16"),
        ("utf16-be-bom", TEXT, "utf-16-be"),
        ("utf32", TEXT, "utf-32"),
    ):
        data = text.encode(codec)
        if codec == "utf-16-be":
            data = b"\xfe\xff" + data
        cases.append(
            Case(
                f"text-encoding-{cid}",
                "text-other-encoding",
                f"text-encoding-{cid}.txt",
                TextParser,
                None,
                _const(data),
                (text,),
            )
        )
    # No BOM and NULs, or two encodings in one file: a clear error, never mojibake.
    for cid, data in (
        ("utf16-be", TEXT.encode("utf-16-be")),
        ("utf16-le-ascii", ("plain ascii text " * 10).encode("utf-16-le")),
        ("utf16-bom-odd-length", TEXT.encode("utf-16")[:-1]),
        ("mixed-utf8-latin1", good + ("déjà vu " * 10).encode("latin-1") + good),
        ("mixed-utf8-gbk", good + zh.encode("gbk")),
    ):
        add(f"text-encoding-{cid}", "text-wrong-encoding", data)

    for cid, data in (
        ("start", b"\0" + good),
        ("middle", good[:50] + b"\0" + good[50:]),
        ("end", good + b"\0"),
        ("many", b"\0" * 1000),
        ("every-other", b"a\0" * 500),
    ):
        add(f"text-nul-{cid}", "text-nul", data)
    for ext in ("md", "csv", "json", "xml", "yaml", "html", "rst"):
        add(f"text-nul-{ext}", "text-nul", good + b"\0\0\0", f"nul.{ext}")

    for cid, data in (
        ("spaces", b"   "),
        ("newlines", b"\n\n\r\n"),
        ("bom-only", b"\xef\xbb\xbf"),
        ("bom-whitespace", b"\xef\xbb\xbf \t\n"),
        ("nbsp", "\u00a0\u3000".encode()),
    ):
        add(f"text-blank-{cid}", "text-blank", data)
    add("text-random-binary", "text-wrong-encoding", rng.randbytes(4096))
    return cases


# ---------------------------------------------------------------------------- DOCX / XLSX

DOCX_TEXTS = ("# Report\n\nQuarterly numbers.\n\n| k | v |\n| --- | --- |\n| a | 1 |",)
XLSX_TEXTS = ("Sheet: Data\n| k | v |\n| --- | --- |\n| a | 1 |",)

BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + b"".join(
        f' <!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'.encode()
        for i in range(1, 10)
    )
    + b"]>\n"
)
XXE = b'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'


@functools.cache
def real_docx() -> bytes:
    return make_docx(
        [("h1", "Report"), ("p", "Quarterly numbers."), ("table", [["k", "v"], ["a", "1"]])]
    )


@functools.cache
def real_xlsx() -> bytes:
    return make_xlsx({"Data": [["k", "v"], ["a", 1]]})


def _with_doctype(xml: bytes, doctype: bytes, entity: bytes) -> bytes:
    """`xml` with `doctype` in front and `entity` put into its first text node."""
    body = xml.split(b"?>", 1)[1] if xml.startswith(b"<?xml") else xml
    for tag in (b"<w:t>", b"<w:t ", b"<t>", b"<v>"):
        at = body.find(tag)
        if at != -1:
            close = body.find(b">", at) + 1
            return doctype + body[:close] + entity + body[close:]
    raise ValueError("no text node")


def _office_cases(rng: random.Random) -> list[Case]:
    cases: list[Case] = []
    for kind, real, parser, main, texts in (
        ("docx", real_docx, WordParser, "word/document.xml", DOCX_TEXTS),
        ("xlsx", real_xlsx, ExcelParser, "xl/worksheets/sheet1.xml", XLSX_TEXTS),
    ):
        data = real()
        members = _members(data)

        def add(
            cid: str,
            cat: str,
            build: Callable[[], bytes],
            expected: type[Exception] | None = ValueError,
            texts: tuple[str, ...] = (),
            isolate: bool = False,
            kind: str = kind,
            parser: type[ParserBase] = parser,
        ) -> None:
            cases.append(
                Case(
                    f"{kind}-{cid}",
                    f"{kind}-{cat}",
                    f"{kind}-{cid}.{kind}",
                    parser,
                    expected,
                    build,
                    texts,
                    isolate,
                )
            )

        def replaced(
            name: str, blob: bytes, members: dict[str, bytes] = members
        ) -> Callable[[], bytes]:
            return lambda: _rezip({**members, name: blob})

        def without(name: str, members: dict[str, bytes] = members) -> Callable[[], bytes]:
            return lambda: _rezip({k: v for k, v in members.items() if k != name})

        add("intact", "intact", _const(data), None, texts)
        for frac in (0.05, 0.3, 0.6, 0.9, 0.999):
            cut = int(len(data) * frac)
            add(f"truncated-{frac}", "truncated", _const(data[:cut]))
        add("crc-mismatch", "truncated", lambda data=data, main=main: _corrupt_member(data, main))
        add("random", "truncated", _const(b"PK\x03\x04" + rng.randbytes(3000)))
        for name in ("[Content_Types].xml", main):
            slug = name.replace("/", "_").replace("[", "").replace("]", "").replace(".", "_")
            add(f"missing-{slug}", "missing-part", without(name))
            original = members[name]
            add(
                f"xml-truncated-{slug}",
                "broken-xml",
                replaced(name, original[: len(original) // 2]),
            )
            add(f"xml-garbage-{slug}", "broken-xml", replaced(name, rng.randbytes(300)))
        add(
            "xml-deep-nesting",
            "broken-xml",
            replaced(main, b"<a>" * 100_000 + b"</a>" * 100_000),
        )
        # XML entity attacks: refused, or the entities are left unexpanded.
        add(
            "billion-laughs",
            "entity-bomb",
            replaced(main, _with_doctype(members[main], BILLION_LAUGHS, b"&lol9;")),
            isolate=True,
        )
        add(
            "external-entity",
            "entity-bomb",
            replaced(main, _with_doctype(members[main], XXE, b"&xxe;")),
            isolate=True,
        )
        add(
            "bomb-ratio",
            "zip-bomb",
            lambda members=members, main=main: _ratio_bomb(members, main),
            ArchiveTooLargeError,
            isolate=True,
        )
        add(
            "bomb-declared-4gib",
            "zip-bomb",
            lambda data=data, main=main: _patch_sizes(data, {main: 0xFFFF_FFF0}),
            ArchiveTooLargeError,
        )
        add(
            "bomb-many-parts",
            "zip-bomb",
            lambda members=members: _rezip(
                {**members, **{f"junk/{i}.xml": b"<a/>" for i in range(10_050)}}
            ),
            ArchiveTooLargeError,
            isolate=True,
        )
    # A row numbered far past Excel's limit: openpyxl would yield every missing row first.
    cases.append(
        Case(
            "xlsx-row-number-huge",
            "xlsx-broken-xml",
            "xlsx-row-number-huge.xlsx",
            ExcelParser,
            ValueError,
            lambda: _rezip(
                {
                    **_members(real_xlsx()),
                    "xl/worksheets/sheet1.xml": b'<worksheet xmlns="http://schemas.openxmlformats'
                    b'.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr">'
                    b'<is><t>x</t></is></c></row><row r="9999999999"><c r="A9999999999" '
                    b't="inlineStr"><is><t>y</t></is></c></row></sheetData></worksheet>',
                }
            ),
        )
    )
    # The other Office kind, or a deck, under the wrong extension.
    for cid, name, blob, parser in (
        ("xlsx-as-docx", "book.docx", real_xlsx, WordParser),
        ("docx-as-xlsx", "doc.xlsx", real_docx, ExcelParser),
        ("pptx-as-docx", "deck.docx", real_pptx, WordParser),
        ("docx-as-pptx", "doc.pptx", real_docx, PPTParser),
    ):
        cases.append(Case(f"lying-{cid}", "lying-extension", name, parser, ValueError, blob))
    return cases


def _ratio_bomb(members: dict[str, bytes], name: str, megabytes: int = 64) -> bytes:
    """`members` re-zipped with part `name` padded by `megabytes` MiB of blanks."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for member, data in members.items():
            if member != name:
                out.writestr(member, data)
                continue
            with out.open(member, "w") as part:
                part.write(data)
                block = b" " * (1024 * 1024)
                for _ in range(megabytes):
                    part.write(block)
    return buffer.getvalue()


# -------------------------------------------------------------------------- HTML / Markdown


def _markup_cases() -> list[Case]:
    cases: list[Case] = []

    def add(
        cid: str,
        name: str,
        parser: type[ParserBase],
        data: bytes,
        expected: type[Exception] | None = ValueError,
        texts: tuple[str, ...] = (),
    ) -> None:
        cases.append(Case(cid, "markup", name, parser, expected, _const(data), texts))

    add(
        "html-only-chrome",
        "chrome.html",
        HTMLParser,
        b"<html><head><style>p{}</style></head><body><nav>menu</nav><footer>f</footer></body></html>",
    )
    add("html-utf16-no-bom", "u16.html", HTMLParser, "<p>hello</p>".encode("utf-16-le"))
    add(
        "html-deep-nesting",
        "deep.html",
        HTMLParser,
        b"<div>" * 100_000 + b"<p>deep</p>" + b"</div>" * 100_000,
    )
    add(
        "html-nesting-under-limit",
        "deep2.html",
        HTMLParser,
        b"<div>" * 4_000 + b"<p>deep" + b"</div>" * 4_000,
        None,
        ("deep",),
    )
    add(
        "html-unclosed-everything",
        "open.html",
        HTMLParser,
        b"<html><body><h1>Title<p>text <b>bold <i>both",
        None,
        ("# Title text bold both",),
    )
    add(
        "html-latin1-declared",
        "latin.html",
        HTMLParser,
        '<meta charset="iso-8859-1"><p>Grüße</p>'.encode("latin-1"),
        None,
        ("Grüße",),
    )
    add(
        "md-only-headings",
        "heads.md",
        MarkdownParser,
        b"# A\n## B\n### C\n",
        None,
        ("# A\n\n## B\n\n### C",),
    )
    add(
        "md-deep-blockquote",
        "quote.md",
        MarkdownParser,
        b">" * 10_000 + b" deep",
        None,
        (">" * 10_000 + " deep",),
    )
    add(
        "md-unclosed-fence",
        "fence.md",
        MarkdownParser,
        b"# Code\n```python\nprint(1)\n",
        None,
        ("# Code\n\n```python\nprint(1)",),
    )
    add(
        "rst-only-titles",
        "titles.rst",
        RSTParser,
        b"Title\n=====\n\nSub\n---\n",
        None,
        ("# Title\n\n## Sub",),
    )
    add(
        "rst-gbk",
        "zh.rst",
        RSTParser,
        "标题\n====\n\n中文正文，检索增强生成。\n".encode("gbk"),
        None,
        ("# 标题\n\n中文正文，检索增强生成。",),
    )
    return cases


# ---------------------------------------------------------------------------------- empty


_ALL_EXTENSIONS = (
    "pdf",
    "pptx",
    "docx",
    "xlsx",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "bmp",
    "webp",
    "txt",
    "text",
    "log",
    "md",
    "markdown",
    "csv",
    "html",
    "htm",
    "rst",
    "json",
    "xml",
    "yaml",
    "yml",
)


def _empty_cases() -> list[Case]:
    parser_for = {
        "pdf": PDFParser,
        "pptx": PPTParser,
        "docx": WordParser,
        "xlsx": ExcelParser,
        "png": ImageParser,
        "jpg": ImageParser,
        "jpeg": ImageParser,
        "gif": ImageParser,
        "bmp": ImageParser,
        "webp": ImageParser,
    }
    cases = [
        Case(
            f"empty-{ext}",
            "empty",
            f"empty.{ext}",
            parser_for.get(ext, TEXT_PARSERS.get(ext, TextParser)),
            ValueError,
            _const(b""),
        )
        for ext in _ALL_EXTENSIONS
    ]
    cases.append(
        Case(
            "empty-no-extension", "empty", "EMPTYFILE", None, UnsupportedFileTypeError, _const(b"")
        )
    )
    cases.append(
        Case(
            "binary-no-extension",
            "empty",
            "BLOBFILE",
            None,
            UnsupportedFileTypeError,
            _const(b"\0\1\2\3" * 100),
        )
    )
    return cases


@functools.cache
def corpus() -> tuple[Case, ...]:
    rng = random.Random(SEED)
    cases = [
        *_pdf_cases(rng),
        *_pptx_cases(rng),
        *_image_cases(rng),
        *_text_cases(rng),
        *_office_cases(rng),
        *_markup_cases(),
        *_empty_cases(),
    ]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return tuple(cases)


def by_id() -> dict[str, Case]:
    return {c.id: c for c in corpus()}


# -------------------------------------------------------------------------- shared runner


def describe(sections: list[object]) -> list[str]:
    """What a parse returned, comparable with `Case.texts` (pictures as "<picture>")."""
    out = []
    for section in sections:
        content = section.content  # type: ignore[attr-defined]
        out.append(content.text if hasattr(content, "text") else "<picture>")
    return out


async def parse_case(case: Case, path: Path, mode: str) -> list[object]:
    """Parse `case` through the default registry: from the file at `path` or from bytes."""
    from archivist.rag.parser import default_registry

    registry = default_registry()
    if mode == "path":
        parser = registry.parser_for_path(path)
        source: bytes | str = str(path)
    else:
        parser = registry.parser_for(case.filename, head=case.data[:4096])
        source = case.data
    if case.parser is not None:
        assert isinstance(parser, case.parser), f"{case.id}: registry picked {parser!r}"
    return list(await parser.parse(source, case.filename))


def _worker(ids: list[str], memory_limit: int) -> None:
    import asyncio
    import resource
    import tempfile
    import traceback

    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    cases = by_id()
    with tempfile.TemporaryDirectory() as tmp:
        for cid in ids:
            case = cases[cid]
            path = Path(tmp) / case.filename
            path.write_bytes(case.data)
            for mode in ("path", "bytes"):
                print(json.dumps({"start": cid, "mode": mode}), flush=True)
                result: dict[str, object] = {"id": cid, "mode": mode}
                try:
                    sections = asyncio.run(parse_case(case, path, mode))
                    result.update(error=None, texts=describe(sections))
                except BaseException as exc:  # report everything, the test judges it
                    result.update(
                        error=type(exc).__name__,
                        mro=[k.__name__ for k in type(exc).__mro__],
                        message=str(exc),
                        trace=traceback.format_exc(limit=3)[-600:],
                    )
                print(json.dumps(result), flush=True)
            path.unlink()
            case.__dict__.pop("data", None)  # free the big ones


if __name__ == "__main__":
    _worker(sys.argv[2:], int(sys.argv[1]))
