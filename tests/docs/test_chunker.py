import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag import ApproxTokenChunker, Chunk, Section


def _section(text: str, source: str = "doc.md", **metadata: object) -> Section:
    return Section(content=TextBlock(text=text), source=source, metadata=dict(metadata))


def _texts(chunks: list[Chunk]) -> list[str]:
    return [c.content.text for c in chunks if isinstance(c.content, TextBlock)]


def test_both_constructor_forms_and_defaults() -> None:
    assert ApproxTokenChunker().parameters.chunk_size == 512
    assert ApproxTokenChunker().parameters.overlap == 50
    seed_form = ApproxTokenChunker(chunk_size=256, overlap=32)
    params_form = ApproxTokenChunker(
        parameters=ApproxTokenChunker.Parameters(chunk_size=256, overlap=32)
    )
    assert seed_form.parameters == params_form.parameters
    positional = ApproxTokenChunker(ApproxTokenChunker.Parameters(chunk_size=256, overlap=32))
    assert positional.parameters == params_form.parameters  # AgentScope 2.0.11's form


@pytest.mark.parametrize(("size", "overlap"), [(10, 10), (10, 11), (10, -1), (0, 0), (-5, 0)])
def test_bad_parameters_are_value_errors(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        ApproxTokenChunker(chunk_size=size, overlap=overlap)
    with pytest.raises(ValueError):
        ApproxTokenChunker.Parameters(chunk_size=size, overlap=overlap)


async def test_short_text_is_one_chunk() -> None:
    chunks = await ApproxTokenChunker().chunk([_section("Cats sleep.\n", page=1)])
    assert len(chunks) == 1
    assert chunks[0].content.text == "Cats sleep."  # type: ignore[union-attr]
    assert (chunks[0].chunk_index, chunks[0].total_chunks) == (0, 1)
    assert chunks[0].metadata == {"page": 1}
    assert chunks[0].source == "doc.md"


async def test_windows_respect_budget_prefer_breaks_and_overlap() -> None:
    sentences = [f"Sentence number {i} is here." for i in range(40)]
    text = " ".join(sentences)
    chunks = await ApproxTokenChunker(chunk_size=20, overlap=5).chunk([_section(text)])
    texts = _texts(chunks)
    assert all(len(t.encode()) // 4 <= 20 for t in texts)
    assert all(t.endswith(".") for t in texts)  # cut after a sentence, not mid-word
    for before, after in itertools.pairwise(texts):
        assert before[-8:] in after or after.split()[0] in before  # windows overlap
    joined = " ".join(texts)
    assert all(s in joined for s in sentences)  # nothing lost


async def test_chinese_text_is_never_split_inside_a_character() -> None:
    text = "猫每天睡十二到十六个小时，狗也睡很多。" * 200
    chunks = await ApproxTokenChunker(chunk_size=30, overlap=4).chunk([_section(text)])
    assert len(chunks) > 10
    for t in _texts(chunks):
        assert len(t.encode("utf-8")) // 4 <= 30
        assert "\ufffd" not in t
        assert t in text  # every window is an intact substring of the original


async def test_no_chunk_crosses_sections_and_metadata_is_copied() -> None:
    sections = [_section("alpha " * 100, page=1), _section("beta " * 100, page=2)]
    chunks = await ApproxTokenChunker(chunk_size=40, overlap=0).chunk(sections)
    for chunk in chunks:
        words = set(chunk.content.text.split())  # type: ignore[union-attr]
        assert len(words) == 1
        assert chunk.metadata == {"page": 1 if words == {"alpha"} else 2}
    chunks[0].metadata["page"] = 99
    assert sections[0].metadata == {"page": 1}  # copied, not shared


async def test_indices_are_global_and_total_is_everywhere() -> None:
    image = DataBlock(source=Base64Source(data="aGk=", media_type="image/png"))
    sections = [
        _section("one " * 300),
        Section(content=image, source="deck.pptx", metadata={"slide": 2}),
        _section("two " * 300),
    ]
    chunks = await ApproxTokenChunker(chunk_size=64, overlap=8).chunk(sections)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
    data_chunks = [c for c in chunks if isinstance(c.content, DataBlock)]
    assert len(data_chunks) == 1
    assert data_chunks[0].content.source == image.source
    assert data_chunks[0].metadata == {"slide": 2}
    assert data_chunks[0].source == "deck.pptx"


async def test_blank_pieces_are_dropped() -> None:
    text = "real words" + " " * 400 + "\n" * 400 + "more words"
    chunks = await ApproxTokenChunker(chunk_size=16, overlap=2).chunk(
        [_section(text), _section("   \n\n  ")]
    )
    assert _texts(chunks) == ["real words", "more words"]


async def test_text_without_any_break_is_cut_at_the_budget() -> None:
    text = "x" * 1000
    texts = _texts(await ApproxTokenChunker(chunk_size=50, overlap=10).chunk([_section(text)]))
    assert all(len(t) == 200 for t in texts[:-1])
    assert texts[1] == "x" * 200


async def test_the_callers_sections_are_not_mutated() -> None:
    section = _section("hello world " * 100, page=3)
    before = section.model_dump()
    await ApproxTokenChunker(chunk_size=16, overlap=4).chunk([section])
    assert section.model_dump() == before


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(min_size=0, max_size=3000),
    size=st.integers(min_value=1, max_value=80),
    data=st.data(),
)
def test_property_budget_intact_characters_and_coverage(
    text: str, size: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    chunker = ApproxTokenChunker(chunk_size=size, overlap=overlap)
    pieces = chunker.split_text(text)
    for piece in pieces:
        assert len(piece.encode("utf-8")) // 4 <= size
        assert piece and piece == piece.strip()
        assert piece in text
    # every non-space character of the input lands in some window
    covered = "".join(pieces)
    assert sorted(set(covered)) == sorted({c for c in text if not c.isspace()} | set(covered))
