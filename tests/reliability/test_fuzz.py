"""Fuzzing the parsers and the chunker: only the documented exceptions may escape.

- hypothesis: random and mutated bytes of real PDFs, PPTX decks, images and text through
  each parser (a parse either fails with a ValueError naming the file or returns Sections);
  random text and sizes through the chunker (its invariants hold). PDFium runs native code,
  so the PDF fuzz runs in a child pytest process: a segfault fails that test only.
- atheris (when installed): a short, bounded coverage-guided run in a subprocess.

`ARCHIVIST_FUZZ_EXAMPLES` sets the hypothesis examples per target (default 60).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag.chunker import ApproxTokenChunker
from archivist.rag.document import Section
from archivist.rag.parser import (
    ExcelParser,
    HTMLParser,
    ImageParser,
    MarkdownParser,
    ParserBase,
    PDFParser,
    PPTParser,
    RSTParser,
    TextParser,
    WordParser,
)
from factories import make_docs_page, make_docx, make_image, make_pdf, make_pptx, make_xlsx

EXAMPLES = int(os.environ.get("ARCHIVIST_FUZZ_EXAMPLES", "60"))
CHILD_ENV = "ARCHIVIST_FUZZ_CHILD"
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _seeds() -> dict[str, list[bytes]]:
    png = make_image("PNG", size=(8, 8))
    return {
        "pdf": [make_pdf(["Fuzz page one", "Page two"])],
        "pptx": [
            make_pptx([{"title": "T", "texts": ["a", "b"], "table": [["h", "i"], ["1", "2"]]}])
        ],
        "image": [make_image(fmt, size=(12, 9)) for fmt in ("PNG", "JPEG", "GIF", "BMP", "WEBP")],
        "text": ["Plain text, café, 日本語 🙂\nsecond line\n".encode()],
        "docx": [
            make_docx(
                [("h1", "T"), ("p", "para"), ("table", [["h", "i"], ["1", "2"]]), ("image", png)]
            )
        ],
        "xlsx": [make_xlsx({"S": [["k", "v"], ["a", 1], ["b", 2.5]], "T": [["x"]]})],
        "html": [make_docs_page(chapters=1).encode()],
        "markup": [
            b"---\ntitle: x\n---\n# A\n\ntext\n\n```py\ncode\n```\n\n## B\n- item\n",
            "Title\n=====\n\nBody café.\n\nSub\n---\n\n::\n\n    literal\n".encode(),
        ],
    }


SEEDS = _seeds()


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> bytes:
    """A seed file of `kind` with a few random edits, or plain random bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=2048))
    data = bytearray(draw(st.sampled_from(SEEDS[kind])))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "duplicate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= draw(st.integers(1, 255))
        elif op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=64))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 256))]
        else:
            data[pos:pos] = data[pos : pos + draw(st.integers(1, 512))]
    return bytes(data)


def _parse_or_value_error(parser: ParserBase, data: bytes, filename: str) -> None:
    try:
        sections = asyncio.run(asyncio.wait_for(parser.parse(data, filename), 30))
    except ValueError as exc:
        assert filename in str(exc), str(exc)
        return
    assert sections, "a parse that succeeds must not be empty"
    assert all(s.source == filename for s in sections)


@FUZZ
@given(data=mutated("pptx"))
def test_fuzz_pptx(data: bytes) -> None:
    _parse_or_value_error(PPTParser(), data, "fuzz.pptx")


@FUZZ
@given(data=mutated("image"))
def test_fuzz_image(data: bytes) -> None:
    _parse_or_value_error(ImageParser(), data, "fuzz.png")


@FUZZ
@given(data=mutated("text") | st.binary(max_size=512))
def test_fuzz_text_bytes(data: bytes) -> None:
    _parse_or_value_error(TextParser(), data, "fuzz.txt")


@FUZZ
@given(data=mutated("docx"))
def test_fuzz_docx(data: bytes) -> None:
    _parse_or_value_error(WordParser(), data, "fuzz.docx")


@FUZZ
@given(data=mutated("xlsx"))
def test_fuzz_xlsx(data: bytes) -> None:
    _parse_or_value_error(ExcelParser(), data, "fuzz.xlsx")


@FUZZ
@given(data=mutated("html") | st.binary(max_size=512))
def test_fuzz_html(data: bytes) -> None:
    _parse_or_value_error(HTMLParser(), data, "fuzz.html")


@FUZZ
@given(data=mutated("markup"))
def test_fuzz_markdown_and_rst(data: bytes) -> None:
    _parse_or_value_error(MarkdownParser(), data, "fuzz.md")
    _parse_or_value_error(RSTParser(), data, "fuzz.rst")


@FUZZ
@given(text=st.text(max_size=300))
def test_fuzz_markup_str(text: str) -> None:
    for parser, name in ((HTMLParser(), "fuzz.html"), (MarkdownParser(), "fuzz.md")):
        _parse_or_value_error(parser, text, name)
    _parse_or_value_error(RSTParser(), text, "fuzz.rst")


@FUZZ
@given(text=st.text(max_size=300))
def test_fuzz_text_str(text: str) -> None:
    _parse_or_value_error(TextParser(), text, "fuzz.txt")


@pytest.mark.skipif(os.environ.get(CHILD_ENV) != "1", reason="runs inside test_fuzz_pdf")
@FUZZ
@given(data=mutated("pdf"))
def test_fuzz_pdf_child(data: bytes) -> None:
    _parse_or_value_error(PDFParser(), data, "fuzz.pdf")


def test_fuzz_pdf() -> None:
    """The PDF fuzz in a child process, so a PDFium crash cannot end this run."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            f"{__file__}::test_fuzz_pdf_child",
        ],
        env={**os.environ, CHILD_ENV: "1"},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, (
        f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    )
    assert "1 passed" in proc.stdout, proc.stdout[-2000:]


# -------------------------------------------------------------------------------- chunker

sizes = st.integers(1, 64).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1)))
texts = st.text(
    alphabet=st.sampled_from([*"ab c.\n\t,;!?", "é", "日", "🙂", "。", "\u3000", "\u00a0"])
    | st.characters(),
    max_size=600,
)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@FUZZ
@given(text=texts, size=sizes)
def test_fuzz_chunker_split(text: str, size: tuple[int, int]) -> None:
    chunk_size, overlap = size
    chunker = ApproxTokenChunker(chunk_size=chunk_size, overlap=overlap)
    if not _encodable(text):  # lone surrogates: a ValueError (UnicodeEncodeError)
        with pytest.raises(ValueError):
            chunker.split_text(text)
        return
    pieces = chunker.split_text(text)
    budget = chunk_size * 4
    for piece in pieces:
        assert piece and piece == piece.strip()
        assert len(piece.encode("utf-8")) <= budget
        assert piece in text
    if overlap == 0:  # windows tile the text: nothing but whitespace is lost or repeated
        assert "".join("".join(pieces).split()) == "".join(text.split())
    else:  # every non-blank character is in some window
        assert set("".join(text.split())) <= set("".join(pieces))
    if text.strip():
        assert pieces


sections = st.lists(
    st.one_of(
        st.builds(
            lambda t, n: Section(content=TextBlock(text=t), source=f"s{n}.txt", metadata={"n": n}),
            texts,
            st.integers(0, 9),
        ),
        st.builds(
            lambda n: Section(
                content=DataBlock(source=Base64Source(data="iVBORw0KGgo=", media_type="image/png")),
                source=f"img{n}.png",
                metadata={"n": n},
            ),
            st.integers(0, 9),
        ),
    ),
    max_size=6,
)


@FUZZ
@given(given_sections=sections, size=sizes)
def test_fuzz_chunker_chunk(given_sections: list[Section], size: tuple[int, int]) -> None:
    before = [s.model_copy(deep=True) for s in given_sections]
    chunker = ApproxTokenChunker(chunk_size=size[0], overlap=size[1])
    bad = [
        s
        for s in given_sections
        if isinstance(s.content, TextBlock) and not _encodable(s.content.text)
    ]
    if bad:  # lone surrogates: a ValueError naming the first bad Section's source
        with pytest.raises(ValueError, match=bad[0].source):
            asyncio.run(chunker.chunk(given_sections))
        return
    chunks = asyncio.run(chunker.chunk(given_sections))
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert all(c.total_chunks == len(chunks) for c in chunks)
    assert given_sections == before, "the chunker must not mutate its input"
    by_source = {}
    for s in given_sections:
        by_source.setdefault(s.source, []).append(s)
    data_blocks = sum(isinstance(s.content, DataBlock) for s in given_sections)
    assert sum(isinstance(c.content, DataBlock) for c in chunks) == data_blocks
    for c in chunks:
        owners = by_source[c.source]
        assert any(c.metadata == o.metadata for o in owners)
        if isinstance(c.content, TextBlock):  # never crosses a Section
            assert any(
                isinstance(o.content, TextBlock) and c.content.text in o.content.text
                for o in owners
            )
            assert len(c.content.text.encode()) <= size[0] * 4


# -------------------------------------------------------------------------------- atheris

ATHERIS_TARGET = textwrap.dedent(
    """
    import asyncio, sys
    import atheris
    with atheris.instrument_imports(include=["archivist"]):
        from archivist.rag.chunker import ApproxTokenChunker
        from archivist.rag.parser import ImageParser, PDFParser, PPTParser, TextParser

    PARSERS = [(TextParser(), "a.txt"), (ImageParser(), "a.png"), (PPTParser(), "a.pptx"),
               (PDFParser(), "a.pdf")]
    CHUNKER = ApproxTokenChunker(chunk_size=16, overlap=3)

    def one(data):
        if not data:
            return
        parser, name = PARSERS[data[0] % len(PARSERS)]
        try:
            sections = asyncio.run(parser.parse(data[1:], name))
        except ValueError as exc:
            assert name in str(exc), str(exc)
            return
        assert sections
        asyncio.run(CHUNKER.chunk(sections))

    atheris.Setup(sys.argv, one)
    atheris.Fuzz()
    """
)


ATHERIS_QUICK_RUNS = 500
"""Inputs of the fast set's coverage-guided run; the heavy run takes 2000."""


def _peak_rss_mb() -> int:
    """This process's peak resident memory in MiB (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


@pytest.mark.parametrize(
    "runs",
    [
        pytest.param(ATHERIS_QUICK_RUNS, id="quick"),
        pytest.param(2000, id="long", marks=pytest.mark.heavy),
    ],
)
def test_atheris_bounded(tmp_path: Path, runs: int) -> None:
    """A short coverage-guided run (`runs` inputs, 120 s at most); skipped without atheris."""
    pytest.importorskip("atheris")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for i, (kind, prefix) in enumerate([("text", 0), ("image", 1), ("pptx", 2), ("pdf", 3)]):
        for j, seed in enumerate(SEEDS[kind]):
            (seeds / f"{i}-{j}").write_bytes(bytes([prefix]) + seed)
    target = tmp_path / "target.py"
    target.write_text(ATHERIS_TARGET)
    corpus_dir = tmp_path / "corpus"
    corpus_dir.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            str(target),
            str(corpus_dir),
            str(seeds),
            f"-runs={runs}",
            "-max_total_time=120",
            "-max_len=65536",
            # libFuzzer reads the peak RSS, which Linux carries over from this (pytest)
            # process through fork and exec: the budget is 2 GiB on top of ours.
            f"-rss_limit_mb={_peak_rss_mb() + 2048}",
            "-timeout=30",
            f"-artifact_prefix={tmp_path}/",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    start = proc.stderr.find("Uncaught Python exception")
    assert proc.returncode == 0, proc.stderr[max(start, 0) : max(start, 0) + 3000]
