"""The seed page's parse / chunk / custom-component samples, run with agentscope → archivist."""

import os
from pathlib import Path

import pytest

from factories import make_image, make_pdf, make_pptx


@pytest.fixture
def in_tmp(tmp_path: Path) -> Path:
    old = os.getcwd()
    os.chdir(tmp_path)
    (tmp_path / "cats.md").write_text("# Cats\nCats sleep 12-16 hours per day.\n")
    (tmp_path / "report.pdf").write_bytes(make_pdf(["Quarterly report", "Revenue grew."]))
    (tmp_path / "deck.pptx").write_bytes(
        make_pptx([{"title": "Hello", "pictures": [make_image()]}])
    )
    (tmp_path / "cat.png").write_bytes(make_image())
    yield tmp_path
    os.chdir(old)


async def test_seed_text_sample(in_tmp: Path) -> None:
    from archivist.rag import TextParser

    parser = TextParser()

    # 1) 直接传入 bytes
    sections = await parser.parse(
        file=b"# Cats\nCats sleep 12-16 hours per day.\n",
        filename="cats.md",
    )
    first = sections

    # 2) 传入文件路径（存在的文件会自动读盘）
    sections = await parser.parse(file="./cats.md", filename="cats.md")
    assert sections[0].content.text == first[0].content.text  # type: ignore[union-attr]


async def test_seed_pdf_sample(in_tmp: Path) -> None:
    from archivist.rag import PDFParser

    parser = PDFParser()

    # 1) 直接传入文件路径
    sections = await parser.parse(file="./report.pdf", filename="report.pdf")

    # 2) 也可以直接传 bytes（例如来自 HTTP 上传 / blob 存储）
    with open("report.pdf", "rb") as f:
        sections = await parser.parse(file=f.read(), filename="report.pdf")

    # 每个 section.metadata 包含 {"page": N}
    assert [s.metadata for s in sections] == [{"page": 1}, {"page": 2}]


async def test_seed_pptx_sample(in_tmp: Path) -> None:
    from archivist.rag import PPTParser

    parser = PPTParser(
        include_image=True,  # 是否抽取嵌入的图片
        separate_table=False,  # 是否把表格独立为单独的 Section
        table_format="markdown",  # 表格渲染格式："markdown" 或 "json"
        slide_prefix="<slide index={index}>",
        slide_suffix="</slide>",
    )

    # 文件路径
    sections = await parser.parse(file="./deck.pptx", filename="deck.pptx")
    assert [s.metadata["slide"] for s in sections] == [1, 1]


async def test_seed_image_and_chunk_samples(in_tmp: Path) -> None:
    from archivist.rag import ApproxTokenChunker, ImageParser

    parser = ImageParser()

    # 文件路径
    sections = await parser.parse(file="./cat.png", filename="cat.png")
    # 整张图片包裹为一个 DataBlock，元信息记录 media_type
    assert sections[0].metadata == {"media_type": "image/png"}

    chunker = ApproxTokenChunker(chunk_size=256, overlap=32)
    chunks = await chunker.chunk(sections)
    assert chunks[0].content == sections[0].content


def test_seed_supported_media_types_listing() -> None:
    from archivist.rag import ImageParser, TextParser

    assert TextParser.supported_media_types == [
        "text/plain", "text/markdown", "text/csv", "text/html", "text/x-rst",
        "application/json", "application/xml", "application/x-yaml",
    ]  # fmt: skip
    assert ImageParser.supported_media_types == [
        "image/png", "image/jpeg", "image/gif", "image/bmp", "image/webp",
    ]  # fmt: skip


async def test_seed_custom_parser_and_chunker() -> None:
    from archivist.message import TextBlock
    from archivist.rag import Chunk, ChunkerBase, ParserBase, Section

    class MyMarkdownParser(ParserBase):
        supported_media_types = ["text/markdown"]

        async def parse(
            self,
            file: bytes | str,
            filename: str,
        ) -> list[Section]:
            text = file.decode("utf-8") if isinstance(file, bytes) else file
            # 按二级标题切成若干 Section，保留来源
            return [
                Section(
                    content=TextBlock(text=block),
                    source=filename,
                    metadata={"index": index},
                )
                for index, block in enumerate(text.split("\n## "))
            ]

    class FixedCharChunker(ChunkerBase):
        def __init__(self, chunk_size: int = 1000) -> None:
            self._chunk_size = chunk_size

        async def chunk(self, sections: list[Section]) -> list[Chunk]:
            chunks: list[Chunk] = []
            for section in sections:
                # 多模态内容不切分，整块透传
                if not isinstance(section.content, TextBlock):
                    chunks.append(
                        Chunk(
                            content=section.content,
                            source=section.source,
                            chunk_index=0,
                            total_chunks=0,
                            metadata=dict(section.metadata),
                        ),
                    )
                    continue
                text = section.content.text
                for start in range(0, len(text), self._chunk_size):
                    chunks.append(
                        Chunk(
                            content=TextBlock(
                                text=text[start : start + self._chunk_size],
                            ),
                            source=section.source,
                            chunk_index=0,
                            total_chunks=0,
                            metadata=dict(section.metadata),
                        ),
                    )
            # 统一编号
            for index, chunk in enumerate(chunks):
                chunk.chunk_index = index
                chunk.total_chunks = len(chunks)
            return chunks

    assert MyMarkdownParser.supported_extensions() == [".md", ".markdown"]
    sections = await MyMarkdownParser().parse(b"# A\nintro\n## B\nbody", "a.md")
    assert [s.metadata["index"] for s in sections] == [0, 1]
    chunks = await FixedCharChunker(chunk_size=5).chunk(sections)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
