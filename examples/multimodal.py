"""Multimodal RAG: which parsers make DataBlocks, which models can embed them.

Shows each parser's `supported_media_types`, the embedding model's `supports_multimodal`, an
image parsed into one DataBlock Section, and what a text-only knowledge base does with images:
it refuses to index a document made only of images, and silently drops DataBlock queries.
With `DASHSCOPE_API_KEY` set, DashScope's `multimodal-embedding-v1` also indexes the image and
the slide deck's picture, and finds them by text and by image. Without it, everything runs
offline with the default local (text-only) model.

Run from the repository root:

    python examples/multimodal.py
"""

import asyncio
import os
from pathlib import Path

from archivist.credential import DashScopeCredential
from archivist.embedding import DashScopeEmbeddingModel, EmbeddingModelBase, LocalEmbeddingModel
from archivist.message import DataBlock
from archivist.rag import (
    ApproxTokenChunker,
    Chunk,
    ImageParser,
    KnowledgeBase,
    ParserBase,
    PDFParser,
    PPTParser,
    QdrantStore,
    TextParser,
    VectorSearchResult,
)

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
IMAGE = SAMPLES / "pipeline.png"
DECK = SAMPLES / "archivist-architecture.pptx"
OVERVIEW = SAMPLES / "archivist-overview.md"


def describe(hit: VectorSearchResult) -> str:
    content = hit.chunk.content
    if isinstance(content, DataBlock):
        what = f"<{content.source.media_type}>"
    else:
        what = repr(" ".join(content.text.split())[:50])
    return f"{hit.score:.3f} {hit.chunk.source} {hit.chunk.metadata} {what}"


def dashscope_multimodal_model() -> EmbeddingModelBase:
    """DashScope's multimodal-embedding-v1: text, images and video in one 1024-d space."""
    return DashScopeEmbeddingModel(
        credential=DashScopeCredential(api_key=os.environ["DASHSCOPE_API_KEY"]),
        model="multimodal-embedding-v1",
        dimensions=1024,
    )


async def parse_and_chunk(parser: ParserBase, path: Path) -> list[Chunk]:
    sections = await parser.parse(file=str(path), filename=path.name)
    return await ApproxTokenChunker(chunk_size=256, overlap=32).chunk(sections)


async def text_only_knowledge_base(store: QdrantStore, image_query: DataBlock) -> None:
    embedding_model = LocalEmbeddingModel()
    print(f"\n{embedding_model.model}: supports_multimodal = {embedding_model.supports_multimodal}")
    knowledge = KnowledgeBase(
        name="text-kb",
        description="Text only.",
        embedding_model=embedding_model,
        vector_store=store,
        collection="text-kb",
    )
    await knowledge.insert_document(await parse_and_chunk(TextParser(), OVERVIEW))

    try:
        await knowledge.insert_document(await parse_and_chunk(ImageParser(), IMAGE))
    except ValueError as error:
        print(f"indexing the image with a text-only model fails: {error}")

    hits = await knowledge.search(queries=[image_query], top_k=3)
    print(f"search([image]) -> {len(hits)} hit(s): the DataBlock query was dropped, no error")
    hits = await knowledge.search(queries=[image_query, "How are files parsed?"], top_k=3)
    print("search([image, 'How are files parsed?']) -> only the text query is searched:")
    for hit in hits:
        print(f"  {describe(hit)}")


async def multimodal_knowledge_base(
    store: QdrantStore, embedding_model: EmbeddingModelBase, image_query: DataBlock
) -> None:
    print(f"\n{embedding_model.model}: supports_multimodal = {embedding_model.supports_multimodal}")
    knowledge = KnowledgeBase(
        name="multimodal-kb",
        description="Text and pictures.",
        embedding_model=embedding_model,
        vector_store=store,
        collection="multimodal-kb",
    )
    for parser, path in [(ImageParser(), IMAGE), (PPTParser(include_image=True), DECK)]:
        chunks = await parse_and_chunk(parser, path)
        images = sum(isinstance(chunk.content, DataBlock) for chunk in chunks)
        await knowledge.insert_document(chunks, document_metadata={"filename": path.name})
        print(f"indexed {path.name}: {len(chunks)} chunk(s), {images} of them image(s)")

    for label, query in [("text", "a diagram of the pipeline"), ("image", image_query)]:
        print(f"search by {label}:")
        for hit in await knowledge.search(queries=[query], top_k=3):
            print(f"  {describe(hit)}")


async def main() -> None:
    parser_classes: list[type[ParserBase]] = [TextParser, PDFParser, PPTParser, ImageParser]
    for parser_class in parser_classes:
        name = parser_class.__name__
        print(f"{name}.supported_media_types = {parser_class.supported_media_types}")
        print(f"{name}.supported_extensions() = {parser_class.supported_extensions()}")

    # The whole image becomes one DataBlock Section; its metadata records the media type.
    [section] = await ImageParser().parse(file=str(IMAGE), filename=IMAGE.name)
    assert isinstance(section.content, DataBlock)
    print(
        f"\n{IMAGE.name} -> one Section: {section.content.type} block, "
        f"{section.content.source.media_type}, metadata {section.metadata}"
    )
    image_query = section.content

    async with QdrantStore(location=":memory:") as store:
        await text_only_knowledge_base(store, image_query)

        if os.environ.get("DASHSCOPE_API_KEY"):
            await multimodal_knowledge_base(store, dashscope_multimodal_model(), image_query)
        else:
            print(
                "\nSet DASHSCOPE_API_KEY to index and search the image with DashScope's "
                "multimodal-embedding-v1."
            )


if __name__ == "__main__":
    asyncio.run(main())
