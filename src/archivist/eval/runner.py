"""Index a BEIR corpus through the normal write path into a KnowledgeBase and score its search.

Each document (title + text) becomes one text Section, is split by the chunker that
`archivist index` uses and written with `KnowledgeBase.insert_documents` under its corpus id;
each query's documents are ranked by their best chunk, in the order the search lists them.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from archivist.embedding import CachedEmbeddingModel, EmbeddingModelBase
from archivist.eval.calibration import Calibration, Shown, reliability
from archivist.eval.dataset import BEIRDataset, CorpusDocument, EvalQuery, load_beir
from archivist.eval.metrics import DEFAULT_METRICS, evaluate, parse_metric, per_query
from archivist.message import TextBlock
from archivist.options import (
    CORPUS,
    EMBEDDING,
    EVAL_PGVECTOR_URL,
    MAX_PER_DOCUMENT,
    QUERIES,
    SEARCH_DEPTH,
    SEGMENT_POINTS,
    VECTOR_DATATYPE,
    setting_field,
)
from archivist.rag import Chunk, ChunkerBase, KnowledgeBase, NewDocument, Section
from archivist.rag.chunker import ChunkSettings
from archivist.rag.knowledge import factories
from archivist.rag.knowledge.profile import KnowledgeProfile, StoreSpec
from archivist.rag.store.base import SearchMode, check_search_mode
from archivist.rag.store.core.datatype import VectorDatatype

COLLECTION = "eval"
ProgressHook = Callable[[int], None]
"""Called with the number of documents just indexed."""
PROGRESS_EVERY = 10.0
"""Seconds between progress lines when stderr is not a terminal."""


class EvalConfig(ChunkSettings):
    """What to evaluate and how; the defaults are Archivist's `archivist index` defaults (the
    chunk size and overlap `ChunkSettings`')."""

    dataset_dir: Path
    split: str = "test"
    embedding_model: str = setting_field(EMBEDDING)
    mode: SearchMode = "hybrid"
    max_per_document: int | None = setting_field(MAX_PER_DOCUMENT)
    context_header: bool = Field(
        default=False, description="start each chunk with its document's title"
    )
    queries: int | None = setting_field(QUERIES)
    corpus: int | None = setting_field(CORPUS)
    seed: int = 0
    cache_dir: Path | None = None
    search_depth: int = setting_field(SEARCH_DEPTH)
    segment_points: int | None = setting_field(SEGMENT_POINTS)
    """None: no index, exact search."""
    quantization: Literal["int8"] | None = Field(
        default=None, description="the store's vector quantization (built with the index)"
    )
    vector_datatype: VectorDatatype = setting_field(VECTOR_DATATYPE)
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))
    pgvector_url: str | None = setting_field(EVAL_PGVECTOR_URL)
    calibration: bool = Field(
        default=False, description="also check the relevance shown against the judgments"
    )

    @model_validator(mode="after")
    def _check(self) -> EvalConfig:
        check_search_mode(self.mode)
        for name in self.metrics:
            parse_metric(name)
        return self


class EvalResult(BaseModel):
    """Mean metrics plus what produced them, how long each phase took, and what to trust.

    `embedding` says how many chunk inputs the cache served (timings of a cached run measure
    no embedding) and how many chunks exceeded the model's input and were truncated.
    """

    dataset: str
    documents: int
    empty_documents: int
    chunks: int
    queries: int
    metrics: dict[str, float]
    config: dict[str, Any]
    index_seconds: float
    search_seconds: float
    search_ms_p50: float
    embedding: dict[str, int | None]
    per_query: dict[str, dict[str, float]] = Field(default_factory=dict)
    calibration: Calibration | None = None
    """The reliability of the relevance shown (`EvalConfig.calibration`)."""


def document_section(doc: CorpusDocument, titled: bool = False) -> Section:
    """One Section for the whole document: title and text, or (`titled`) the text with the
    title in the Section's metadata, as the structured parsers deliver it."""
    title, text = doc.title.strip(), doc.text.strip()
    if titled and title and text:
        return Section(content=TextBlock(text=text), source=doc.id, metadata={"title": title})
    return Section(content=TextBlock(text=doc.text_for_indexing), source=doc.id, metadata={})


async def chunk_documents(
    docs: Sequence[CorpusDocument], chunker: ChunkerBase
) -> list[tuple[CorpusDocument, list[Chunk]]]:
    """Each document with text, with its chunks (documents without text are left out)."""
    out = []
    for doc in docs:
        if doc.text_for_indexing.strip():
            chunks = await chunker.chunk([document_section(doc)])
            if chunks:
                out.append((doc, chunks))
    return out


async def index_corpus(
    kb: KnowledgeBase,
    docs: Sequence[CorpusDocument],
    chunker: ChunkerBase,
    *,
    on_batch: ProgressHook | None = None,
    titled: bool = False,
) -> int:
    """Insert every document as its own KB document through `insert_documents` (chunked as
    it goes, packed into full embedding batches there); returns the number of chunks written."""
    total = 0
    sizes: dict[str, int] = {}

    def written(document_id: str, count: int) -> None:
        if on_batch is not None and count >= sizes[document_id]:
            on_batch(1)

    async def documents() -> AsyncIterator[NewDocument]:
        nonlocal total
        for doc in docs:
            chunks = []
            if doc.text_for_indexing.strip():
                chunks = await chunker.chunk([document_section(doc, titled)])
            if not chunks:
                if on_batch is not None:
                    on_batch(1)
                continue
            sizes[doc.id] = len(chunks)
            total += len(chunks)
            yield NewDocument(chunks=chunks, document_id=doc.id)

    await kb.insert_documents(documents(), on_progress=written)
    return total


async def rank_documents(
    kb: KnowledgeBase,
    queries: Sequence[EvalQuery],
    depth: int = 300,
    *,
    mode: SearchMode | None = None,
    max_per_document: int | None = None,
    latencies: list[float] | None = None,
    shown: list[Shown] | None = None,
) -> dict[str, dict[str, float]]:
    """Run each query alone; documents rank in the order of their best chunk among the top
    `depth` hits, as the search lists them (the score is `depth` minus that position). With
    no `max_per_document`, every chunk of a document may be among them. Each hit's document
    and relevance go to `shown`, in order, where given."""
    run: dict[str, dict[str, float]] = {}
    for query in queries:
        scores: dict[str, float] = {}
        started = time.perf_counter()
        hits = await kb.search(  # every copy: judgments name documents, not texts
            query.text,
            top_k=depth,
            mode=mode,
            max_per_document=max_per_document or depth,
            collapse_duplicates=False,
        )
        if latencies is not None:
            latencies.append(time.perf_counter() - started)
        for position, hit in enumerate(hits):
            scores.setdefault(hit.document_id, float(depth - position))
            if shown is not None and hit.relevance is not None:
                shown.append((query.id, hit.document_id, hit.relevance))
        run[query.id] = scores
    return run


def write_trec_run(run: dict[str, dict[str, float]], path: Path, name: str) -> None:
    """Write `run` as a TREC run file (`qid Q0 docid rank score name`), best first per query."""
    with path.open("w", encoding="utf-8") as out:
        for query_id, scores in run.items():
            ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
            for position, (doc_id, score) in enumerate(ranked, start=1):
                out.write(f"{query_id} Q0 {doc_id} {position} {score:.6f} {name}\n")


def eval_profile(config: EvalConfig, corpus: str) -> KnowledgeProfile:
    """The knowledge base one run indexes `corpus` into, as `config` describes it."""
    return KnowledgeProfile(
        name=f"eval-{corpus}",
        description=f"evaluation corpus {corpus}",
        embedding_model=config.embedding_model,
        chunk_size=config.chunk_size,
        overlap=config.overlap,
        context_header=config.context_header,
        collection=COLLECTION,
    )


def eval_store(config: EvalConfig) -> StoreSpec:
    """A fresh store for one run: Qdrant Edge in memory, or tables of their own in the
    PostgreSQL database `config.pgvector_url`."""
    if config.pgvector_url is not None:
        prefix = f"eval_{secrets.token_hex(4)}"
        return StoreSpec(
            kind="pgvector",
            url=config.pgvector_url,
            options={"table_prefix": prefix, "vector_datatype": config.vector_datatype},
        )
    return StoreSpec(
        options={
            "auto_optimize_threshold": config.segment_points,
            "quantization": config.quantization,
            "vector_datatype": config.vector_datatype,
        }
    )


@asynccontextmanager
async def _evaluated(
    profile: KnowledgeProfile, spec: StoreSpec, model: EmbeddingModelBase
) -> AsyncIterator[KnowledgeBase]:
    """An unscoped handle on a fresh store for the block; its collection is dropped after it
    (an in-memory store goes with it anyway)."""
    store = await factories.enter_store(spec)
    try:
        kb = factories.knowledge_base(profile, store, model, scoped=False)
        try:
            yield kb
        finally:
            if spec.kind != "edge":
                await store.delete_collection(profile.collection_name)
    finally:
        await store.__aexit__(None, None, None)


async def run_evaluation(
    config: EvalConfig,
    *,
    dataset: BEIRDataset | None = None,
    embedding_model: EmbeddingModelBase | None = None,
    progress: bool = False,
    run_file: Path | None = None,
) -> EvalResult:
    """Load (or take) the dataset, index it into a fresh in-memory store and score it."""
    data = dataset or load_beir(config.dataset_dir, config.split)
    data = data.subset(config.queries, config.corpus, config.seed)
    profile = eval_profile(config, data.name)
    model = embedding_model or factories.embedding_model(
        profile.embedding_model, cache_dir=config.cache_dir
    )
    chunker = factories.chunker(profile, model)
    latencies: list[float] = []
    shown: list[Shown] | None = [] if config.calibration else None
    cache = model if isinstance(model, CachedEmbeddingModel) else None
    cached_before = cache.totals.cached_inputs if cache is not None else 0
    async with _evaluated(profile, eval_store(config), model) as kb:
        started = time.perf_counter()
        with _progress(progress, len(data.corpus)) as advance:
            chunks = await index_corpus(
                kb, data.corpus, chunker, on_batch=advance, titled=config.context_header
            )
        indexed = time.perf_counter()
        served = None if cache is None else cache.totals.cached_inputs - cached_before
        run = await rank_documents(
            kb,
            data.queries,
            config.search_depth,
            mode=config.mode,
            max_per_document=config.max_per_document,
            latencies=latencies,
            shown=shown,
        )
        searched = time.perf_counter()
    if run_file is not None:
        write_trec_run(run, run_file, f"archivist-{config.mode}")
    scores = per_query(run, data.qrels, config.metrics)
    empty = sum(1 for doc in data.corpus if not doc.text_for_indexing.strip())
    return EvalResult(
        dataset=data.name,
        documents=len(data.corpus),
        empty_documents=empty,
        chunks=chunks,
        queries=len(scores),
        metrics=evaluate(run, data.qrels, config.metrics),
        config=config.model_dump(mode="json", exclude={"dataset_dir"}),
        index_seconds=round(indexed - started, 3),
        search_seconds=round(searched - indexed, 3),
        search_ms_p50=round(1000 * _median(latencies), 3),
        embedding=await _embedding_report(
            model, served, chunks, data.corpus, chunker, config.context_header
        ),
        per_query=scores,
        calibration=None if shown is None else reliability(shown, data.qrels),
    )


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


async def _embedding_report(
    model: EmbeddingModelBase,
    served: int | None,
    chunks: int,
    corpus: Sequence[CorpusDocument],
    chunker: ChunkerBase,
    titled: bool,
) -> dict[str, int | None]:
    """Chunk inputs the cache served and chunks over the model's input (cached or not)."""
    tokenizer = model.chunk_tokenizer()
    truncated: int | None = None
    if tokenizer is not None:
        truncated = 0
        for doc in corpus:
            if doc.text_for_indexing.strip():
                for chunk in await chunker.chunk([document_section(doc, titled)]):
                    text = chunk.content.text if isinstance(chunk.content, TextBlock) else ""
                    truncated += len(tokenizer.spans(text)) > tokenizer.max_tokens
    return {"chunk_inputs": chunks, "served_from_cache": served, "truncated": truncated}


class _progress:
    """Progress over documents on stderr: a rich bar on a terminal, else a line every
    `PROGRESS_EVERY` seconds; a no-op when disabled."""

    def __init__(self, enabled: bool, total: int) -> None:
        self._bar: Progress | None = None
        self._lines = enabled and not sys.stderr.isatty()
        self._done, self._total = 0, total
        self._last = time.monotonic()
        if enabled and not self._lines:
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
        self._done += count
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, count)
        elif self._lines and (
            time.monotonic() - self._last >= PROGRESS_EVERY or self._done >= self._total
        ):
            self._last = time.monotonic()
            print(f"indexing: {self._done}/{self._total} docs", file=sys.stderr, flush=True)


def results_table(result: EvalResult) -> Table:
    """The mean metrics and the run's size as a rich table."""
    table = Table(
        title=f"{result.dataset}: {result.documents} docs, {result.chunks} chunks, "
        f"{result.queries} queries, {result.config['mode']}"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in result.metrics.items():
        table.add_row(name, f"{value:.4f}")
    table.add_row("index time", f"{result.index_seconds:.1f} s")
    table.add_row("search time", f"{result.search_seconds:.1f} s")
    table.add_row("search p50", f"{result.search_ms_p50:.1f} ms")
    cached = result.embedding.get("served_from_cache")
    if cached is not None:
        table.add_row("from cache", f"{cached}/{result.embedding['chunk_inputs']} chunks")
    if result.empty_documents:
        table.add_row("empty docs", f"{result.empty_documents} (not indexed)")
    return table
