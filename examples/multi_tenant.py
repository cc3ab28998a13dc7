"""Two tenants share one collection; `metadata_filter` keeps each inside its own records.

Two KnowledgeBase handles point at the same collection, one with
`metadata_filter={"tenant_id": "acme"}` and one with `{"tenant_id": "globex"}`. Each handle
searches, lists and deletes only its own records, and `insert_document` stamps its filter onto
every chunk, so a chunk whose metadata claims the other tenant still lands in the writer's
scope. Offline: the default local embedding model and an in-memory Qdrant.

Run from the repository root:

    python examples/multi_tenant.py
"""

import asyncio

from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag import Chunk, DocumentNotFoundError, KnowledgeBase, QdrantStore

POLICIES = {
    "acme": "Acme refunds any order within 30 days of delivery, no questions asked.",
    "globex": "Globex gives no refunds; faulty goods are repaired within 14 days.",
}


def one_chunk(text: str, source: str, **metadata: str) -> list[Chunk]:
    chunk = Chunk(
        content=TextBlock(text=text),
        source=source,
        chunk_index=0,
        total_chunks=1,
        metadata=metadata,
    )
    return [chunk]


def tenant_knowledge(
    tenant_id: str, embedding_model: EmbeddingModelBase, store: QdrantStore
) -> KnowledgeBase:
    return KnowledgeBase(
        name=f"{tenant_id}-kb",
        description=f"Documents of tenant {tenant_id}.",
        embedding_model=embedding_model,
        vector_store=store,
        collection="shared",
        metadata_filter={"tenant_id": tenant_id},
    )


async def main() -> None:
    embedding_model = LocalEmbeddingModel()
    async with QdrantStore(location=":memory:") as store:
        acme = tenant_knowledge("acme", embedding_model, store)
        globex = tenant_knowledge("globex", embedding_model, store)

        for tenant, knowledge in [("acme", acme), ("globex", globex)]:
            await knowledge.insert_document(
                one_chunk(POLICIES[tenant], "refunds.md"), document_id=f"{tenant}-refunds"
            )

        # A chunk that claims to belong to acme, written through globex's handle: the
        # handle's filter overwrites the claim, so the record stays globex's.
        forged = one_chunk("Acme's secret price list: widgets $3.", "prices.md", tenant_id="acme")
        forged_id = await globex.insert_document(forged, document_id="globex-prices")

        for tenant, knowledge in [("acme", acme), ("globex", globex)]:
            for question in ["What is the refund policy?", "Acme price list"]:
                print(f"[{tenant}] search {question!r}")
                for hit in await knowledge.search([question], top_k=5):
                    text = hit.chunk.content.text
                    print(f"  {hit.score:.3f} {hit.document_id} {hit.chunk.metadata} {text!r}")
            print(f"[{tenant}] list_documents")
            for summary in await knowledge.list_documents():
                print(f"  {summary.document_id} {summary.source} {summary.metadata}")
            print()

        try:
            await acme.delete_document(forged_id)
        except DocumentNotFoundError as error:
            print(f"[acme] delete_document({forged_id!r}) refused: {error}")

        # A handle without a filter sees the whole collection: an operator's view.
        operator = KnowledgeBase(
            name="operator",
            description="Every tenant.",
            embedding_model=embedding_model,
            vector_store=store,
            collection="shared",
        )
        print("\n[operator, no metadata_filter] list_documents")
        for summary in await operator.list_documents():
            print(f"  {summary.document_id} {summary.source} {summary.metadata}")


if __name__ == "__main__":
    asyncio.run(main())
