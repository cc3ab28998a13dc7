"""Shared by the scenarios: a deterministic bag-of-words embedding written the AgentScope way."""

import hashlib

from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope.message import TextBlock

DIMENSIONS = 64


class BagOfWordsEmbedding(EmbeddingModelBase):
    """Sets its attributes itself and overrides `__call__`, as AgentScope's custom-model guide
    does; texts sharing words get close vectors."""

    def __init__(self) -> None:
        self.model = "bag-of-words"
        self.dimensions = DIMENSIONS
        self.supports_multimodal = False

    async def __call__(self, inputs, **kwargs) -> EmbeddingResponse:
        vectors = []
        for item in inputs:
            text = item.text if isinstance(item, TextBlock) else str(item)
            vector = [0.01] * DIMENSIONS
            for word in text.lower().replace(".", " ").replace("?", " ").split():
                vector[hashlib.sha256(word.encode()).digest()[0] % DIMENSIONS] += 1.0
            vectors.append(vector)
        return EmbeddingResponse(embeddings=vectors)
