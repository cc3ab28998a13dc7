"""BEIR-layout retrieval datasets: loading `corpus`, `queries` and `qrels`, and subsetting them.

A dataset directory holds `corpus.jsonl` (or `corpus.jsonl.gz`), `queries.jsonl` and
`qrels/<split>.tsv` (header `query-id  corpus-id  score`, LF or CRLF line endings).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

_M = TypeVar("_M", bound=BaseModel)

Qrels = dict[str, dict[str, int]]
"""query id → {corpus id → graded relevance}."""


class CorpusDocument(BaseModel):
    """One corpus record; `text_for_indexing` is what gets chunked and embedded."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    id: str = Field(alias="_id")
    title: str = ""
    text: str = ""

    @property
    def text_for_indexing(self) -> str:
        """Title and body separated by a blank line; the body alone when untitled or when it
        already starts with the title."""
        title, text = self.title.strip(), self.text.strip()
        if title and text and not text.startswith(title):
            return f"{title}\n\n{text}"
        return text or title


class EvalQuery(BaseModel):
    """One query record."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    id: str = Field(alias="_id")
    text: str


class BEIRDataset(BaseModel):
    """A corpus, the queries that have judgments in the split, and those judgments."""

    name: str
    corpus: list[CorpusDocument]
    queries: list[EvalQuery]
    qrels: Qrels

    def subset(
        self, queries: int | None = None, corpus: int | None = None, seed: int = 0
    ) -> BEIRDataset:
        """A deterministic smaller dataset, so quick runs stay comparable across runs.

        Keeps the first `queries` queries (in file order), every document judged for them,
        and fills the corpus up to `corpus` documents with a `seed`-fixed sample of the rest
        (distractors). Judged documents are never dropped, so `corpus` may be exceeded.
        """
        chosen = self.queries if queries is None else self.queries[: max(queries, 0)]
        qrels = {q.id: dict(self.qrels[q.id]) for q in chosen}
        if corpus is None:
            docs = self.corpus
        else:
            judged = {doc_id for judgments in qrels.values() for doc_id in judgments}
            others = [d for d in self.corpus if d.id not in judged]
            room = max(corpus - len(judged), 0)
            sampled = {d.id for d in random.Random(seed).sample(others, min(room, len(others)))}
            docs = [d for d in self.corpus if d.id in judged or d.id in sampled]
        return BEIRDataset(name=self.name, corpus=docs, queries=list(chosen), qrels=qrels)


def _open_text(path: Path) -> io.TextIOWrapper:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return io.TextIOWrapper(open(path, "rb"), encoding="utf-8")


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open_text(path) as fh:
        for number, line in enumerate(fh, 1):
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
                if not isinstance(record, dict):
                    raise ValueError(f"{path}:{number}: expected a JSON object")
                yield number, record


def _find(directory: Path, *names: str) -> Path:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    raise FileNotFoundError(f"{directory}: none of {', '.join(names)} exists")


def load_qrels(path: Path) -> Qrels:
    """Read a qrels TSV with a header row; CRLF endings and blank lines are tolerated."""
    qrels: Qrels = {}
    with open(path, encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        header = next(rows, None)
        if header is None or [h.strip() for h in header[:2]] != ["query-id", "corpus-id"]:
            raise ValueError(f"{path}: expected a 'query-id<TAB>corpus-id<TAB>score' header")
        for number, row in enumerate(rows, 2):
            row = [cell.strip() for cell in row]
            if not any(row):
                continue
            if len(row) < 3:
                raise ValueError(f"{path}:{number}: expected 3 tab-separated fields")
            try:
                score = int(row[2])
            except ValueError:
                raise ValueError(f"{path}:{number}: score {row[2]!r} is not an integer") from None
            qrels.setdefault(row[0], {})[row[1]] = score
    return qrels


def load_beir(directory: str | Path, split: str = "test") -> BEIRDataset:
    """Load a BEIR dataset directory; only queries judged in `split` are kept, in file order."""
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset directory not found: {root}")
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        raise FileNotFoundError(f"{qrels_path} not found")
    qrels = load_qrels(qrels_path)
    corpus_path = _find(root, "corpus.jsonl", "corpus.jsonl.gz")
    corpus = [_record(CorpusDocument, corpus_path, n, r) for n, r in _jsonl(corpus_path)]
    queries_path = _find(root, "queries.jsonl", "queries.jsonl.gz")
    queries = [
        query
        for n, r in _jsonl(queries_path)
        if (query := _record(EvalQuery, queries_path, n, r)).id in qrels
    ]
    known = {d.id for d in corpus}
    if len(known) != len(corpus):
        raise ValueError(f"{corpus_path}: duplicate document ids")
    missing = sorted(set(qrels) - {q.id for q in queries})
    if missing:
        raise ValueError(
            f"{qrels_path}: {len(missing)} judged queries are not in {queries_path.name}, "
            f"e.g. {missing[0]!r}"
        )
    return BEIRDataset(name=root.name, corpus=corpus, queries=queries, qrels=qrels)


def _record(cls: type[_M], path: Path, number: int, record: dict[str, Any]) -> _M:
    """Validate one JSONL record (ids may be numbers), naming the file and line on failure."""
    if isinstance(record.get("_id"), int):
        record = {**record, "_id": str(record["_id"])}
    try:
        return cls.model_validate(record)
    except ValueError as exc:
        raise ValueError(f"{path}:{number}: {exc}") from None
