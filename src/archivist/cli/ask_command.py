"""`archivist ask QUESTION`: an agent answers from the knowledge base, citing its sources."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from archivist.cli.arguments import (
    add_common_arguments,
    add_json_argument,
    add_option,
    add_timeout_argument,
    non_empty,
)
from archivist.cli.output import print_json
from archivist.cli.search_command import passage_lines
from archivist.cli.session import empty_kb, open_session
from archivist.options import CHAT_TIMEOUT, TOP_K

if TYPE_CHECKING:  # loaded when the command runs, so registering it costs nothing
    from archivist.middleware.retrieval import Hit
    from archivist.model import ChatModelBase

DASHSCOPE_COMPATIBLE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
SYSTEM_PROMPT = (
    "You answer questions from the user's own documents. Use only the retrieved passages; "
    "cite each fact with the passage's [number] and source (file, page or slide). If the "
    "passages do not contain the answer, say so."
)
NO_MODEL_HINT = (
    "No chat model is configured, so here are the passages retrieved for the question. "
    "For answers, set OPENAI_API_KEY (with OPENAI_BASE_URL and --model for vLLM, Ollama or "
    "llama.cpp) or DASHSCOPE_API_KEY, or pass --base-url URL --model NAME; or run "
    "`archivist chat-server` (a small model on this machine, no key) and pass the URL it "
    "prints as --base-url."
)
"""Said once, on stderr, before the passages `ask` prints without a chat model."""


def add_ask_command(commands: Any) -> None:
    """Register the `ask` sub-command."""
    cmd = commands.add_parser("ask", help="answer a question from a knowledge base")
    cmd.add_argument("question", type=non_empty, metavar="QUESTION", help="what to ask, in quotes")
    cmd.add_argument(
        "--mode",
        choices=["static", "agentic"],
        default="static",
        help="static: retrieve once before answering; agentic: the model searches as it likes",
    )
    add_option(cmd, TOP_K, short="-k", help="passages retrieved")
    cmd.add_argument(
        "--base-url", default=None, help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)"
    )
    cmd.add_argument("--model", default=None, help="chat model name (default: $OPENAI_MODEL)")
    cmd.add_argument(
        "--api-key",
        default=None,
        help="API key; prefer $OPENAI_API_KEY / $DASHSCOPE_API_KEY (a key given here is "
        "visible to other users in the process list)",
    )
    add_timeout_argument(cmd, CHAT_TIMEOUT.default, "chat model")
    add_common_arguments(cmd)
    add_json_argument(cmd)
    cmd.set_defaults(
        handler=run_ask,
        words_hint="a question of several words goes in quotes: "
        'archivist ask "how do tenants work?"',
    )


def configured_chat_model(args: argparse.Namespace) -> ChatModelBase | None:
    """The chat model the flags and environment describe, or None when there is none."""
    from archivist.model import OpenAIChatModel

    if args.api_key:
        print(
            "archivist: warning: --api-key is visible to other users in the process list; "
            "set OPENAI_API_KEY (or DASHSCOPE_API_KEY) in the environment instead",
            file=sys.stderr,
        )
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY")
    model = args.model or os.environ.get("OPENAI_MODEL")
    if base_url or api_key:
        return OpenAIChatModel(
            model or "gpt-4o-mini", api_key=api_key, base_url=base_url, timeout=args.timeout
        )
    dashscope_key = os.environ.get("DASHSCOPE_API_KEY")
    if dashscope_key:
        return OpenAIChatModel(
            model or "qwen-plus",
            api_key=dashscope_key,
            base_url=DASHSCOPE_COMPATIBLE_URL,
            timeout=args.timeout,
        )
    return None


def _source_json(number: int, hit: Hit) -> dict[str, Any]:
    return {
        "number": number,
        "citation": hit.citation(),
        "document_id": hit.result.document_id,
        "path": hit.result.chunk.metadata.get("path"),
        "relevance": None if hit.result.relevance is None else round(hit.result.relevance, 4),
        "score": round(hit.result.score, 6),
    }


async def run_ask(args: argparse.Namespace) -> int:
    """Answer with an agent over the KB (the answer, then its sources), or print the passages
    when no model is configured."""
    chat_model = configured_chat_model(args)
    try:
        return await _answer(args, chat_model)
    finally:
        if chat_model is not None:
            await chat_model.aclose()


async def _answer(args: argparse.Namespace, chat_model: ChatModelBase | None) -> int:
    """The answer of `chat_model` (or the passages, without one) over the session's KB."""
    from archivist.agent import Agent
    from archivist.event import HintBlockEvent, TextDelta
    from archivist.message import Msg
    from archivist.middleware import RAGMiddleware
    from archivist.tool import Toolkit

    async with open_session(args, create=False) as session:
        middleware = RAGMiddleware(
            knowledges=[session.kb],
            parameters=RAGMiddleware.Parameters(mode=args.mode, top_k=args.top_k),
        )
        if chat_model is None:
            retrieval = await middleware.retrieve([args.question])
            if not retrieval.hits and not await session.kb.list_documents():
                raise empty_kb(args.kb)
            print(NO_MODEL_HINT, file=sys.stderr, flush=True)
            _print_passages(args, retrieval.hits)
            return 0
        agent = Agent(
            name="archivist",
            system_prompt=SYSTEM_PROMPT,
            model=chat_model,
            toolkit=Toolkit(tools=await middleware.list_tools()),
            middlewares=[middleware],
        )
        citations: list[str] = []
        answer: list[str] = []
        async for event in agent.reply_stream(Msg("user", args.question, "user")):
            if isinstance(event, TextDelta):
                answer.append(event.delta)
                if not args.json:
                    sys.stdout.write(event.delta)
                    sys.stdout.flush()
            elif isinstance(event, HintBlockEvent):
                citations.extend(event.metadata.get("citations", []))
    if args.json:
        print_json(
            {
                "answer": "".join(answer),
                "sources": [{"number": n, "citation": c} for n, c in enumerate(citations, 1)],
            }
        )
        return 0
    print()
    if citations:
        print("\nSources:")
        for number, citation in enumerate(citations, 1):
            print(f"  [{number}] {citation}")
    return 0


def _print_passages(args: argparse.Namespace, hits: list[Hit]) -> None:
    if args.json:
        print_json(
            {
                "answer": None,
                "sources": [
                    {
                        **_source_json(n, hit),
                        "text": getattr(hit.result.chunk.content, "text", None),
                    }
                    for n, hit in enumerate(hits, 1)
                ],
            }
        )
        return
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    for number, hit in enumerate(hits, 1):
        relevance = hit.result.relevance
        measure = (
            f"score {hit.result.score:.3f}" if relevance is None else f"relevance {relevance:.2f}"
        )
        print(f"[{number}] {hit.citation()}  ({measure})")
        for line in passage_lines(hit.result, width):
            print(line)
        print()
