"""Index documents into a KnowledgeBase, search it, list its documents and delete one.

The seed's flow end to end: parse and chunk the files in `samples/`, `insert_document` each
with `document_metadata`, `search`, `list_documents`, `delete_document`. The vector store is
an in-memory Qdrant. Embeddings come from the offline default model (`LocalEmbeddingModel()`,
no network, no API key); with `DASHSCOPE_API_KEY` set, DashScope's `text-embedding-v4` is used
instead, built exactly as in the seed.

Run from the repository root:

    python examples/knowledge_base.py
"""

import asyncio
import os
from pathlib import Path

from archivist.credential import DashScopeCredential
from archivist.embedding import DashScopeEmbeddingModel, EmbeddingModelBase, LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, KnowledgeBase, QdrantStore, default_registry

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def make_embedding_model() -> EmbeddingModelBase:
    if os.environ.get("DASHSCOPE_API_KEY"):
        return DashScopeEmbeddingModel(
            credential=DashScopeCredential(api_key=os.environ["DASHSCOPE_API_KEY"]),
            model="text-embedding-v4",
            dimensions=1024,
        )
    # all-MiniLM-L6-v2 (int8, 384-d) shipped inside a Python package: runs on the CPU, offline.
    return LocalEmbeddingModel()


async def main() -> None:
    embedding_model = make_embedding_model()
    print(f"embedding model: {embedding_model}")

    registry = default_registry()
    chunker = ApproxTokenChunker(chunk_size=256, overlap=32)

    # QdrantStore is an async context manager; entering it opens the client.
    store = QdrantStore(location=":memory:")  # or url="http://..." for a real cluster

    async with store:
        knowledge = KnowledgeBase(
            name="demo-kb",
            description="A toy corpus.",
            embedding_model=embedding_model,
            vector_store=store,
            collection="demo-kb",
        )
        # The backing collection is created on first use with embedding_model.dimensions.
        document_ids = {}
        for path in sorted(SAMPLES.glob("*.*")):
            if path.suffix == ".png":
                continue  # an image needs a multimodal model: see examples/multimodal.py
            parser = registry.parser_for_path(path)
            sections = await parser.parse(file=str(path), filename=path.name)
            text_sections = [s for s in sections if isinstance(s.content, TextBlock)]
            chunks = await chunker.chunk(text_sections)
            document_id = await knowledge.insert_document(
                chunks,
                document_metadata={"filename": path.name},
            )
            document_ids[path.name] = document_id
            print(f"indexed {path.name}: {len(chunks)} chunk(s) as document {document_id}")

        for question in ["How do tenants share a collection?", "Which model embeds offline?"]:
            results = await knowledge.search(
                queries=[question],
                top_k=3,
                score_threshold=None,  # only meaningful for cosine / dot-product scores
            )
            print(f"\nsearch: {question!r}")
            for r in results:
                text = " ".join(r.chunk.content.text.split())[:70]
                print(f"  {r.score:.3f} {r.document_id} {r.chunk.source} {r.chunk.metadata}")
                print(f"        {text}...")

        print("\nlist_documents:")
        summaries = await knowledge.list_documents()
        for s in summaries:
            print(f"  {s.document_id} {s.source} chunks={s.chunk_count} {s.metadata}")

        gone = document_ids["archivist-guide.pdf"]
        await knowledge.delete_document(gone)
        print(f"\ndelete_document({gone}) removed archivist-guide.pdf; left:")
        for s in await knowledge.list_documents():
            print(f"  {s.document_id} {s.source} chunks={s.chunk_count}")


if __name__ == "__main__":
    asyncio.run(main())
