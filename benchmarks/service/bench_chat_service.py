"""Time to first answer token and tokens/s through the service vs straight to the chat server.

One real local chat server (llama.cpp + Gemma 3 270M, tests/cli/llama_server.py) and one
service in this process. Each round asks the service (`POST /v1/sessions/{id}/messages`,
static mode, top_k 1) and then replays to the chat server the exact request body the service
sent it (captured by a pass-through on the way), both streamed, prompt cache off, so the two
paths run the same prompt. Rounds alternate which path goes first.

    python -m benchmarks chat_service --rounds 3 --max-tokens 16
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from httpx_sse import connect_sse
from service_helpers import free_port, new_key, wait_final

from archivist.service import ServiceSettings, create_app
from cli.llama_server import LlamaServer

FACT = "On the planet Zorbia the sky is bright green, because of the copper dust in the air."
QUESTION = "What colour is the Zorbian sky?"


def serve(app: Any) -> tuple[str, uvicorn.Server]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def via_service(http: httpx.Client, session: str) -> dict[str, float]:
    body = {"content": QUESTION, "knowledge_bases": ["planets"], "top_k": 1}
    started = time.perf_counter()
    first = retrieval = last = 0.0
    deltas = 0
    with connect_sse(http, "POST", f"/v1/sessions/{session}/messages", json=body) as source:
        for event in source.iter_sse():
            now = time.perf_counter() - started
            if event.event == "retrieval":
                retrieval = now
            elif event.event == "delta":
                deltas += 1
                first = first or now
                last = now
            elif event.event == "error":
                raise RuntimeError(event.data)
    return {"retrieval": retrieval, "ttft": first, "last": last, "deltas": deltas}


def direct(base_url: str, body: dict[str, Any]) -> dict[str, float]:
    started = time.perf_counter()
    first = last = 0.0
    deltas = 0
    with (
        httpx.Client(timeout=600) as http,
        connect_sse(http, "POST", f"{base_url}/chat/completions", json=body) as source,
    ):
        for event in source.iter_sse():
            if event.data.strip() == "[DONE]":
                break
            choices = json.loads(event.data).get("choices") or []
            if choices and choices[0].get("delta", {}).get("content"):
                now = time.perf_counter() - started
                deltas += 1
                first = first or now
                last = now
    return {"retrieval": 0.0, "ttft": first, "last": last, "deltas": deltas}


def rate(sample: dict[str, float]) -> float:
    span = sample["last"] - sample["ttft"]
    return (sample["deltas"] - 1) / span if span > 0 and sample["deltas"] > 1 else 0.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-chat-"))
    llama = LlamaServer(work / "gguf")
    sent: list[dict[str, Any]] = []

    # a pass-through that records what the service sends and forwards it unchanged
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    upstream = httpx.AsyncClient(timeout=600)

    async def forward(request: Request) -> StreamingResponse:
        body = await request.json()
        body["cache_prompt"] = False
        sent.append(body)
        response = await upstream.send(
            upstream.build_request("POST", f"{llama.base_url}/chat/completions", json=body),
            stream=True,
        )
        return StreamingResponse(
            response.aiter_raw(), media_type="text/event-stream", background=None
        )

    proxy_url, proxy = serve(
        Starlette(routes=[Route("/v1/chat/completions", forward, methods=["POST"])])
    )
    settings = ServiceSettings(
        home=work / "home",
        chat_base_url=f"{proxy_url}/v1",
        chat_model="gemma",
        chat_max_tokens=args.max_tokens,
        chat_timeout=600,
        chat_run_seconds=1200,
    )
    key = new_key(settings, "bench")
    url, service = serve(create_app(settings))
    results: dict[str, list[dict[str, float]]] = {"service": [], "direct": []}
    try:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=1200
        ) as http:
            http.post("/v1/knowledge-bases", json={"name": "planets"})
            http.post(
                "/v1/knowledge-bases/planets/documents",
                files=[("files", ("zorbia.txt", FACT.encode(), "text/plain"))],
            )
            wait_final(http, "planets")
            via_service(http, http.post("/v1/sessions", json={}).json()["id"])  # warm-up
            for round_ in range(args.rounds):
                session = http.post("/v1/sessions", json={}).json()["id"]
                order = ["service", "direct"] if round_ % 2 == 0 else ["direct", "service"]
                # each round's session is new, so the body the service sends is the same
                # every time: the warm-up's capture serves a round that starts with `direct`
                for path in order:
                    if path == "service":
                        results["service"].append(via_service(http, session))
                    else:
                        results["direct"].append(direct(llama.base_url, dict(sent[-1])))
    finally:
        service.should_exit = True
        proxy.should_exit = True
        llama.kill()
    print(f"rounds={args.rounds} max_tokens={args.max_tokens}")
    for path, samples in results.items():
        ttft = statistics.median(s["ttft"] for s in samples)
        retrieval = statistics.median(s["retrieval"] for s in samples)
        tps = statistics.median(rate(s) for s in samples)
        print(
            f"{path:8s} ttft median {ttft:7.2f} s  (retrieval {retrieval:5.2f} s)  "
            f"tokens/s median {tps:5.2f}  ttft samples {[round(s['ttft'], 2) for s in samples]}"
        )
    service_ttft = statistics.median(s["ttft"] - s["retrieval"] for s in results["service"])
    direct_ttft = statistics.median(s["ttft"] for s in results["direct"])
    print(f"ttft beyond retrieval, service / direct: {service_ttft / direct_ttft:.2f}x")


if __name__ == "__main__":
    main()
