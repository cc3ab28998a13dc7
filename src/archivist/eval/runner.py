"""Index a BEIR corpus through the normal pipeline into a KnowledgeBase and score its search.

Each document (title + text) becomes one text Section, is split by the chunker and inserted
with `document_id` = its corpus id; each query's documents are ranked by their best chunk.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from archivist.embedding import (
    DEFAULT_EMBEDDING_MODEL,
    CachedEmbeddingModel,
    EmbeddingModelBase,
    LocalEmbeddingModel,
)
from archivist.eval.dataset import BEIRDataset, CorpusDocument, EvalQuery, load_beir
from archivist.eval.metrics import DEFAULT_METRICS, evaluate, parse_metric, per_query
from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, Chunk, ChunkerBase, KnowledgeBase, Section
from archivist.rag.store.qdrant import QdrantStore

COLLECTION = "eval"
ProgressHook = Callable[[int], None]
"""Called with the number of documents just indexed."""


class EvalConfig(BaseModel):
    """What to evaluate and how; the defaults are Archivist's `archivist index` defaults."""

    model_config = ConfigDict(extra="forbid")

    dataset_dir: Path
    split: str = "test"
    chunk_size: int = Field(default=256, gt=0)
    overlap: int = Field(default=32, ge=0)
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    queries: int | None = Field(default=None, ge=1, description="first N judged queries")
    corpus: int | None = Field(default=None, ge=1, description="corpus size incl. judged docs")
    seed: int = 0
    cache_dir: Path | None = None
    search_depth: int = Field(default=300, ge=1, description="chunks fetched per query")
    batch_size: int = Field(default=64, ge=1, description="documents per indexing batch")
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))

    @model_validator(mode="after")
    def _check(self) -> EvalConfig:
        if self.overlap >= self.chunk_size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than chunk_size")
        for name in self.metrics:
            parse_metric(name)
        return self


class EvalResult(BaseModel):
    """Mean metrics plus what produced them and how long each phase took."""

    dataset: str
    documents: int
    chunks: int
    queries: int
    metrics: dict[str, float]
    config: dict[str, Any]
    index_seconds: float
    search_seconds: float
    per_query: dict[str, dict[str, float]] = Field(default_factory=dict)


def document_section(doc: CorpusDocument) -> Section:
    """What TextParser would make of the document's text: one Section for the whole of it."""
    return Section(content=TextBlock(text=doc.text_for_indexing), source=doc.id, metadata={})


async def chunk_documents(
    docs: Sequence[CorpusDocument], chunker: ChunkerBase
) -> list[tuple[CorpusDocument, list[Chunk]]]:
    """Each non-empty document with its chunks (documents with no text are dropped)."""
    out = []
    for doc in docs:
        if doc.text_for_indexing.strip():
            out.append((doc, await chunker.chunk([document_section(doc)])))
    return [(doc, chunks) for doc, chunks in out if chunks]


async def index_corpus(
    kb: KnowledgeBase,
    docs: Sequence[CorpusDocument],
    chunker: ChunkerBase,
    *,
    batch_size: int = 64,
    on_batch: ProgressHook | None = None,
) -> int:
    """Insert every document as its own KB document, `batch_size` at a time; returns chunks.

    Behind a `CachedEmbeddingModel` each batch's chunk texts are embedded first in one
    call, so the per-document inserts hit the cache and the model sees full batches.
    """
    total = 0
    for start in range(0, len(docs), batch_size):
        batch = await chunk_documents(docs[start : start + batch_size], chunker)
        if isinstance(kb.embedding_model, CachedEmbeddingModel):
            texts = [c.content for _, chunks in batch for c in chunks]
            await kb.embedding_model(texts, input_type="document")
        await asyncio.gather(
            *(kb.insert_document(chunks, document_id=doc.id) for doc, chunks in batch)
        )
        total += sum(len(chunks) for _, chunks in batch)
        if on_batch is not None:
            on_batch(min(batch_size, len(docs) - start))
    return total


async def retrieve(
    kb: KnowledgeBase, queries: Sequence[EvalQuery], depth: int = 300
) -> dict[str, dict[str, float]]:
    """Run each query alone; a document's score is its best chunk's among the top `depth`."""
    run: dict[str, dict[str, float]] = {}
    for query in queries:
        scores: dict[str, float] = {}
        for hit in await kb.search(query.text, top_k=depth):
            if hit.score > scores.get(hit.document_id, float("-inf")):
                scores[hit.document_id] = hit.score
        run[query.id] = scores
    return run


def build_embedding_model(name: str, cache_dir: Path | None) -> EmbeddingModelBase:
    """The named offline model, behind a disk cache when `cache_dir` is given."""
    model = LocalEmbeddingModel(name)
    return CachedEmbeddingModel(model, cache_dir) if cache_dir is not None else model


async def run_evaluation(
    config: EvalConfig,
    *,
    dataset: BEIRDataset | None = None,
    embedding_model: EmbeddingModelBase | None = None,
    progress: bool = False,
) -> EvalResult:
    """Load (or take) the dataset, index it into a fresh in-memory store and score it."""
    data = dataset or load_beir(config.dataset_dir, config.split)
    data = data.subset(config.queries, config.corpus, config.seed)
    model = embedding_model or build_embedding_model(config.embedding_model, config.cache_dir)
    chunker = ApproxTokenChunker(chunk_size=config.chunk_size, overlap=config.overlap)
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        kb = KnowledgeBase(
            name=f"eval-{data.name}",
            description=f"evaluation corpus {data.name}",
            embedding_model=model,
            vector_store=store,
            collection=COLLECTION,
        )
        started = time.perf_counter()
        with _progress(progress, len(data.corpus)) as advance:
            chunks = await index_corpus(
                kb, data.corpus, chunker, batch_size=config.batch_size, on_batch=advance
            )
        indexed = time.perf_counter()
        run = await retrieve(kb, data.queries, config.search_depth)
        searched = time.perf_counter()
    scores = per_query(run, data.qrels, config.metrics)
    return EvalResult(
        dataset=data.name,
        documents=len(data.corpus),
        chunks=chunks,
        queries=len(scores),
        metrics=evaluate(run, data.qrels, config.metrics),
        config=config.model_dump(mode="json", exclude={"dataset_dir"}),
        index_seconds=round(indexed - started, 3),
        search_seconds=round(searched - indexed, 3),
        per_query=scores,
    )


class _progress:
    """A rich progress bar over documents, or a no-op when disabled."""

    def __init__(self, enabled: bool, total: int) -> None:
        self._bar: Progress | None = None
        if enabled:
            self._bar = Progress(
                TextColumn("indexing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("docs"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
        self._task = self._bar.add_task("index", total=total) if self._bar else None

    def __enter__(self) -> ProgressHook:
        if self._bar is not None:
            self._bar.start()
        return self._advance

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def _advance(self, count: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, count)


def results_table(result: EvalResult) -> Table:
    """The mean metrics and the run's size as a rich table."""
    table = Table(
        title=f"{result.dataset}: {result.documents} docs, {result.chunks} chunks, "
        f"{result.queries} queries"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in result.metrics.items():
        table.add_row(name, f"{value:.4f}")
    table.add_row("index time", f"{result.index_seconds:.1f} s")
    table.add_row("search time", f"{result.search_seconds:.1f} s")
    return table
