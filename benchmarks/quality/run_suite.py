"""Archivist vs AgentScope 2.0.11: quality, ingest, search latency, PDF parsing, peak memory.

Side by side: retrieval quality, ingest throughput, search latency, PDF parsing and peak
memory. One command:

    .venv/bin/python -m benchmarks suite [--quick] [--skip SECTION ...]

Every measurement runs in its own subprocess (so each reports its own peak RSS): Archivist's
through `archivist_driver.py` in this venv, AgentScope's through `agentscope_driver.py` in
`benchmarks/.venv-agentscope`, which the suite creates on first use (agentscope[rag]==2.0.11,
qdrant-client and this repo, editable, so both embed with the same model). Writes
`benchmarks/results/suite_*.json`, PNG plots and `REPORT.md`: the suite's tables, then the
figures other benchmark scripts last wrote there (`report_sections.py`). Subsets (deterministic):

| section  | full                                   | --quick                               |
|----------|----------------------------------------|---------------------------------------|
| quality  | SciFact test: 300 queries, 5,183 docs  | first 30 queries, 300 docs (judged + seed-0 sample) |
| ingest   | 300 SciFact docs (seed-0 sample)       | 30 docs                               |
| latency  | 10k and 100k chunks, ≤200 queries/20 s | 10k chunks, ≤50 queries/5 s           |
| pdf      | 300 pages, best of 3                   | 300 pages, best of 1                  |

Quality runs share an embedding cache (`results/tmp/embedding-cache`), so only the first
run embeds the corpus; ingest and raw-embedder runs are uncached.
"""

# ruff: noqa: E501  (the subset table in the docstring)
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import BENCHMARKS, RESULTS, ROOT, SCIFACT, write_result

HERE = Path(__file__).resolve().parent
TMP = RESULTS / "tmp"
AS_VENV = BENCHMARKS / ".venv-agentscope"
AS_PYTHON = AS_VENV / "bin" / "python"
AS_REQUIREMENTS = ["agentscope[rag]==2.0.11", "qdrant-client"]
MARKER = "SUITE-RESULT "
PDF_LINE = "The quarterly report covers revenue, costs and the outlook for the next year. 第{n}页。"
SECTIONS = ("quality", "ingest", "latency", "pdf")

TARGETS = {
    "quality": "nDCG@10 of the default configuration ≥ 0.73 (and ≥ AgentScope's and BM25's)",
    "ingest": "≥ 0.9 of the raw embedder's throughput",
    "latency": "tenant-filtered top-5 at 100k ≥ 300× faster than AgentScope's embedded Qdrant",
    "pdf": "≥ 5× AgentScope's pages/s",
    "rss": "≤ 1.5 GB peak RSS indexing 100k chunks with Archivist",
}


def plan(quick: bool) -> dict[str, Any]:
    """The sizes of every section for a full or a quick run."""
    if quick:
        return {
            "quality": {"queries": 30, "corpus": 300},
            "ingest_docs": 30,
            "latency": {"sizes": [10_000], "queries": 50, "budget_s": 5.0, "optimize": False},
            "pdf": {"pages": 300, "repeat": 1},
        }
    return {
        "quality": {"queries": None, "corpus": None},
        "ingest_docs": 300,
        "latency": {"sizes": [10_000, 100_000], "queries": 200, "budget_s": 20.0, "optimize": True},
        "pdf": {"pages": 300, "repeat": 3},
    }


def ensure_agentscope_venv() -> None:
    """Create the AgentScope venv unless it already imports agentscope and archivist."""
    probe = [str(AS_PYTHON), "-c", "import agentscope.rag, archivist.embedding, qdrant_client"]
    if AS_PYTHON.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return
    print(f"creating {AS_VENV} (agentscope[rag]==2.0.11) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(AS_VENV)], check=True)
    pip = [str(AS_PYTHON), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *AS_REQUIREMENTS, "-e", str(ROOT)], check=True)


def run_driver(system: str, task: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement in a fresh process and return its JSON (or the error)."""
    python, script = (
        (AS_PYTHON, HERE / "agentscope_driver.py")
        if system == "agentscope"
        else (Path(sys.executable), HERE / "archivist_driver.py")
    )
    started = time.perf_counter()
    print(f"  {system:<10} {task:<10} {json.dumps(params)[:90]}", flush=True)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [str(python), str(script), task, json.dumps(params)],
        capture_output=True,
        text=True,
        env=env,
        cwd=BENCHMARKS,
    )
    wall = round(time.perf_counter() - started, 1)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            result: dict[str, Any] = json.loads(line[len(MARKER) :])
            result["wall_seconds"] = wall
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    print("    FAILED:\n    " + "\n    ".join(tail), flush=True)
    return {"system": system, "error": "\n".join(tail), "wall_seconds": wall}


def ingest_files(count: int) -> Path:
    """Write `count` SciFact documents (seed-0 sample) as .txt files; returns the folder."""
    sys.path.insert(0, str(ROOT / "src"))
    from archivist.eval import load_beir

    corpus = load_beir(SCIFACT).corpus
    folder = TMP / f"ingest-{count}"
    if not folder.is_dir() or len(list(folder.glob("*.txt"))) != count:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.txt"):
            old.unlink()
        for doc in random.Random(0).sample(corpus, count):
            (folder / f"{doc.id}.txt").write_text(doc.text_for_indexing, "utf-8")
    return folder


def pdf_file(pages: int) -> Path:
    """A generated `pages`-page text PDF (40 lines a page, some CJK), made once."""
    path = TMP / f"bench-{pages}.pdf"
    if not path.exists():
        from factories import make_pdf

        TMP.mkdir(parents=True, exist_ok=True)
        path.write_bytes(
            make_pdf(["\n".join(PDF_LINE.format(n=p) for _ in range(40)) for p in range(pages)])
        )
    return path


def run_quality(cfg: dict[str, Any]) -> dict[str, Any]:
    """SciFact: Archivist default (hybrid) and dense-only vs AgentScope seed configuration vs
    BM25."""
    params = {"dataset": str(SCIFACT), "cache_dir": str(TMP / "embedding-cache"), **cfg}
    return {
        "subset": cfg,
        "archivist": run_driver("archivist", "quality", params),
        "archivist_dense": run_driver("archivist", "quality", {**params, "mode": "dense"}),
        "agentscope": run_driver("agentscope", "quality", params),
        "bm25": run_driver("archivist", "bm25", params),
    }


def run_ingest(count: int) -> dict[str, Any]:
    """End-to-end ingest of the same files by both pipelines, and the raw embedder on them."""
    params = {"dir": str(ingest_files(count))}
    out = {
        "documents": count,
        "raw": run_driver("archivist", "raw_embed", params),
        "archivist": run_driver("archivist", "ingest", params),
        "agentscope": run_driver("agentscope", "ingest", params),
    }
    raw = out["raw"].get("seconds")
    for system in ("archivist", "agentscope"):
        seconds = out[system].get("seconds")
        if raw and seconds:
            out[system]["docs_per_s"] = round(count / seconds, 2)
            out[system]["fraction_of_raw"] = round(raw / seconds, 3)
    if raw:
        out["raw"]["docs_per_s"] = round(count / raw, 2)
    return out


def run_latency(cfg: dict[str, Any]) -> dict[str, Any]:
    """Both systems' KnowledgeBase.search over the same vectors at each size."""
    out: dict[str, Any] = {"sizes": {}}
    for size in cfg["sizes"]:
        params = {"size": size, "queries": cfg["queries"], "budget_s": cfg["budget_s"]}
        ours = run_driver("archivist", "latency", {**params, "optimize": cfg["optimize"]})
        theirs = run_driver("agentscope", "latency", params)
        ratios = {}
        for label in ("unfiltered", "filtered"):
            for prefix in ("", "hnsw_"):
                if prefix + label in ours and label in theirs:
                    for stat in ("p50_ms", "p95_ms"):
                        ratios[f"{prefix}{label}_{stat}"] = round(
                            theirs[label][stat] / max(ours[prefix + label][stat], 1e-6), 1
                        )
        out["sizes"][str(size)] = {"archivist": ours, "agentscope": theirs, "speedup": ratios}
    return out


def run_pdf(cfg: dict[str, Any]) -> dict[str, Any]:
    """Pages/s of both PDF parsers on the same generated PDF."""
    params = {"path": str(pdf_file(cfg["pages"])), "repeat": cfg["repeat"]}
    out: dict[str, Any] = {"pages": cfg["pages"]}
    for system in ("archivist", "agentscope"):
        result = run_driver(system, "pdf", params)
        if "seconds" in result:
            result["pages_per_s"] = round(cfg["pages"] / result["seconds"], 1)
        out[system] = result
    if "pages_per_s" in out["archivist"] and "pages_per_s" in out["agentscope"]:
        out["speedup"] = round(
            out["archivist"]["pages_per_s"] / out["agentscope"]["pages_per_s"], 2
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small subsets, < 3 minutes")
    parser.add_argument("--skip", nargs="*", default=[], choices=SECTIONS)
    parser.add_argument(
        "--report-only", action="store_true", help="re-render REPORT.md and plots from suite.json"
    )
    args = parser.parse_args(argv)
    if args.report_only:
        name = "suite-quick.json" if args.quick else "suite.json"
        write_report(json.loads((RESULTS / name).read_text()))
        return
    if not SCIFACT.is_dir() and not {"quality", "ingest"} <= set(args.skip):
        sys.exit(f"SciFact not found at {SCIFACT}; pass --skip quality ingest")
    started = time.perf_counter()
    ensure_agentscope_venv()
    TMP.mkdir(parents=True, exist_ok=True)
    sizes = plan(args.quick)
    mode = "quick" if args.quick else "full"
    report: dict[str, Any] = {
        "mode": mode,
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "machine": machine(),
    }
    steps = {
        "quality": lambda: run_quality(sizes["quality"]),
        "ingest": lambda: run_ingest(sizes["ingest_docs"]),
        "latency": lambda: run_latency(sizes["latency"]),
        "pdf": lambda: run_pdf(sizes["pdf"]),
    }
    previous = _previous_run(mode)
    for name in SECTIONS:
        if name in args.skip:
            # A skipped section keeps the figures of the run that last measured it.
            if name in previous:
                report[name] = previous[name]
            continue
        print(f"[{name}]", flush=True)
        report[name] = {**steps[name](), "measured": report["when"]}
        write_json(f"suite_{name}", report[name], mode)
    report["notes"] = [
        f"{name}: measured {report[name].get('measured', previous.get('when', 'earlier'))}"
        for name in SECTIONS
        if name in args.skip and name in report
    ]
    report["seconds"] = round(time.perf_counter() - started, 1)
    write_json("suite", report, mode)
    write_report(report)
    print(f"total {report['seconds']} s")


def _previous_run(mode: str) -> dict[str, Any]:
    """The last run's report (suite.json), or nothing."""
    path = RESULTS / ("suite-quick.json" if mode == "quick" else "suite.json")
    return json.loads(path.read_text()) if path.is_file() else {}


def write_report(report: dict[str, Any]) -> None:
    """REPORT.md (REPORT-quick.md for quick runs) and the PNG plots beside it."""
    from report_sections import (
        render_hostile_uploads,
        render_ocr,
        render_other_scripts,
        render_search_trust,
        render_store_pauses,
        render_stores,
    )
    from suite_report import render_plots, render_report

    plots = render_plots(report, RESULTS)
    name = "REPORT-quick.md" if report["mode"] == "quick" else "REPORT.md"
    text = render_report(report, plots, TARGETS)
    if report["mode"] != "quick":
        extra = (
            render_search_trust(RESULTS)
            + render_hostile_uploads(RESULTS)
            + render_store_pauses(RESULTS)
            + render_ocr(RESULTS)
            + render_stores(RESULTS)
            + render_other_scripts()
        )
        text = text.rstrip() + "\n\n" + "\n".join(extra)
    path = RESULTS / name
    path.write_text(text)
    print(text)
    if report["mode"] != "quick":
        update_docs(text)


REPORT_START = "<!-- benchmark report: generated by python -m benchmarks suite -->"
REPORT_END = "<!-- end of benchmark report -->"


def update_docs(report_md: str) -> None:
    """Replace the docs' benchmark section (between the markers) with the new report. The
    plots stay in benchmarks/results/, outside the docs site: the page names them."""
    page = ROOT / "docs" / "benchmarks.md"
    text = page.read_text()
    if REPORT_START not in text or REPORT_END not in text:
        return
    body = report_md.split("\n", 1)[1]
    plots = re.findall(r"!\[[^\]]*\]\(([^)]+)\)\n?", body)
    body = re.sub(r"!\[[^\]]*\]\(([^)]+)\)\n?", "", body)
    if plots:
        body += "\n`make bench` draws " + ", ".join(f"`{p}`" for p in plots)
        body += " in `benchmarks/results/`.\n"
    body = body.replace("\n## ", "\n### ")  # the report's sections nest under Benchmarks
    head, rest = text.split(REPORT_START, 1)
    _, tail = rest.split(REPORT_END, 1)
    page.write_text(f"{head}{REPORT_START}\n{body.strip()}\n{REPORT_END}{tail}")


def machine() -> dict[str, Any]:
    """CPU count and Python, for the report header."""
    import platform

    return {"cpus": os.cpu_count(), "python": platform.python_version()}


def write_json(name: str, payload: dict[str, Any], mode: str) -> None:
    """results/NAME.json (NAME-quick.json for quick runs, so they never replace full ones)."""
    write_result(f"{name}-quick" if mode == "quick" else name, payload)


if __name__ == "__main__":
    main()
