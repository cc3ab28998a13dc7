"""Reading vectors out of a provider's JSON answer, checking its shape on the way."""

from __future__ import annotations

from typing import Any

from archivist.embedding.errors import EmbeddingError
from archivist.embedding.response import EmbeddingResponse, EmbeddingUsage


def field(container: Any, key: str, model: str, where: str) -> Any:
    """`container[key]`, or an `EmbeddingError` saying which field of the answer is missing."""
    if not isinstance(container, dict) or key not in container:
        raise EmbeddingError(f"{model}: malformed response, {where}.{key} is missing")
    return container[key]


def indexed_vectors(
    entries: Any, *, index_key: str, expected: int, model: str, where: str
) -> list[list[float]]:
    """Order `[{index_key: i, "embedding": [...]}, ...]` by index; each index 0..n-1 once."""
    if not isinstance(entries, list):
        raise EmbeddingError(f"{model}: malformed response, {where} is not a list")
    if len(entries) != expected:
        raise EmbeddingError(f"{model}: returned {len(entries)} vectors for {expected} inputs")
    vectors: list[list[float] | None] = [None] * expected
    for position, entry in enumerate(entries):
        index = field(entry, index_key, model, f"{where}[{position}]")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
            raise EmbeddingError(f"{model}: malformed response, bad {index_key} {index!r}")
        if vectors[index] is not None:
            raise EmbeddingError(f"{model}: malformed response, {index_key} {index} repeats")
        vectors[index] = number_list(
            field(entry, "embedding", model, f"{where}[{position}]"), model
        )
    return [v for v in vectors if v is not None]


def number_list(value: Any, model: str) -> list[float]:
    """A JSON array of numbers as floats; anything else is an `EmbeddingError`."""
    if not isinstance(value, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    ):
        raise EmbeddingError(f"{model}: malformed response, an embedding is not a list of numbers")
    return [float(x) for x in value]


def token_count(usage: Any, *keys: str) -> int:
    """The first of `keys` present in `usage` as a non-negative int, else 0."""
    if isinstance(usage, dict):
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
    return 0


def response(
    answer: Any,
    entries: Any,
    *,
    index_key: str,
    expected: int,
    model: str,
    where: str,
    token_keys: tuple[str, ...],
) -> EmbeddingResponse:
    """The embeddings of a provider's `answer`: the vectors of `entries` in input order (see
    `indexed_vectors`), and the input tokens its usage counts under the first of `token_keys`
    it has."""
    vectors = indexed_vectors(
        entries, index_key=index_key, expected=expected, model=model, where=where
    )
    usage = answer.get("usage") if isinstance(answer, dict) else None
    tokens = token_count(usage, *token_keys)
    return EmbeddingResponse(embeddings=vectors, usage=EmbeddingUsage(input_tokens=tokens))
