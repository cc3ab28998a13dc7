"""KnowledgeBase over QdrantStore (in memory) with a custom embedding: insert, list, search,
re-insert, delete, tenant scopes, and the store's own insert called twice."""

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _toy import BagOfWordsEmbedding
from agentscope.message import TextBlock
from agentscope.rag import Chunk, KnowledgeBase, QdrantStore, VectorRecord

DOCS = {
    "cats": ["Cats sleep sixteen hours a day.", "Cats purr when content."],
    "dogs": ["Dogs need daily walks.", "Dogs fetch sticks in the park.", "Dogs bark."],
    "fish": ["Fish swim in cold water."],
}


def chunks(document_id: str, texts: list[str]) -> list[Chunk]:
    return [
        Chunk(
            content=TextBlock(text=text),
            source=f"{document_id}.txt",
            chunk_index=index,
            total_chunks=len(texts),
            metadata={"page": index + 1},
        )
        for index, text in enumerate(texts)
    ]


def summaries(found) -> list:
    return sorted([s.document_id, s.source, s.chunk_count, s.metadata] for s in found)


async def main() -> None:
    out: dict = {}
    store = QdrantStore(location=":memory:")
    async with store:
        kb = KnowledgeBase(
            name="pets",
            description="Facts about pets.",
            embedding_model=BagOfWordsEmbedding(),
            vector_store=store,
            collection="pets",
        )
        for document_id, texts in DOCS.items():
            returned = await kb.insert_document(
                chunks(document_id, texts),
                document_id=document_id,
                document_metadata={"lang": "en"},
            )
            assert returned == document_id
        out["listed"] = summaries(await kb.list_documents())
        hits = await kb.search(["Which animal fetches sticks in the park?"], top_k=1)
        out["top_hit"] = [[h.document_id, h.chunk.chunk_index, h.chunk.metadata] for h in hits]
        out["top_hit_text"] = [h.chunk.content.text for h in hits]
        many = await kb.search(["cats sleep", "dogs bark"], top_k=10)
        out["multi_query_pairs"] = sorted({(h.document_id, h.chunk.chunk_index) for h in many})
        await kb.insert_document(chunks("cats", ["Cats sleep a lot."]), document_id="cats")
        out["after_reinsert"] = summaries(await kb.list_documents())
        await kb.delete_document("dogs")
        out["after_delete"] = summaries(await kb.list_documents())

        tenants = {}
        for tenant in ("a", "b"):
            tenants[tenant] = KnowledgeBase(
                name=f"tenant-{tenant}",
                description="",
                embedding_model=BagOfWordsEmbedding(),
                vector_store=store,
                collection="shared",
                metadata_filter={"tenant_id": tenant},
            )
        await tenants["a"].insert_document(chunks("doc", ["Alpha secret."]), document_id="doc")
        await tenants["b"].insert_document(chunks("doc", ["Beta secret."]), document_id="doc")
        out["tenant_views"] = {
            t: [h.chunk.content.text for h in await kb_.search(["secret"], top_k=5)]
            for t, kb_ in tenants.items()
        }
        await tenants["a"].delete_document("doc")
        out["tenant_b_after_a_deletes"] = summaries(await tenants["b"].list_documents())

        await store.create_collection("raw", 4)
        records = [
            VectorRecord(vector=[1.0, float(i), 0.0, 0.0], document_id="r", chunk=c)
            for i, c in enumerate(chunks("r", ["one", "two", "three"]))
        ]
        await store.insert("raw", records)
        await store.insert("raw", records)
        out["store_insert_twice"] = summaries(await store.list_documents("raw"))
    print(json.dumps(out))


asyncio.run(main())
