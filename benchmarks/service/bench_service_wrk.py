"""`archivist serve` under Debian's `wrk`, against the same model's in-process capacity.

Starts a real `archivist serve` on 127.0.0.1 over a fresh home, uploads SciFact documents,
then drives `/search` with `wrk` and a Lua script posting SciFact queries: 50 connections,
then one. In the same run, before and after the load, a separate process measures what the
service's query model does alone: queries/s in batches of 64 and one query's p50. Loopback
only, bounded in time.

    .venv/bin/python -m benchmarks service_wrk                    # 400 docs, 20 s
    .venv/bin/python -m benchmarks service_wrk --docs 100 --seconds 5   # quick

Needs `wrk` (Debian package) and SciFact (`../shared/datasets/scifact` or `$SCIFACT_DIR`);
skips cleanly without them. Writes benchmarks/results/service_wrk.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _common import SCIFACT, write_result
from service_helpers import ServeProcess, free_port

KB = "scifact"

# Runs in its own process: the service's query model alone, batched and one by one.
CAPACITY = """
import asyncio, json, statistics, sys, time
from archivist.embedding import LocalEmbeddingModel
texts = json.loads(sys.stdin.read())
async def main():
    model = LocalEmbeddingModel()
    await model(texts[:64], input_type="query")
    start, cpu, done = time.perf_counter(), time.process_time(), 0
    while time.perf_counter() - start < float(sys.argv[1]):
        batch = [texts[(done + j) % len(texts)] for j in range(64)]
        await model(batch, input_type="query")
        done += 64
    rate = done / (time.perf_counter() - start)
    cpu_ms = 1000 * (time.process_time() - cpu) / done
    single = []
    for i in range(int(sys.argv[2])):
        tick = time.perf_counter()
        await model([texts[i % len(texts)]], input_type="query")
        single.append(1000 * (time.perf_counter() - tick))
    print(json.dumps({"batched_qps": rate, "batched_cpu_ms_per_query": cpu_ms,
                      "single_p50_ms": statistics.median(single)}))
asyncio.run(main())
"""

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %(key)s"
local bodies = {
%(bodies)s
}
local n = 0
request = function()
  n = n %% #bodies + 1
  return wrk.format(nil, nil, nil, bodies[n])
end
"""


def load_scifact(docs: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(id, text) of the first `docs` corpus documents, and every query text."""
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt") as handle:
        corpus = []
        for line in handle:
            row = json.loads(line)
            corpus.append((row["_id"], f"{row['title']}\n\n{row['text']}"))
            if len(corpus) >= docs:
                break
    with (SCIFACT / "queries.jsonl").open() as handle:
        queries = [json.loads(line)["text"] for line in handle]
    return corpus, queries


def capacity(queries: list[str], seconds: float, singles: int) -> dict[str, float]:
    """The query model's in-process rate, measured in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", CAPACITY, str(seconds), str(singles)],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_wrk(url: str, script: Path, connections: int, seconds: float, pid: int) -> dict[str, Any]:
    """Requests/s, latency percentiles (ms) and errors of one `wrk` run, and the CPU time the
    server (`pid`) and `wrk` spent per request."""
    threads = min(2, connections)
    serve_cpu, wrk_cpu = cpu_seconds(pid), children_cpu_seconds()
    done = subprocess.run(
        [
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",  # wrk takes whole seconds
            "--latency",
            "--timeout",
            "10s",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    serve_cpu, wrk_cpu = cpu_seconds(pid) - serve_cpu, children_cpu_seconds() - wrk_cpu
    out = done.stdout
    percentiles = {
        p: _millis(value)
        for p, value in re.findall(r"^\s*(50|75|90|99)(?:\.0+)?%\s+([\d.]+\w+)", out, re.MULTILINE)
    }
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)$", out, re.MULTILINE)
    return {
        "connections": connections,
        "seconds": seconds,
        "requests": requests,
        "requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50_ms": percentiles.get("50"),
        "p90_ms": percentiles.get("90"),
        "p99_ms": percentiles.get("99"),
        "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socket_errors": errors.group(1) if errors else None,
        "serve_cpu_ms_per_request": round(1000 * serve_cpu / max(1, requests), 2),
        "wrk_cpu_ms_per_request": round(1000 * wrk_cpu / max(1, requests), 2),
        "wrk_output": out,
    }


def serve_pid(serve: ServeProcess) -> int:
    assert serve.process is not None
    return serve.process.pid


def _millis(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()  # type: ignore[union-attr]
    return round(float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit], 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--capacity-seconds", type=float, default=10.0)
    parser.add_argument("--serve-args", default="", help="extra `archivist serve` arguments")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None or not (SCIFACT / "queries.jsonl").is_file():
        print("skipped: needs wrk and SciFact", file=sys.stderr)
        return
    corpus, queries = load_scifact(args.docs)
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory)
        # Throughput, not the per-key rate limit, is measured: one key sends every request.
        serve = ServeProcess(home, free_port(), "--rate", "1000000", *args.serve_args.split())
        serve.start()
        try:
            env = {**os.environ, "ARCHIVIST_HOME": str(home)}
            key = subprocess.run(
                [sys.executable, "-m", "archivist", "keys", "create", "--tenant", "bench"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=serve.url, headers=headers, timeout=120) as http:
                http.post("/v1/knowledge-bases", json={"name": KB}).raise_for_status()
                started = time.perf_counter()
                for start in range(0, len(corpus), 50):
                    files = [
                        ("files", (f"{doc_id}.txt", text.encode(), "text/plain"))
                        for doc_id, text in corpus[start : start + 50]
                    ]
                    answer = http.post(f"/v1/knowledge-bases/{KB}/documents", files=files)
                    if answer.is_error:
                        raise SystemExit(f"upload failed: {answer.status_code} {answer.text}")
                while True:
                    items = http.get(f"/v1/knowledge-bases/{KB}/documents").json()["items"]
                    if all(d["status"] in ("ready", "failed") for d in items):
                        break
                    time.sleep(1)
                chunks = sum(d["chunk_count"] for d in items)
                print(f"indexed {len(items)} documents, {chunks} chunks", file=sys.stderr)
                index_seconds = time.perf_counter() - started
                probe = http.post(f"/v1/knowledge-bases/{KB}/search", json={"query": queries[0]})
                probe.raise_for_status()
            script = home / "search.lua"
            bodies = ",\n".join(
                "[==[" + json.dumps({"query": q}) + "]==]" for q in queries if "]==]" not in q
            )
            script.write_text(LUA % {"key": key, "bodies": bodies})
            url = f"{serve.url}/v1/knowledge-bases/{KB}/search"
            before = capacity(queries, args.capacity_seconds, 100)
            print(f"in-process before: {before}", file=sys.stderr)
            loaded = run_wrk(url, script, args.connections, args.seconds, serve_pid(serve))
            print(f"wrk {args.connections}: {loaded}", file=sys.stderr)
            # wrk stops with up to one request per connection still queued in the server:
            # let those finish, or the first one-client requests wait behind them.
            time.sleep(3)
            one = run_wrk(url, script, 1, args.seconds / 2, serve_pid(serve))
            print(f"wrk 1: {one}", file=sys.stderr)
            after = capacity(queries, args.capacity_seconds, 100)
            print(f"in-process after: {after}", file=sys.stderr)
        finally:
            serve.stop()
    for name, run in (("50 connections", loaded), ("one connection", one)):
        if run["non_2xx"]:
            print(
                f"{name}: {run['non_2xx']} answers were not 2xx; not a valid run", file=sys.stderr
            )
            raise SystemExit(1)
    batched = (before["batched_qps"] + after["batched_qps"]) / 2
    single = (before["single_p50_ms"] + after["single_p50_ms"]) / 2
    # The rate two cores allow if every request costs what it cost the server and wrk here.
    cores = len(os.sched_getaffinity(0))
    per_request = loaded["serve_cpu_ms_per_request"] + loaded["wrk_cpu_ms_per_request"]
    cpu_bound_rps = 1000 * cores / per_request
    result = {
        "documents": len(corpus),
        "chunks": chunks,
        "index_seconds": round(index_seconds, 1),
        "serve_args": args.serve_args,
        "in_process": {"before": before, "after": after},
        "loaded": loaded,
        "one_client": one,
        "ratios": {
            "loaded_rps_over_batched_qps": round(loaded["requests_per_s"] / batched, 2),
            "loaded_p99_over_p50": round(loaded["p99_ms"] / loaded["p50_ms"], 2),
            "one_client_p50_over_single_p50": round(one["p50_ms"] / single, 2),
            "cpu_bound_rps_over_batched_qps": round(cpu_bound_rps / batched, 2),
        },
        "cores": cores,
        "cpu_bound_rps": round(cpu_bound_rps, 1),
        "load_avg": os.getloadavg(),
    }
    path = write_result("service_wrk", result)
    print(json.dumps(result, indent=2))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
