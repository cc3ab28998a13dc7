"""The raw material of relevance calibration, computed once per model and dataset and kept.

Each chunk's BM25 term counts and dense vector, each query's terms and vector.

`python -m benchmarks calibrate_relevance` fits and checks relevance curves from it without
embedding anything again: every evidence a search computes (similarity, BM25 with the IDF of
any sub-corpus, coverage) is a function of these counts and vectors.

    .venv/bin/python -m benchmarks relevance_data --model NAME --dataset DIR
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from _common import BENCHMARKS, DATASETS

from archivist.cli.home import cache_dir
from archivist.embedding import CachedEmbeddingModel, LocalEmbeddingModel
from archivist.eval.dataset import BEIRDataset, load_beir
from archivist.eval.runner import document_section
from archivist.message import TextBlock
from archivist.rag.chunker import chunker_for
from archivist.rag.store.core.bm25 import Bm25Encoder

KEPT = BENCHMARKS / ".cache" / "relevance"


@dataclass
class Material:
    """A dataset's chunks and queries as a search sees them, for one embedding model."""

    model: str
    dataset: str
    chunk_documents: list[str]
    """The corpus id of each chunk."""
    chunk_terms: list[dict[int, int]]
    """Each chunk's BM25 term counts."""
    chunk_lengths: np.ndarray
    chunk_vectors: np.ndarray
    """L2-normalised, one row a chunk."""
    queries: dict[str, list[str]] = field(default_factory=dict)
    """split -> query ids (every split with judgments)."""
    query_terms: dict[str, list[int]] = field(default_factory=dict)
    query_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    query_texts: dict[str, str] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)


def kept_path(model: str, dataset: Path) -> Path:
    key = hashlib.sha256(f"{model}|{dataset.resolve()}".encode()).hexdigest()[:12]
    return KEPT / f"{dataset.name}-{model}-{key}.pickle"


def splits(dataset: Path) -> list[str]:
    return sorted(p.stem for p in (dataset / "qrels").glob("*.tsv"))


async def build(model_name: str, dataset: Path) -> Material:
    model = CachedEmbeddingModel(LocalEmbeddingModel(model_name), cache_dir())
    chunker = chunker_for(model.chunk_tokenizer(), None, 32)
    encoder = Bm25Encoder()
    loaded: dict[str, BEIRDataset] = {split: load_beir(dataset, split) for split in splits(dataset)}
    corpus = next(iter(loaded.values())).corpus
    documents: list[str] = []
    texts: list[str] = []
    for doc in corpus:
        if not doc.text_for_indexing.strip():
            continue
        for chunk in await chunker.chunk([document_section(doc)]):
            assert isinstance(chunk.content, TextBlock)
            documents.append(doc.id)
            texts.append(chunk.content.text)
    counts = [encoder.count(text) for text in texts]
    vectors = []
    for start in range(0, len(texts), 256):
        batch = await model(texts[start : start + 256], input_type="document")
        vectors.extend(batch.embeddings)
        print(f"{model_name} {dataset.name}: {start + len(batch.embeddings)}/{len(texts)}")
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True) + 1e-12
    material = Material(
        model=model_name,
        dataset=dataset.name,
        chunk_documents=documents,
        chunk_terms=[dict(c.counts) for c in counts],
        chunk_lengths=np.asarray([c.length for c in counts], dtype=np.float32),
        chunk_vectors=matrix,
    )
    for split, data in loaded.items():
        material.queries[split] = [q.id for q in data.queries]
        material.qrels.update({q: dict(j) for q, j in data.qrels.items()})
        texts_of = {q.id: q.text for q in data.queries}
        material.query_texts.update(texts_of)
        ids = list(texts_of)
        for start in range(0, len(ids), 64):
            chunk_ids = ids[start : start + 64]
            batch = await model([texts_of[q] for q in chunk_ids], input_type="query")
            for qid, vector in zip(chunk_ids, batch.embeddings, strict=True):
                v = np.asarray(vector, dtype=np.float32)
                material.query_vectors[qid] = v / (np.linalg.norm(v) + 1e-12)
        for qid, text in texts_of.items():
            material.query_terms[qid] = list(encoder.query(text).indices)
    return material


def load(model: str, dataset: Path) -> Material:
    """The material of `model` on `dataset`, built and kept on first use."""
    path = kept_path(model, dataset)
    if path.is_file():
        with open(path, "rb") as fh:
            kept: Material = pickle.load(fh)
            return kept
    material = asyncio.run(build(model, dataset))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        pickle.dump(material, fh, pickle.HIGHEST_PROTOCOL)
    return material


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2-int8")
    parser.add_argument("--dataset", type=Path, default=DATASETS / "scifact")
    args = parser.parse_args(argv)
    material = load(args.model, args.dataset)
    print(
        f"{material.model} {material.dataset}: {len(material.chunk_documents)} chunks, "
        + ", ".join(f"{s} {len(q)} queries" for s, q in material.queries.items())
    )


if __name__ == "__main__":
    main()
