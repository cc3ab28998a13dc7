"""An embedding failure that concerns one file's text fails that file alone in `ingest_files`:
the other files are indexed, and what was stored for the failing file before stays whole.
A failure that concerns every file (a wrong key) stops the run."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from archivist.credential import OpenAICredential
from archivist.embedding import (
    EmbeddingAPIError,
    EmbeddingModelBase,
    EmbeddingResponse,
    OpenAIEmbeddingModel,
)
from archivist.embedding.base import BatchItem, InputType
from archivist.errors import ConfigurationError, InvalidVectorError
from archivist.rag import ApproxTokenChunker, KnowledgeBase, default_registry
from archivist.rag.knowledge.ingest import HASH_KEY, Outcome, file_sha256, ingest_files
from archivist.rag.store.qdrant import QdrantStore

POISON = "quarantined"


class NaNForOneText(EmbeddingModelBase):
    """The real offline model, except that a text holding POISON gets a NaN in its vector
    (as a broken model or a numeric overflow would give)."""

    def __init__(self, inner: EmbeddingModelBase) -> None:
        super().__init__(model="nan-for-one-text", dimensions=inner.dimensions, batch_size=64)
        self.inner = inner

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        response = await self.inner(list(batch), input_type=input_type)
        vectors = [list(v) for v in response.embeddings]
        for item, vector in zip(batch, vectors, strict=True):
            if isinstance(item, str) and POISON in item:
                vector[0] = math.nan
        return EmbeddingResponse(embeddings=vectors)


def write_notes(folder: Path, texts: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in texts.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def kb_over(model: EmbeddingModelBase, store: QdrantStore) -> KnowledgeBase:
    return KnowledgeBase("notes", "notes", model, store, "notes", write_batch_size=16)


async def ingest(kb: KnowledgeBase, files: list[Path]) -> dict[str, tuple[Outcome, str | None]]:
    report = await ingest_files(
        kb, files, registry=default_registry(), chunker=ApproxTokenChunker(64, 0)
    )
    return {Path(r.path).name: (r.outcome, r.error) for r in report.results}


async def stored_hashes(kb: KnowledgeBase) -> dict[str, str]:
    return {Path(s.metadata["path"]).name: s.metadata[HASH_KEY] for s in await kb.list_documents()}


async def test_a_nan_vector_fails_its_file_and_keeps_its_old_version(
    default_model: EmbeddingModelBase, tmp_path: Path
) -> None:
    files = write_notes(
        tmp_path,
        {
            "a.md": "Cats sleep most of the day.",
            "b.md": "Dogs like long walks.",
            "c.md": "Parrots repeat words.",
        },
    )
    async with QdrantStore(location=":memory:") as store:
        kb = kb_over(NaNForOneText(default_model), store)
        first = await ingest(kb, files)
        assert {outcome for outcome, _ in first.values()} == {Outcome.INDEXED}
        old_b = file_sha256(files[1])

        files[0].write_text("Cats sleep even longer in winter.", encoding="utf-8")
        files[1].write_text(f"Dogs like long walks; this text is {POISON}.", encoding="utf-8")
        files.append(*write_notes(tmp_path, {"d.md": "Fish swim in schools."}))
        second = await ingest(kb, files)

        outcome, error = second["b.md"]
        assert outcome is Outcome.FAILED
        assert error is not None and "nan" in error.lower() and "nan-for-one-text" in error
        assert second["a.md"][0] is Outcome.UPDATED
        assert second["c.md"][0] is Outcome.UNCHANGED
        assert second["d.md"][0] is Outcome.INDEXED
        hashes = await stored_hashes(kb)
        assert hashes["b.md"] == old_b  # the old version of the failing file stays
        assert hashes["a.md"] == file_sha256(files[0])
        assert set(hashes) == {"a.md", "b.md", "c.md", "d.md"}
        assert (await kb.verify()).ok


async def test_the_failure_of_one_file_is_its_cause_with_fields(
    default_model: EmbeddingModelBase, tmp_path: Path
) -> None:
    files = write_notes(tmp_path, {"bad.md": f"A {POISON} note.", "good.md": "A fine note."})
    async with QdrantStore(location=":memory:") as store:
        kb = kb_over(NaNForOneText(default_model), store)
        report = await ingest_files(
            kb, files, registry=default_registry(), chunker=ApproxTokenChunker(64, 0)
        )
    [failed] = report.failed
    assert isinstance(failed.cause, InvalidVectorError)
    assert failed.cause.model == "nan-for-one-text"
    assert failed.cause.problem is not None and "nan" in failed.cause.problem
    assert Path(failed.path).name == "bad.md"


def refusing_stand_in(stand_in: object, status: int) -> None:
    """Make the OpenAI stand-in answer `status` to any request whose input holds POISON,
    as a provider refuses one input it will not embed (content policy, bad encoding)."""
    answer = stand_in.answer  # type: ignore[attr-defined]

    def refusing(request: httpx.Request) -> httpx.Response:
        if any(POISON in text for text in json.loads(request.content)["input"]):
            return httpx.Response(
                status,
                json={"error": {"message": "input rejected", "code": "invalid_input"}},
            )
        return answer(request)  # type: ignore[no-any-return]

    stand_in.answer = refusing  # type: ignore[attr-defined]


def openai_model(stand_in: object, api_key: str | None = None) -> OpenAIEmbeddingModel:
    return OpenAIEmbeddingModel(
        "text-embedding-3-small",
        8,
        credential=OpenAICredential(
            api_key=api_key or stand_in.api_key,  # type: ignore[attr-defined]
            base_url=stand_in.base_url,  # type: ignore[attr-defined]
        ),
        http_client=stand_in.client(),  # type: ignore[attr-defined]
        retry_base_delay=0.001,
        clock=stand_in.clock,  # type: ignore[attr-defined]
    )


async def test_a_provider_refusing_one_files_text_fails_that_file_alone(
    openai_stand_in: object, tmp_path: Path
) -> None:
    refusing_stand_in(openai_stand_in, 400)
    files = write_notes(
        tmp_path,
        {"a.md": "Cats sleep.", "b.md": f"A {POISON} note.", "c.md": "Parrots talk."},
    )
    async with QdrantStore(location=":memory:") as store:
        kb = kb_over(openai_model(openai_stand_in), store)
        results = await ingest(kb, files)
        assert results["b.md"][0] is Outcome.FAILED
        assert "HTTP 400" in (results["b.md"][1] or "")
        assert results["a.md"][0] is results["c.md"][0] is Outcome.INDEXED
        assert set(await stored_hashes(kb)) == {"a.md", "c.md"}


async def test_a_failure_that_concerns_every_file_stops_the_run(
    openai_stand_in: object, tmp_path: Path
) -> None:
    files = write_notes(tmp_path, {"a.md": "Cats sleep.", "b.md": "Dogs walk."})
    async with QdrantStore(location=":memory:") as store:
        kb = kb_over(openai_model(openai_stand_in, api_key="sk-wrong"), store)
        with pytest.raises(EmbeddingAPIError) as raised:
            await ingest(kb, files)
    assert raised.value.status == 401
    assert len(openai_stand_in.requests) == 1  # type: ignore[attr-defined]


async def test_a_model_that_does_not_fit_the_collection_stops_the_run(
    default_model: EmbeddingModelBase, tmp_path: Path
) -> None:
    files = write_notes(tmp_path, {"a.md": "Cats sleep.", "b.md": "Dogs walk."})
    async with QdrantStore(location=":memory:") as store:
        await store.create_collection("notes", 8)
        with pytest.raises(ConfigurationError, match="8-d vectors") as raised:
            await ingest(kb_over(default_model, store), files)
    assert raised.value.setting == "embedding_model"
