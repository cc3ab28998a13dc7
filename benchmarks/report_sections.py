"""REPORT.md's sections beyond the suite: the figures the other benchmarks last wrote to
`benchmarks/results/`, rendered from their JSON files, and the command that makes each.

A file that is missing leaves its table out; nothing here is typed in by hand."""
# ruff: noqa: E501  (long Markdown template lines read best unbroken)

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

PY = ".venv/bin/python -m benchmarks "
MODES = (("hybrid", "hybrid (default)"), ("dense", "dense"), ("sparse", "BM25"))
_LABEL = dict(MODES)

OTHER_SCRIPTS = [  # area, cases (the first with its options), result files: Markdown cells
    ("parsers (DOCX, XLSX, HTML, Markdown, PDF)", "`parsers`", "`parsers.json`"),
    ("HTML main-content extraction", "`html_extract`", "`html_extract.json`"),
    (
        "the service under load",
        "`service_load`, `service_wrk`",
        "`service_load.json`, `service_wrk.json`",
    ),
    (
        "kill -9 during uploads",
        "`service_crash --trials 10 --files 100`",
        "`service_crash.json`",
    ),
    ("service security and fairness", "`service_security`", "`service_security*.json`"),
    (
        "several machines (pgvector, S3, workers)",
        "`several_machines`",
        "`several_machines.json`",
    ),
    ("scale to 1M chunks", "`scale`", "`scale*.json`"),
    ("memory of the write path", "`memory`", "printed; the suite's `rss.png`"),
    ("MCP search latency", "`mcp`", "`mcp.json`"),
    ("OCR of scans (Tesseract, RapidOCR)", "`ocr`", "`ocr.json`"),
    (
        "query embedding and CLI start",
        "`query_speed embed\\|rss\\|kb\\|plan`",
        "`query_speed-*.json`",
    ),
    (
        "Chinese retrieval, BM25 indexing cost",
        "`hybrid zh\\|ingest`",
        "`hybrid-zh.json`, `hybrid-ingest.json`",
    ),
    ("identifiers over real manuals", "`identifiers`", "`identifiers*.json`"),
    (
        "table chunks, chunker, write path, write lag",
        "`table_chunks`, `chunker`, `write_path`, `write_lag`",
        "their JSON files",
    ),
    (
        "stores, vector datatypes, open collections",
        "`store`, `vector_datatype`, `open_collections`",
        "their JSON files",
    ),
    (
        "observability overhead, GIL stalls, duplicates",
        "`observability`, `gil_stalls`, `duplicates`",
        "their JSON files",
    ),
]


def _load(results: Path, name: str) -> dict[str, Any] | None:
    path = results / name
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _numbers(data: dict[str, Any]) -> list[str]:
    labels = {
        "numbers": "notes that differ only by their numbers",
        "identifiers": "identifiers beside look-alikes",
        "zh_topics": "Chinese topics",
    }
    lines = [
        "**Numbers, identifiers, Chinese: the answering document first** —",
        f"`{PY}search_trust numbers` (`trust-numbers.json`).",
        "",
        "| corpus | questions | " + " | ".join(label for _, label in MODES) + " |",
        "|---|---:|" + "---:|" * len(MODES),
    ]
    for key, label in labels.items():
        row = data.get(key)
        if row:
            cells = " | ".join(str(row[mode]["first"]) for mode, _ in MODES)
            lines.append(f"| {label} | {row['questions']} | {cells} |")
    return [*lines, ""]


def _relevance(modes: dict[str, Any], calibration: dict[str, Any] | None) -> list[str]:
    stable = {
        (run["model"], run["dataset"]): run["stability"]
        for run in (calibration or {}).get("runs", [])
        if "stability" in run
    }
    by_set: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for run in modes["runs"]:
        by_set.setdefault((run["model"], run["dataset"]), {})[run["mode"]] = run
    lines = [
        f"**Relevance in every model, language and mode** — `{PY}relevance_modes`",
        f"(`archivist eval --calibration` on the queries kept aside) and `{PY}calibrate_relevance`",
        "(curves fitted on SciFact *train* and four fifths of CMRC 2018 trial; stability: the",
        "right passage's relevance in nested corpora of 5, 50, 500 documents). ECE: calibration",
        "error of the first ten hits; kept: right answers ranked first shown at 0.25 or more.",
        "",
        "| model | set | nDCG@10 hybrid / dense / BM25 | ECE hybrid / dense / BM25 | kept | stable within 0.1 (max spread) |",
        "|---|---|---|---|---:|---:|",
    ]
    for (model, dataset), runs in by_set.items():
        ndcg = " / ".join(f"{runs[m]['ndcg@10']:.3f}" for m in ("hybrid", "dense", "sparse"))
        ece = " / ".join(f"{runs[m]['ece']:.3f}" for m in ("hybrid", "dense", "sparse"))
        hybrid = runs["hybrid"]
        kept = f"{hybrid['right_first_at_threshold']}/{hybrid['right_first']}"
        st = stable.get((model, dataset))
        spread = f"{st['within_0.1']:.0%} ({st['max']:.2f})" if st else ""
        lines.append(f"| {model} | {dataset} | {ndcg} | {ece} | {kept} | {spread} |")
    lines += [
        "",
        "Reliability of hybrid hits, per bin of relevance shown: hits, share judged relevant.",
        "",
    ]
    for (model, dataset), runs in by_set.items():
        cells = ", ".join(
            f"{b['low']:.1f}+: {b['hits']} {b['relevant']:.2f}" for b in runs["hybrid"]["bins"]
        )
        lines.append(f"- {model}, {dataset}: {cells}")
    return [*lines, ""]


def _spread(data: dict[str, Any]) -> list[str]:
    variants = (
        ("default", "default (spread)"),
        ("none", "no spreading"),
        ("cap-1", "at most 1 per document"),
        ("cap-2", "at most 2"),
    )
    lines = [
        f"**The list a user sees** — `{PY}search_trust spread` (`trust-spread.json`):",
        "nDCG where a document gains only at its first hit (documents shown in brackets).",
        "",
        "| top_k | " + " | ".join(label for _, label in variants) + " |",
        "|---:|" + "---:|" * len(variants),
    ]
    for k in (5, 10):
        cells = []
        for key, _ in variants:
            row = data.get(f"top{k}-{key}")
            cells.append(
                "—"
                if row is None
                else f"{row[f'shown_ndcg@{k}']:.4f} ({row['distinct_documents']:.2f})"
            )
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _depth(data: dict[str, Any]) -> list[str]:
    lines = [
        f"**Candidates per side** — `{PY}search_trust depth` (`trust-depth.json`),",
        f"{data['queries']} queries, {data['chunks']:,} chunks; the default is 50.",
        "",
        "| candidates a side | shown nDCG@5 | nDCG@10, one per document | seconds for all queries |",
        "|---:|---:|---:|---:|",
    ]
    for key, row in data.items():
        if key.startswith("depth-"):
            lines.append(
                f"| {key.removeprefix('depth-')} | {row['shown_ndcg@5']:.4f} | "
                f"{row['shown_ndcg@10_one_per_document']:.4f} | {row['seconds']} |"
            )
    return [*lines, ""]


def _parity(data: dict[str, Any]) -> list[str]:
    names = {"pgvector": "PostgreSQL + pgvector", "client-local": "qdrant-client local"}
    lines = [
        f"**Every store alike** — `{PY}search_trust parity --pgvector --local-queries 50`",
        "(`trust-parity.json`): each store against Qdrant Edge's top 10 for the same query.",
        "",
        "| store | queries | mode | nDCG@10 | Recall@100 | top-10 overlap mean / min | relevance gap |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for key, label in names.items():
        store = data["stores"].get(key)
        if not store:
            continue
        for mode, mode_label in MODES:
            r = store[mode]
            lines.append(
                f"| {label} | {store['queries']} | {mode_label} | {r['nDCG@10']:.4f} | {r['Recall@100']:.4f} | "
                f"{r['top10_overlap_with_edge_mean']:.3f} / {r['top10_overlap_with_edge_min']:.1f} | {r['relevance_gap_max']:.4f} |"
            )
    return [*lines, ""]


def _latency(runs: list[dict[str, Any]]) -> list[str]:
    depths = sorted({k.split("@")[1] for run in runs for k in run["p50_ms"] if "@" in k}, key=int)
    lines = [
        f"**Hybrid latency** — `{PY}hybrid latency --points N --queries 200 --depths "
        + " ".join(depths)
        + "` (`hybrid-latency-*.json`): tenant-filtered top 5, random vectors, 120-word texts, modes interleaved.",
        "",
        "| chunks | dense p50 / p95 ms | BM25 p50 / p95 ms | "
        + " | ".join(f"hybrid, {d} a side, p50 / p95 ms" for d in depths)
        + " | hybrid p50 ÷ dense p50 |",
        "|---:|" + "---:|" * (3 + len(depths)),
    ]
    for run in sorted(runs, key=lambda r: int(r["points"])):
        p50, p95 = run["p50_ms"], run["p95_ms"]
        cells = [
            f"{p50[m]:.2f} / {p95[m]:.2f}"
            for m in ("dense", "sparse", *(f"hybrid@{d}" for d in depths))
        ]
        ratio = p50[f"hybrid@{depths[0]}"] / p50["dense"]
        lines.append(f"| {int(run['points']):,} | " + " | ".join(cells) + f" | {ratio:.1f}× |")
    return [*lines, ""]


def render_search_trust(results: Path) -> list[str]:
    """The section on ranking and relevance, from the trust, calibration and latency files."""
    parts: list[str] = []
    if (numbers := _load(results, "trust-numbers.json")) is not None:
        parts += _numbers(numbers)
    if (modes := _load(results, "relevance-modes.json")) is not None:
        parts += _relevance(modes, _load(results, "relevance-calibration.json"))
    if (spread := _load(results, "trust-spread.json")) is not None:
        parts += _spread(spread)
    if (depth := _load(results, "trust-depth.json")) is not None:
        parts += _depth(depth)
    if (parity := _load(results, "trust-parity.json")) is not None:
        parts += _parity(parity)
    runs = [
        run
        for path in sorted(results.glob("hybrid-latency-*.json"))
        if (run := _load(results, path.name))
    ]
    if runs:
        parts += _latency(runs)
    if (kb := _load(results, "query_speed-kb.json")) is not None:
        parts += [
            f"End to end, `{PY}query_speed kb --rounds {kb['rounds']}` (`query_speed-kb.json`):",
            f"`KnowledgeBase.search` on {kb['points']:,} chunks takes {kb['search_over_embed']:.1f}× the query",
            f"embedding alone (embedding p50 {kb['embed_p50_ms']:.1f} ms, search p50 {kb['search_p50_ms']:.1f} ms).",
            "",
        ]
    if not parts:
        return []
    return ["## Search you can trust", "", *parts]


def render_hostile_uploads(results: Path) -> list[str]:
    """The section on hostile uploads, from `service_security --parts hostile`."""
    runs = [
        (name, options, data)
        for name, options in (
            ("service_security-hostile.json", "--parts hostile"),
            ("service_security-quick-hostile.json", "--quick --parts hostile"),
        )
        if (data := _load(results, name)) is not None
    ]
    if not runs:
        return []
    name, options, data = runs[0]
    run = data["hostile"]
    lines = [
        "## Hostile uploads",
        "",
        f"`{PY}service_security {options}` (`{name}`): one `archivist serve` with its defaults;",
        "tenant A uploads eleven hostile files at once while tenant B searches. RSS counts the",
        "server and every child process it started (parsing sandboxes included).",
        "",
        "| server + children RSS idle / peak / after, MiB | B's search p50 / p99 idle, ms "
        "| B's search p50 / p99 while A's files index, ms |",
        "|---:|---:|---:|",
        f"| {run['idle_tree_rss_mb']} / {run['peak_tree_rss_mb']} / {run['after_tree_rss_mb']} "
        f"| {run['idle']['search_p50_ms']} / {run['idle']['search_p99_ms']} "
        f"| {run['while_indexing']['search_p50_ms']} / {run['while_indexing']['search_p99_ms']} |",
        "",
        "| file | status | error |",
        "|---|---|---|",
    ]
    for filename, (status, error) in sorted(run["outcomes"].items()):
        if status not in ("ready", "failed"):  # the run stopped waiting 720 s after the upload
            error = "still going when the run stopped waiting (bounded by the parse wall limit)"
        lines.append(f"| {filename} | {status} | {error or ''} |")
    return [*lines, ""]


def render_store_pauses(results: Path) -> list[str]:
    """The section on requests waiting behind the store, from `store_pauses`."""
    data = _load(results, "store_pauses.json")
    if data is None:
        return []
    lines = [
        "## Requests while a single machine ingests",
        "",
        f"`{PY}store_pauses --chunks {data['chunks_asked']}` (`store_pauses.json`): one service",
        "(SQLite, Qdrant Edge on disk, a numpy bag-of-words embedding so the store sets the pace);",
        "tenant A uploads documents into one knowledge base while `/healthz` is asked every",
        "10 ms and tenants A and B each search every 0.1 s. `process` is the service as shipped",
        "(the store in a child process), `inline` the store in the service's own process, run",
        "one after the other on the same machine. Latency in ms, p50 / p99 / max, idle and",
        "during the ingest; `>250` counts requests that took longer than 250 ms. The hop to",
        "the store process costs a search of one store (tenant-filtered hybrid, 2,000 chunks)",
        f"{data['search_p50_ms']['inline']} ms → {data['search_p50_ms']['process']} ms at the median.",
        "",
        "| store | chunks, chunks/s | request | idle | during ingest | >250 |",
        "|---|---:|---|---:|---:|---:|",
    ]
    names = {"healthz": "`/healthz`", "b": "B's search (other KB)", "a": "A's search (same KB)"}
    for arrangement, run in data["runs"].items():
        for key, label in names.items():
            idle, busy = run[f"{key}_idle"], run[f"{key}_ingest"]
            lines.append(
                f"| {arrangement} | {run['chunks']:,}, {run['chunks_per_second']} | {label} "
                f"| {idle['p50_ms']} / {idle['p99_ms']} / {idle['max_ms']} "
                f"| {busy['p50_ms']} / {busy['p99_ms']} / {busy['max_ms']} | {busy['over_250ms']} |"
            )
    return [*lines, ""]


def render_ocr(results: Path) -> list[str]:
    """The section on OCR of scanned pages, from `ocr`."""
    data = _load(results, "ocr.json")
    if data is None:
        return []
    groups = ("en clean", "en noisy", "zh clean", "zh noisy", "tables")
    names = {"tesseract": "Tesseract", "rapidocr": "RapidOCR"}
    command = PY + data["command"].removeprefix("python -m benchmarks ")
    lines = [
        "## OCR — generated scans",
        "",
        f"`{command}` (`ocr.json`): {data['pages']} A4 pages drawn at 200 dpi, English and",
        "Simplified Chinese, clean and noisy (rotated 1.5°, blurred), and ruled tables. *Ours*:",
        "one image-only PDF through `PDFParser(ocr=Ocr(ENGINE))`, uncached; *CLI*: the same pages",
        "as PNG files through the engine's own command, one call per page. Accuracy: 1 − edit",
        "distance ÷ characters, whitespace ignored. Speed: best of 2, alternating, on",
        f"{data['cores']} cores. Peak RSS: the parsing process (the `tesseract` processes it ran).",
        "",
        "| engine | path | all | " + " | ".join(groups) + " | pages/s | peak RSS MiB |",
        "|---|---|" + "---:|" * (len(groups) + 3),
    ]
    ratios = []
    for engine, run in data["engines"].items():
        name = names.get(engine, engine)
        for path in ("ours", "cli"):
            a = run["accuracy"][path]
            cells = " | ".join(f"{a[g]:.3f}" if g in a else "—" for g in groups)
            rss = "—"
            if path == "ours":
                rss = f"{run['peak_rss_mib']:.0f}"
                if run["engine_peak_rss_mib"]:
                    rss += f" ({run['engine_peak_rss_mib']:.0f})"
            label = "ours" if path == "ours" else f"CLI: `{run['cli']}`"
            lines.append(
                f"| {name} | {label} | {a['overall']:.3f} | {cells} "
                f"| {run[f'{path}_pages_per_s']:.2f} | {rss} |"
            )
        ratios.append(f"{name} {run['ratio']:.2f}×")
        if "api_pages_per_s" in run:
            lines.append(
                f"| {name} | its Python API, models loaded once | — |"
                + " — |" * len(groups)
                + f" {run['api_pages_per_s']:.2f} | — |"
            )
    met = all(run["ratio"] >= 0.8 for run in data["engines"].values())
    lines += [
        "",
        f"Target: ours at least 0.8× the CLI's pages/s — {'met' if met else 'NOT met'} "
        f"({', '.join(ratios)}).",
    ]
    return [*lines, ""]


STORE_SYSTEMS = {
    "archivist-edge": "Archivist `QdrantStore(path=)`",
    "engine-raw": "Qdrant Edge alone (`qdrant_edge`)",
    "archivist-pgvector": "Archivist `PgVectorStore`",
    "archivist-pgvector-bulk": "Archivist `PgVectorStore`, bulk loads",
    "pgvector-raw": "pgvector alone (binary COPY, same indexes)",
    "chroma": "Chroma `PersistentClient`",
    "lancedb": "LanceDB, IVF_PQ",
    "agentscope": "AgentScope `QdrantStore(path=)`",
}


def _p50_p99(row: dict[str, Any], mode: str) -> str:
    found = row["search"].get(mode)
    if found is None:
        return "—"
    first = f"{found['p50_ms']:.2f} / {found['p99_ms']:.2f}"
    if "warm_p50_ms" not in found:
        return first
    return f"{first} (warm {found['warm_p50_ms']:.2f} / {found['warm_p99_ms']:.2f})"


def _stores_rss(row: dict[str, Any]) -> str:
    if "server_peak_rss_mb" not in row:
        return f"{row['peak_rss_mb']:.0f}"
    client, server = row["peak_rss_mb"], row["server_peak_rss_mb"]
    return f"{client + server:.0f} ({client:.0f} + server {server:.0f}; server PSS {row['server_pss_mb']:.0f})"


def _recall_cell(found: float | None, by_size: dict[str, float | None] | None) -> str:
    if found is None:
        return "—"
    if not by_size:
        return f"{found:.3f}"
    classes = " / ".join("—" if value is None else f"{value:.3f}" for value in by_size.values())
    return f"{found:.3f} ({classes})"


def under_load_cell(window: dict[str, Any] | None) -> str:
    """A system's window under concurrent load: each mode's p50 / p99 ms, the chunks written
    meanwhile and their rate, and whether its clients ran as asyncio tasks or threads."""
    if window is None:
        return "—"
    if "skipped" in window:
        return f"skipped ({window['skipped']})"
    search = ", ".join(
        f"{mode} {found['p50_ms']:.2f} / {found['p99_ms']:.2f}"
        for mode, found in window["search"].items()
    )
    error = f"; {window['error']}" if "error" in window else ""
    return (
        f"{search}; {window['written']:,} chunks written at {window['chunks_per_s']:,}/s "
        f"({window['concurrency']}, {window['searches']:,} searches){error}"
    )


def stores_table(data: dict[str, Any]) -> list[str]:
    """The `stores` benchmark's table (one row per system and checkpoint) and how each run
    ended; `bench_stores` prints it too. A run with windows under concurrent load has one
    more column, filled on each system's last row."""
    windows = {name: run.get("concurrent") for name, run in data["systems"].items()}
    loaded = any(windows.values())
    load_header = (
        f" under load {data.get('concurrent_seconds', 0):g} s: 8 searching + 1 writing, "
        "p50 / p99 ms; chunks/s |"
        if loaded
        else ""
    )
    lines = [
        "| system | chunks | insert chunks/s | peak RSS MiB | disk MiB | dense p50 / p99 ms "
        f"| hybrid p50 / p99 ms | recall@5 (small / medium / large tenants) |{load_header}",
        "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---|" if loaded else ""),
    ]
    ended = []
    for system, run in data["systems"].items():
        label = STORE_SYSTEMS.get(system, system)
        for number, row in enumerate(run["rows"], 1):
            found = row.get("recall@5")
            partial = " (stopped in its searches)" if "incomplete" in row else ""
            load = ""
            if loaded:
                last = number == len(run["rows"])
                load = f" {under_load_cell(windows[system]) if last else ''} |"
            lines.append(
                f"| {label} | {row['chunks']:,}{partial} | {row['insert_per_s']:,} | {_stores_rss(row)} "
                f"| {row['disk_mb']:,.0f} | {_p50_p99(row, 'dense')} | {_p50_p99(row, 'hybrid')} "
                f"| {_recall_cell(found, row.get('recall@5_by_size'))} |{load}"
            )
        status = run["status"]
        load = f", load average {run['load_after'][1]}" if "load_after" in run else ""
        if status == "done":
            ended.append(f"{label}: every checkpoint in {run['seconds']:,.0f} s{load}")
        elif status == "skipped":
            ended.append(f"{label}: skipped ({run['reason']})")
        else:
            ended.append(
                f"{label}: {status} after {run.get('seconds', 0):,.0f} s{load}, "
                f"{run.get('written', 0):,} chunks written, last checkpoint "
                f"{run.get('last_checkpoint', 0):,} ({run.get('reason', '')})"
            )
        if run.get("data_mismatch"):
            ended.append(f"{label}: DIFFERENT DATA ({run['data_mismatch']})")
    return [*lines, "", "Ended: " + "; ".join(ended) + "."]


def render_stores(results: Path) -> list[str]:
    """The section comparing stores on the same data: every full `stores` run's file
    (`stores.json`, and `stores-NAME.json` for runs of some systems under `--name`), or
    `stores-quick.json` when there is none."""
    names = [
        path.name
        for path in sorted(results.glob("stores*.json"))
        if not path.stem.endswith(("-quick", "-smoke"))
    ] or ["stores-quick.json"]
    runs = [(name, data) for name in names if (data := _load(results, name)) is not None]
    if not runs:
        return []
    data = runs[0][1]
    d, host = data["data"], data["host"]
    lines = [
        "## Stores at scale, same data",
        "",
        *textwrap.wrap(
            f"{d['passages']:,} SciFact passages (`{d['model']}`) and noisy copies (sigma "
            f"{d['sigma']}), {d['tenants']:,} Zipf tenants, {d['chunks_per_document']} chunks a "
            f"document, batches of {d['batch']} through each system's API in its own process on "
            f"{host['cpus']} cores; inserts/s count each step's optimize. Tenant-filtered top 5 "
            f"over {d['queries']} claims, first pass (warm); recall@5 against exact search by "
            "tenant size (< 1,000, < 10,000, more).",
            width=100,
        ),
        "",
    ]
    for name, run in runs:
        # Where the stores were made does not change what they measure.
        command = re.sub(r" --workdir \S+", "", run["command"])
        command = PY + command.removeprefix("python -m benchmarks ")
        bound = f"each system at most {run['seconds_per_system']:,.0f} s"
        *table, _, ended = stores_table(run)
        lines += [f"`{command}` (`{name}`, {bound}). {ended}", "", *table, ""]
    return lines + stores_targets(runs)


def _largest(runs: list[tuple[str, dict[str, Any]]], system: str) -> tuple[str, list[Any]]:
    """The run file holding `system`'s checkpoints that reached furthest, and those rows."""
    found = [
        (name, run["systems"][system]["rows"])
        for name, run in runs
        if run["systems"].get(system, {}).get("rows")
    ]
    if not found:
        return "", []
    return max(found, key=lambda item: item[1][-1]["chunks"])


def _ms(row: dict[str, Any], mode: str, field: str) -> float | None:
    """A latency figure of `mode`: the worse of the first pass and the warm one."""
    found = row["search"].get(mode)
    if found is None:
        return None
    return max(float(found[key]) for key in (field, f"warm_{field}") if key in found)


def stores_targets(runs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Each scale target at the furthest checkpoint measured: its figure, and met or not.
    A ratio is taken only between systems of one run (the machine's noise is shared)."""
    rows: list[tuple[str, str, bool | None]] = []

    def check(target: str, figure: str, met: bool | None) -> None:
        rows.append((target, figure, met))

    pg_file, pg = _largest(runs, "archivist-pgvector")
    if pg:
        last = pg[-1]
        at = f"{last['chunks']:,}"
        worst = min(
            value
            for row in pg
            for value in [row.get("recall@5"), *row.get("recall@5_by_size", {}).values()]
            if value is not None
        )
        check(
            "PgVectorStore recall@5 ≥ 0.98, every checkpoint and size class",
            f"{worst:.3f}",
            worst >= 0.98,
        )
        dense99 = _ms(last, "dense", "p99_ms")
        check(
            f"PgVectorStore dense p99 ≤ 50 ms at {at}",
            f"{dense99:.1f} ms",
            dense99 is not None and dense99 <= 50,
        )
        hybrid50, hybrid99 = _ms(last, "hybrid", "p50_ms"), _ms(last, "hybrid", "p99_ms")
        if hybrid50 is not None and hybrid99 is not None:
            check(
                f"PgVectorStore hybrid p50 ≤ 60 / p99 ≤ 200 ms at {at}",
                f"{hybrid50:.1f} / {hybrid99:.1f} ms",
                hybrid50 <= 60 and hybrid99 <= 200,
            )
        raw = dict(runs)[pg_file]["systems"].get("pgvector-raw", {}).get("rows", [])
        # At the furthest checkpoint both reached in the run.
        ours = {row["chunks"]: row for row in pg}
        same = [(ours[r["chunks"]], r) for r in raw if r["chunks"] in ours]
        if same:
            mine, theirs = same[-1]
            ratio = mine["insert_per_s"] / max(theirs["insert_per_s"], 1)
            check(
                f"PgVectorStore inserts ≥ 0.8× pgvector's own at {mine['chunks']:,}",
                f"{ratio:.2f}×",
                ratio >= 0.8,
            )
        else:
            check("PgVectorStore inserts ≥ 0.8× pgvector's own", "not measured in one run", None)
        _, bulk = _largest(runs, "archivist-pgvector-bulk")
        if bulk:
            rate = min(row["insert_per_s"] for row in bulk)
            check(
                f"PgVectorStore bulk load ≥ 2,000 chunks/s, index builds included, to "
                f"{bulk[-1]['chunks']:,}",
                f"{rate:,.0f}/s",
                rate >= 2000,
            )
        _, edge = _largest(runs, "archivist-edge")
        edge_same = [r for r in edge if r["chunks"] == last["chunks"]]
        if edge_same:
            ratio = last["disk_mb"] / max(edge_same[0]["disk_mb"], 1)
            check(f"PgVectorStore disk ≤ 1.5× Edge's at {at}", f"{ratio:.2f}×", ratio <= 1.5)
    edge_file, edge_rows = _largest(runs, "archivist-edge")
    raw_rows = (
        dict(runs)[edge_file]["systems"].get("engine-raw", {}).get("rows", []) if edge_file else []
    )
    if edge_rows and raw_rows:
        last = edge_rows[-1]
        twin = next((r for r in raw_rows if r["chunks"] == last["chunks"]), None)
        at = f"{last['chunks']:,}"
        if twin is not None:
            for mode, fields, bound in (
                ("hybrid", ("p50_ms", "p99_ms"), 3.0),
                ("dense", ("p99_ms",), 2.0),
            ):
                ratios = []
                for field in fields:
                    ours, theirs = _ms(last, mode, field), _ms(twin, mode, field)
                    if ours is not None and theirs:
                        ratios.append(ours / theirs)
                if len(ratios) == len(fields):
                    names = " / ".join(field.removesuffix("_ms") for field in fields)
                    check(
                        f"Edge {mode} {names} ≤ {bound:g}× the engine's at {at}",
                        " / ".join(f"{ratio:.1f}×" for ratio in ratios),
                        max(ratios) <= bound,
                    )
            memory = last["peak_rss_mb"] / max(twin["peak_rss_mb"], 1)
            check(
                f"Edge peak RSS ≤ 1.2× the engine's at {at} (file pages counted in)",
                f"{memory:.2f}×",
                memory <= 1.2,
            )
        recall = last.get("recall@5")
        if recall is not None:
            check(f"Edge recall@5 ≥ 0.99 at {at}", f"{recall:.3f}", recall >= 0.99)
    if not rows:
        return []
    mark = {True: "met", False: "**not met**", None: "—"}
    return [
        "Scale targets at each system's furthest checkpoint above (latency: the worse pass):",
        "",
        "| target | figure | |",
        "|---|---:|---|",
        *(f"| {target} | {figure} | {mark[met]} |" for target, figure, met in rows),
        "",
    ]


def render_other_scripts() -> list[str]:
    """Where each other benchmark writes its results, with its command."""
    lines = [
        "## Other benchmarks",
        "",
        f"Each runs as `{PY}NAME` and writes its figures to `benchmarks/results/`;",
        "`.venv/bin/python -m benchmarks` lists them all.",
        "",
        "| area | case and options | results |",
        "|---|---|---|",
    ]
    for area, command, results in OTHER_SCRIPTS:
        lines.append(f"| {area} | {command} | {results} |")
    return [*lines, ""]
