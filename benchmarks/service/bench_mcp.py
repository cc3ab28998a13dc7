"""What searching through MCP costs, measured side by side in one run (loopback only).

Service: one real `archivist serve`, one knowledge base of generated documents; the same
queries, interleaved round by round, through `POST .../search`, through `/mcp` with one MCP
session kept open, and through `/mcp` with a session per call (a stateless `MCPClient`).
CLI: the same documents indexed by `archivist index`; the same queries through
`RAGMiddleware.retrieve` in this process (store kept open), then through `archivist mcp` over
stdio (which opens the store for each search, so `archivist index` is never locked out).

    .venv/bin/python -m benchmarks mcp            # 60 documents, 60 queries
    .venv/bin/python -m benchmarks mcp --quick    # 15 documents, 15 queries
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from _common import write_result
from bench_service_load import TOPICS, VOCABULARY, document
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from service_helpers import ServeProcess, free_port

from archivist.cli.home import load_kbs
from archivist.cli.main import main as cli
from archivist.cli.session import embedding_model
from archivist.mcp import HttpMCPConfig, MCPClient
from archivist.middleware import RAGMiddleware
from archivist.rag import KnowledgeBase, QdrantStore
from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key

KB = "bench"


def summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 2),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
    }


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def service_side(home: Path, docs: list[bytes], queries: list[str]) -> dict[str, Any]:
    settings = ServiceSettings(home=home)
    engine = make_engine(settings.resolved_database_url)
    key = create_key(engine, "bench").key
    engine.dispose()
    process = ServeProcess(home, free_port())
    process.start()
    headers = {"Authorization": f"Bearer {key}"}
    try:
        async with httpx.AsyncClient(base_url=process.url, headers=headers, timeout=120) as http:
            await http.post("/v1/knowledge-bases", json={"name": KB})
            files = [("files", (f"doc{n}.txt", body, "text/plain")) for n, body in enumerate(docs)]
            (await http.post(f"/v1/knowledge-bases/{KB}/documents", files=files)).raise_for_status()
            while True:
                items = (await http.get(f"/v1/knowledge-bases/{KB}/documents")).json()["items"]
                if all(d["status"] in ("ready", "failed") for d in items):
                    break
                await asyncio.sleep(0.5)
            chunks = sum(d["chunk_count"] for d in items)
            stateless = MCPClient(
                name="bench",
                is_stateful=False,
                mcp_config=HttpMCPConfig(url=f"{process.url}/mcp", headers=headers),
            )
            [stateless_tool] = [
                t for t in await stateless.list_tools() if t.name.endswith("search_knowledge")
            ]
            mcp_http = create_mcp_http_client(headers=headers)
            transport = streamable_http_client(f"{process.url}/mcp", http_client=mcp_http)
            times: dict[str, list[float]] = {"rest": [], "mcp_session": [], "mcp_per_call": []}
            async with mcp_http, Client(transport) as session:
                for query in queries:  # interleaved, so noise hits all three alike
                    times["rest"].append(
                        await timed(
                            lambda q=query: http.post(
                                f"/v1/knowledge-bases/{KB}/search", json={"query": q, "top_k": 5}
                            )
                        )
                    )
                    times["mcp_session"].append(
                        await timed(
                            lambda q=query: session.call_tool(
                                "search_knowledge", {"query": q, "top_k": 5}
                            )
                        )
                    )
                    times["mcp_per_call"].append(
                        await timed(lambda q=query: stateless_tool(query=q, top_k=5))
                    )
    finally:
        process.stop()
    result: dict[str, Any] = {"chunks": chunks, **{k: summary(v) for k, v in times.items()}}
    result["mcp_session_vs_rest_p50"] = round(
        result["mcp_session"]["p50_ms"] / result["rest"]["p50_ms"], 2
    )
    result["mcp_per_call_vs_rest_p50"] = round(
        result["mcp_per_call"]["p50_ms"] / result["rest"]["p50_ms"], 2
    )
    return result


async def cli_side(home: Path, queries: list[str]) -> dict[str, Any]:
    store_dir = home / "store"
    model = embedding_model(load_kbs(store_dir)[KB].embedding_model)
    in_process: list[float] = []
    try:
        async with QdrantStore(path=store_dir / "kbs" / KB) as store:
            kb = KnowledgeBase(KB, "", model, store, KB)
            middleware = RAGMiddleware([kb], RAGMiddleware.Parameters(top_k=5))
            for query in queries:
                in_process.append(await timed(lambda q=query: middleware.retrieve([q])))
    finally:
        await model.aclose()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "archivist", "mcp", "--kb", KB],
        env=dict(os.environ, ARCHIVIST_HOME=str(home)),
    )
    over_stdio: list[float] = []
    async with Client(params) as session:
        await session.call_tool("search_knowledge", {"query": "warm up"})
        for query in queries:
            over_stdio.append(
                await timed(
                    lambda q=query: session.call_tool("search_knowledge", {"query": q, "top_k": 5})
                )
            )
    result: dict[str, Any] = {"in_process": summary(in_process), "mcp_stdio": summary(over_stdio)}
    result["mcp_stdio_vs_in_process_p50"] = round(
        result["mcp_stdio"]["p50_ms"] / result["in_process"]["p50_ms"], 2
    )
    return result


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(21)
    docs = [document(rng, n, 5) for n in range(args.documents)]
    queries = [
        f"{rng.choice(TOPICS)} {rng.choice(VOCABULARY)} {rng.choice(VOCABULARY)}"
        for _ in range(args.queries)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        service = await service_side(root / "service", docs, queries)
        folder = root / "docs"
        folder.mkdir()
        for n, body in enumerate(docs):
            (folder / f"doc{n}.txt").write_bytes(body)
        os.environ["ARCHIVIST_HOME"] = str(root / "cli")
        code = await asyncio.to_thread(cli, ["index", str(folder), "--kb", KB, "--json"])
        assert code == 0, code
        local = await cli_side(root / "cli", queries)
    return {"documents": args.documents, "queries": args.queries, "service": service, "cli": local}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    args.documents, args.queries = (15, 15) if args.quick else (60, 60)
    result = asyncio.run(main_async(args))
    path = write_result("mcp-quick" if args.quick else "mcp", result)
    print(result)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
