"""A custom embedding model written against AgentScope's base class: `super().__init__` with
AgentScope's arguments in its order, a credential subclass, only the per-batch `_call_api`
(retried on the exceptions it declares), and a KnowledgeBase searching with it."""

import asyncio
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from agentscope.credential import CredentialBase
from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope.message import TextBlock
from agentscope.rag import Chunk, KnowledgeBase, QdrantStore


class LocalCredential(CredentialBase):
    api_key: str = "not-needed"


class HashingEmbedding(EmbeddingModelBase):
    """Hashes words into buckets; the base class batches the inputs."""

    def __init__(self, credential: LocalCredential, dimensions: int | None = 32, parameters=None):
        super().__init__(credential, "hashing", dimensions, parameters, 512, 2, 3, 0.01)
        self.batches: list[int] = []
        self.failures_left = 1

    @classmethod
    def _get_retryable_exceptions(cls):
        return (ConnectionError,)

    async def _call_api(self, inputs, **kwargs) -> EmbeddingResponse:
        if self.failures_left:
            self.failures_left -= 1
            raise ConnectionError("the first call drops")
        self.batches.append(len(inputs))
        vectors = []
        for text in inputs:
            vector = [0.01] * self.dimensions
            for word in str(text).lower().replace(".", " ").replace("?", " ").split():
                vector[hashlib.sha256(word.encode()).digest()[0] % self.dimensions] += 1.0
            vectors.append(vector)
        return EmbeddingResponse(embeddings=vectors)


async def main() -> None:
    out: dict = {}
    model = HashingEmbedding(LocalCredential())
    out["settings"] = [
        model.model,
        model.dimensions,
        model.context_size,
        model.batch_size,
        model.max_retries,
        model.credential.api_key,
    ]
    response = await model(["one", TextBlock(text="two"), "three", "four", "five"])
    out["vector_count"] = len(response.embeddings)
    out["vector_lengths"] = sorted({len(v) for v in response.embeddings})
    out["batches"] = sorted(model.batches)  # the dropped call was retried
    legacy = HashingEmbedding(
        LocalCredential(), dimensions=None, parameters=EmbeddingModelBase.Parameters(dimensions=16)
    )
    out["legacy_dimensions"] = [legacy.dimensions, "dimensions" in legacy.parameters.model_dump()]
    texts = ["Cats sleep sixteen hours a day.", "Dogs fetch sticks in the park."]
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase(
            name="pets",
            description="Facts about pets.",
            embedding_model=model,
            vector_store=store,
            collection="pets",
        )
        for index, text in enumerate(texts):
            await kb.insert_document(
                [
                    Chunk(
                        content=TextBlock(text=text),
                        source=f"{index}.txt",
                        chunk_index=0,
                        total_chunks=1,
                        metadata={},
                    )
                ],
                document_id=f"doc{index}",
            )
        hits = await kb.search(["Which animal fetches sticks?"], top_k=1)
        out["top_hit"] = [h.chunk.content.text for h in hits]
    print(json.dumps(out))


asyncio.run(main())
