"""`HashEmbeddingModel`: a deterministic, offline, instant embedding model for tests.

Each token of a text maps to a pseudo-random vector drawn from its BLAKE2b hash; a text's vector
is the sum over its tokens. Equal texts get equal vectors (score 1.0 against each other), texts
sharing words point alike, unrelated texts are nearly orthogonal. It runs through the real
`EmbeddingModelBase` (input checks, batching, output checks), so a store or knowledge-base test
sees what a real model would hand it, without a download or a network. It is not a retrieval
model: tests about retrieval quality use the local ONNX model.

    from archivist.testing.embedding import HashEmbeddingModel

    model = HashEmbeddingModel(dimensions=32)
    vectors = (await model(["a text", "another text"])).embeddings

A test that needs a model misbehaving on purpose (a NaN vector, a slow batch) subclasses it and
overrides `vector` or `_embed_batch`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from archivist.embedding.base import BatchItem, EmbeddingModelBase, InputType
from archivist.embedding.response import EmbeddingResponse
from archivist.message import DataBlock

_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|\w+")
"""A CJK character on its own (Chinese and Japanese have no spaces), otherwise a run of word
characters."""

_BLAKE2B_MAX = 64


def token_vector(token: str, dimensions: int) -> list[float]:
    """The pseudo-random vector of one token: its BLAKE2b digest, bytes scaled into [-1, 1)."""
    raw = token.encode()
    digest = b""
    block = 0
    while len(digest) < dimensions:  # BLAKE2b gives at most 64 bytes; salt the next blocks
        size = min(_BLAKE2B_MAX, dimensions - len(digest))
        salt = block.to_bytes(16, "little")
        digest += hashlib.blake2b(raw, digest_size=size, salt=salt).digest()
        block += 1
    return [(byte - 127.5) / 128 for byte in digest]


class HashEmbeddingModel(EmbeddingModelBase):
    """Vectors from hashed tokens: deterministic, offline, and instant.

    `dimensions` sets the vector length. `whole_text=True` hashes each text as one token, so
    only equal texts are alike (for tests that want unrelated vectors for near-identical texts).
    `multimodal=True` also embeds DataBlocks, by hashing their source. `lowercase` folds case
    before tokenising. Other keyword arguments (`batch_size`, `max_concurrency`, ...) go to
    `EmbeddingModelBase`.
    """

    def __init__(
        self,
        dimensions: int = 32,
        *,
        model: str = "hash-embedding",
        whole_text: bool = False,
        multimodal: bool = False,
        lowercase: bool = True,
        batch_size: int = 1000,
        max_concurrency: int = 4,
    ) -> None:
        super().__init__(
            model=model,
            dimensions=dimensions,
            batch_size=batch_size,
            supports_multimodal=multimodal,
            max_concurrency=max_concurrency,
        )
        self.whole_text = whole_text
        self.lowercase = lowercase

    def tokens(self, text: str) -> list[str]:
        """The tokens `text` is hashed by; a text without word characters is one token."""
        folded = text.lower() if self.lowercase else text
        if self.whole_text:
            return [folded]
        return _TOKEN.findall(folded) or [folded]

    def vector(self, item: BatchItem) -> list[float]:
        """The vector of one text or DataBlock (the sum of its tokens' vectors)."""
        if isinstance(item, DataBlock):
            return token_vector(item.source.model_dump_json(), self.dimensions)
        total = [0.0] * self.dimensions
        for token in self.tokens(item):
            for i, value in enumerate(token_vector(token, self.dimensions)):
                total[i] += value
        return total

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        return EmbeddingResponse(embeddings=[self.vector(item) for item in batch])
