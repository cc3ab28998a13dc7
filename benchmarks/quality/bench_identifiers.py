"""Identifier questions over real manuals: do flags and API names find the page that has them?

    .venv/bin/python -m benchmarks identifiers [--pages 100] [--out NAME]

Corpus: man pages under /usr/share/man/man1 rendered to text with `man` (a fixed-seed
sample of `--pages` pages of 3-80 kB, default 30, plus tar, cmake, valgrind, git, curl and
find when installed) and the HTML manuals under /usr/share/doc/{valgrind,libxslt1-dev}.
Questions are drawn by a fixed rule, not by hand: every multi-part long flag (`--a-b`) of a
man page and every API name (CamelCase, snake_case or UPPER_CASE with an underscore, e.g.
`xsltApplyStylesheet`, `VALGRIND_MAKE_MEM_DEFINED`) of an HTML manual that occurs in exactly
one document of the corpus; a fixed-seed sample of `--flags` flags and `--names` names,
asked as "what does X do". The answer is the one document holding it. Reported per search
mode: hit@1, hit@5 and MRR@10 by document, for how many questions the right document's
best hit, or another top-5 document's, clears `DEFAULT_MIN_RELEVANCE`, and, for the five
hits `KnowledgeBase.search` shows (by default, and without spreading them over documents),
how often the right document is among them and how many documents they come from. Uses
only the public API, so the same script measures any revision (`PYTHONPATH=<checkout>/src`);
embeddings come from the shared disk cache.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import write_result

from archivist.embedding import CachedEmbeddingModel, LocalEmbeddingModel
from archivist.rag import KnowledgeBase
from archivist.rag.chunker import chunker_for
from archivist.rag.knowledge.ingest import ingest_files
from archivist.rag.parser.registry import default_registry
from archivist.rag.store.base import SearchMode
from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE
from archivist.rag.store.qdrant import QdrantStore

MAN = Path("/usr/share/man/man1")
HTML_MANUALS = ["valgrind", "libxslt1-dev"]
ALWAYS = ["tar", "cmake", "valgrind", "git", "curl", "find"]
FLAG = re.compile(r"(?<![\w-])--[a-z0-9]+(?:-[a-z0-9]+)+(?![\w-])")
NAME = re.compile(
    r"(?<![\w.])(?:[a-z]+[A-Z][A-Za-z0-9]+|[a-z]+_[a-z0-9_]+|[A-Z][A-Z0-9]+_[A-Z0-9_]+)(?![\w])"
)
MODES: tuple[SearchMode, ...] = ("hybrid", "sparse", "dense")


def render_man_pages(target: Path, pages: int, seed: int) -> list[Path]:
    """Man pages as plain-text files in `target`: the fixed ones plus a seeded sample."""
    names = sorted({p.name.split(".")[0] for p in MAN.glob("*.1.gz")})
    rng = random.Random(seed)
    chosen = [n for n in ALWAYS if n in names]
    pool = [n for n in names if n not in chosen]
    rng.shuffle(pool)
    written: list[Path] = []
    for name in chosen + pool:
        if len(written) >= pages + len([n for n in ALWAYS if n in names]):
            break
        rendered = subprocess.run(
            ["man", "-P", "cat", name],
            capture_output=True,
            text=True,
            env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            check=False,
        ).stdout
        plain = re.sub(".\b", "", rendered)
        if not 3_000 <= len(plain) <= 80_000 and name not in ALWAYS:
            continue
        path = target / f"man-{name}.txt"
        path.write_text(plain)
        written.append(path)
    return written


def copy_html_manuals(target: Path) -> list[Path]:
    """The HTML manuals, copied flat into `target` (names keep their package)."""
    copied = []
    for package in HTML_MANUALS:
        for source in sorted(Path("/usr/share/doc", package).rglob("*.html")):
            path = target / f"{package}-{source.stem}.html"
            shutil.copyfile(source, path)
            copied.append(path)
    return copied


def questions(files: list[Path], flags: int, names: int, seed: int) -> list[tuple[str, str]]:
    """(identifier, file name) pairs: identifiers found in exactly one file, seeded sample."""
    where: dict[str, set[str]] = defaultdict(set)
    kind: dict[str, str] = {}
    for path in files:
        text = path.read_text(errors="replace")
        if path.suffix == ".html":
            text = re.sub(r"<[^>]+>", " ", text)
        for flag in FLAG.findall(text):
            where[flag].add(path.name)
            kind[flag] = "flag"
        if path.suffix == ".html":
            for name in NAME.findall(text):
                where[name].add(path.name)
                kind.setdefault(name, "name")
    unique = sorted((ident, next(iter(f))) for ident, f in where.items() if len(f) == 1)
    rng = random.Random(seed)
    by_kind = {k: [q for q in unique if kind[q[0]] == k] for k in ("flag", "name")}
    picked = rng.sample(by_kind["flag"], min(flags, len(by_kind["flag"])))
    picked += rng.sample(by_kind["name"], min(names, len(by_kind["name"])))
    return picked


async def measure(args: argparse.Namespace) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="bench-identifiers-"))
    try:
        files = render_man_pages(work, args.pages, args.seed) + copy_html_manuals(work)
        asked = questions(files, args.flags, args.names, args.seed)
        model = CachedEmbeddingModel(LocalEmbeddingModel(), Path.home() / ".cache" / "archivist")
        chunker = chunker_for(model.chunk_tokenizer(), None, 32)
        async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
            kb = KnowledgeBase("manuals", "man pages and HTML manuals", model, store, "manuals")
            started = time.perf_counter()
            report = await ingest_files(kb, files, registry=default_registry(), chunker=chunker)
            indexed = time.perf_counter() - started
            chunks = sum(r.chunks for r in report.results)
            results: dict[str, dict[str, object]] = {}
            for mode in MODES:
                ranks = []
                right_clears = other_clears = 0
                shown = {"shown": [0, 0], "shown_without_spreading": [0, 0]}
                for identifier, expected in asked:
                    hits = await kb.search(f"what does {identifier} do", top_k=50, mode=mode)
                    documents: list[str] = []
                    best: dict[str, float] = {}
                    for hit in hits:
                        name = Path(str(hit.chunk.metadata.get("path"))).name
                        if name not in documents:
                            documents.append(name)
                            best[name] = hit.relevance or 0.0
                    ranks.append(documents.index(expected) + 1 if expected in documents else 0)
                    for label, cap in (("shown", None), ("shown_without_spreading", 5)):
                        top5 = await kb.search(
                            f"what does {identifier} do", top_k=5, mode=mode, max_per_document=cap
                        )
                        names = {Path(str(h.chunk.metadata.get("path"))).name for h in top5}
                        shown[label][0] += expected in names
                        shown[label][1] += len(names)
                    right_clears += best.get(expected, 0.0) >= DEFAULT_MIN_RELEVANCE
                    other_clears += any(
                        best[name] >= DEFAULT_MIN_RELEVANCE
                        for name in documents[:5]
                        if name != expected
                    )
                results[mode] = {
                    "right_document_clears_min_relevance": right_clears,
                    "another_in_top5_clears_min_relevance": other_clears,
                    "hit@1": sum(r == 1 for r in ranks),
                    "hit@5": sum(1 <= r <= 5 for r in ranks),
                    "mrr@10": round(sum(1 / r for r in ranks if 1 <= r <= 10) / len(ranks), 3),
                    "misses@5": [q for q, r in zip(asked, ranks, strict=True) if not 1 <= r <= 5],
                    **{
                        f"{label}_top5": {
                            "right_document_in_it": found,
                            "distinct_documents": round(distinct / len(asked), 2),
                        }
                        for label, (found, distinct) in shown.items()
                    },
                }
        return {
            "documents": len(files),
            "chunks": chunks,
            "index_seconds": round(indexed, 1),
            "questions": len(asked),
            "asked": asked,
            "modes": results,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=30, help="sampled man pages")
    parser.add_argument("--flags", type=int, default=30, help="flag questions")
    parser.add_argument("--names", type=int, default=15, help="API-name questions")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", default="identifiers", help="results/<out>.json")
    args = parser.parse_args(argv)
    if not MAN.is_dir() or shutil.which("man") is None:
        print("no man pages or no `man` on this machine: nothing to measure", file=sys.stderr)
        return
    result = asyncio.run(measure(args))
    write_result(args.out, result)
    print(
        f"{result['questions']} questions, {result['documents']} documents, "
        f"{result['chunks']} chunks"
    )
    print(f"{'mode':8} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7}")
    for mode, row in result["modes"].items():  # type: ignore[attr-defined]
        print(f"{mode:8} {row['hit@1']:>6} {row['hit@5']:>6} {row['mrr@10']:>7}")


if __name__ == "__main__":
    main()
