"""TokenChunker: chunks measured with the embedding model's own tokenizer never exceed its input."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archivist.embedding import LocalEmbeddingModel
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag.chunker import EstimatedTokenizer, TokenChunker, chunker_for
from archivist.rag.document import Section

WORDS = [
    "retrieval",
    "augmented",
    "generation",
    "embeds",
    "chunks",
    "of",
    "documents",
    "into",
    "vectors;",
    "photosynthesis",
    "chlorophyll",
    "mitochondria",
    "antidisestablishmentarianism",
    "1,234.5",
    "大熊猫",
    "生活",
    "在",
    "中国",
    "四川",
    "的",
    "竹林",
    "里。",
    "知识库",
    "检索",
    "增强",
    "生成！",
    "e-mail",
    "user@example.com",
    "https://example.org/path?q=1",
    "(parenthesised)",
]


@pytest.fixture(scope="module")
def tokenizer() -> ModelTokenizer:
    return LocalEmbeddingModel().chunk_tokenizer()


def _overlap(previous: str, following: str) -> str:
    """The longest start of `following` that `previous` ends with."""
    for size in range(min(len(previous), len(following)), 0, -1):
        if previous.endswith(following[:size]):
            return following[:size]
    return ""


def _squash(text: str) -> str:
    return "".join(text.split())


def _assert_tiles(chunker: TokenChunker, text: str) -> None:
    """The windows lie in `text` in order, each starting after the previous one's start and no
    later than its end, with only whitespace left uncovered; the pieces are those windows."""
    windows = chunker.windows(text)
    assert [text[s:e] for s, e in windows] == chunker.split_text(text)
    covered_to, previous_start = 0, -1
    for start, end in windows:
        assert start > previous_start
        assert not text[covered_to:start].strip(), "a gap holds text"
        previous_start, covered_to = start, max(covered_to, end)
    assert not text[covered_to:].strip()
    if chunker.overlap == 0:
        for (_, end), (start, _) in itertools.pairwise(windows):
            assert start >= end, "no overlap was asked for"


texts = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from([" ", " ", " ", "\n", "\n\n", ""])),
    min_size=1,
    max_size=700,
).map(lambda pairs: "".join(word + gap for word, gap in pairs))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, size=st.sampled_from([16, 64, 254]), overlap=st.sampled_from([0, 4, 12]))
def test_every_chunk_fits_and_the_chunks_cover_the_text_exactly(
    tokenizer: ModelTokenizer, text: str, size: int, overlap: int
) -> None:
    chunker = TokenChunker(tokenizer, chunk_size=size, overlap=overlap)
    pieces = chunker.split_text(text)
    assert pieces, "non-blank text gives at least one chunk"
    for piece in pieces:
        assert piece == piece.strip() and piece
        assert len(tokenizer.spans(piece)) <= size
    _assert_tiles(chunker, text)
    if overlap == 0:
        # Without overlap the pieces are consecutive slices: their concatenation is the text.
        assert _squash("".join(pieces)) == _squash(text)


def test_overlap_is_the_previous_chunks_tail(tokenizer: ModelTokenizer) -> None:
    text = " ".join(f"word{n} is followed by another sentence." for n in range(300))
    pieces = TokenChunker(tokenizer, chunk_size=64, overlap=16).split_text(text)
    assert len(pieces) > 5
    for previous, following in itertools.pairwise(pieces):
        shared = _overlap(previous, following)
        # The next chunk starts inside the previous one, at a word, about 16 tokens back.
        assert previous.endswith(shared)
        assert 8 <= len(tokenizer.spans(shared)) <= 16


def test_no_overlap_means_nothing_shared(tokenizer: ModelTokenizer) -> None:
    text = " ".join(f"alpha{n} beta{n} gamma{n}." for n in range(400))
    pieces = TokenChunker(tokenizer, chunk_size=50, overlap=0).split_text(text)
    assert "".join(p + " " for p in pieces).split() == text.split()


def test_windows_end_at_sentence_breaks(tokenizer: ModelTokenizer) -> None:
    text = " ".join(f"Sentence number {n} talks about topic {n}." for n in range(200))
    for piece in TokenChunker(tokenizer, chunk_size=60, overlap=0).split_text(text)[:-1]:
        assert piece.endswith(".")


def test_chinese_is_cut_at_its_punctuation_and_fits(tokenizer: ModelTokenizer) -> None:
    text = "大熊猫是中国特有的物种，主要生活在四川、陕西和甘肃的山区竹林中。" * 60
    pieces = TokenChunker(tokenizer, overlap=0).split_text(text)
    assert len(pieces) > 3
    for piece in pieces[:-1]:
        assert len(tokenizer.spans(piece)) <= tokenizer.max_tokens
        assert piece.endswith(("。", "，", "、"))
    assert "".join(pieces) == text


def test_the_default_size_is_the_models_input(tokenizer: ModelTokenizer) -> None:
    # all-MiniLM-L6-v2 reads 256 tokens including [CLS] and [SEP].
    assert tokenizer.max_tokens == 254
    assert TokenChunker(tokenizer).chunk_size == 254
    with pytest.raises(ValueError, match="exceeds the 254 tokens"):
        TokenChunker(tokenizer, chunk_size=255)


def test_a_document_prefix_is_deducted() -> None:
    model = LocalEmbeddingModel()
    prefixed = ModelTokenizer.from_file(str(model.tokenizer_path), 256, "passage: ")
    assert prefixed.max_tokens == 254 - len(prefixed.spans("passage: "))


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [(0, 0, "chunk_size"), (10, 10, "overlap"), (10, -1, "overlap"), (True, 0, "chunk_size")],
)
def test_bad_parameters_are_refused(size: object, overlap: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokenChunker(EstimatedTokenizer(512), chunk_size=size, overlap=overlap)  # type: ignore[arg-type]


def test_the_estimate_counts_cjk_characters_and_word_pieces() -> None:
    estimate = EstimatedTokenizer()
    assert len(estimate.spans("大熊猫")) == 3
    assert len(estimate.spans("cat")) == 1
    assert len(estimate.spans("photosynthesis")) == 4  # 14 characters, 4 per token
    assert len(estimate.spans("a, b!")) == 4
    text = "知识库。" * 300
    pieces = TokenChunker(estimate, chunk_size=100, overlap=0).split_text(text)
    assert all(len(estimate.spans(p)) <= 100 for p in pieces)


async def test_sections_are_never_crossed_and_data_passes_whole(
    tokenizer: ModelTokenizer,
) -> None:
    image = DataBlock(source=Base64Source(data="iVBORw0K", media_type="image/png"))
    sections = [
        Section(content=TextBlock(text="first " * 300), source="a.md", metadata={"page": 1}),
        Section(content=image, source="a.md", metadata={"page": 2}),
        Section(content=TextBlock(text="second section"), source="a.md", metadata={"page": 3}),
        Section(content=TextBlock(text="   \n "), source="a.md", metadata={"page": 4}),
    ]
    chunks = await TokenChunker(tokenizer, chunk_size=100, overlap=10).chunk(sections)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
    pages = [c.metadata["page"] for c in chunks]
    assert pages == sorted(pages) and 4 not in pages
    assert chunks[-1].content.text == "second section"  # type: ignore[union-attr]
    assert isinstance(chunks[-2].content, DataBlock)
    assert chunks[-2].content.source == image.source
    assert all("second" not in c.content.text for c in chunks if c.metadata["page"] == 1)  # type: ignore[union-attr]


def test_chunker_for_picks_the_model_tokenizer_or_the_estimate(
    tokenizer: ModelTokenizer,
) -> None:
    assert chunker_for(tokenizer).chunk_size == 254
    assert chunker_for(tokenizer, 128).chunk_size == 128
    estimated = chunker_for(None)
    assert isinstance(estimated.tokenizer, EstimatedTokenizer)
    assert estimated.chunk_size == 256
    assert chunker_for(None, 1000).chunk_size == 1000


def test_parameters_tell_chunkers_apart(tokenizer: ModelTokenizer) -> None:
    one = TokenChunker(tokenizer, chunk_size=100, overlap=10).parameters
    assert one == TokenChunker(tokenizer, chunk_size=100, overlap=10).parameters
    assert one != TokenChunker(tokenizer, chunk_size=100, overlap=11).parameters
    assert one != TokenChunker(tokenizer, chunk_size=99, overlap=10).parameters
    assert one != TokenChunker(EstimatedTokenizer(254), chunk_size=100, overlap=10).parameters


def test_unknown_share_sees_text_the_model_cannot_read(tokenizer: ModelTokenizer) -> None:
    assert tokenizer.unknown_share("Pandas eat bamboo.") == 0
    assert tokenizer.unknown_share("") == 0
    assert tokenizer.unknown_share("大熊猫生活在中国四川的竹林里，每天要吃很多竹子。") > 0.2


async def test_a_context_header_starts_every_chunk_within_budget(
    tokenizer: ModelTokenizer,
) -> None:
    section = Section(
        content=TextBlock(text=" ".join(f"Step {n} unpacks the archive." for n in range(200))),
        source="guide.md",
        metadata={"title": "Guide", "heading_path": ["Guide", "Install", "Linux"]},
    )
    chunker = TokenChunker(tokenizer, chunk_size=80, overlap=8, context_header=True)
    chunks = await chunker.chunk([section])
    assert len(chunks) > 3
    for chunk in chunks:
        text = chunk.content.text  # type: ignore[union-attr]
        assert text.startswith("Guide > Install > Linux\nStep ")
        assert len(tokenizer.spans(text)) <= 80
    plain = await TokenChunker(tokenizer, chunk_size=80, overlap=8).chunk([section])
    assert not plain[1].content.text.startswith("Guide")  # type: ignore[union-attr]
    assert chunker.parameters != TokenChunker(tokenizer, chunk_size=80, overlap=8).parameters


async def test_a_header_too_long_for_the_budget_is_left_out(tokenizer: ModelTokenizer) -> None:
    section = Section(
        content=TextBlock(text="short text"),
        source="a.md",
        metadata={"heading_path": ["word " * 60]},
    )
    chunks = await TokenChunker(tokenizer, chunk_size=64, context_header=True).chunk([section])
    assert [c.content.text for c in chunks] == ["short text"]  # type: ignore[union-attr]
    untitled = Section(content=TextBlock(text="body"), source="a.md")
    chunks = await TokenChunker(tokenizer, context_header=True).chunk([untitled])
    assert [c.content.text for c in chunks] == ["body"]  # type: ignore[union-attr]
