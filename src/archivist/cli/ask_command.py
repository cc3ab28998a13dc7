"""`archivist ask QUESTION`: an agent answers from the knowledge base, citing its sources."""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.console import Console

from archivist.agent import Agent
from archivist.cli.session import add_common_arguments, open_session
from archivist.event import HintBlockEvent, TextDelta, ToolResult
from archivist.message import Msg, TextBlock
from archivist.middleware import RAGMiddleware
from archivist.middleware.retrieval import render_hits
from archivist.model import ChatModelBase, OpenAIChatModel
from archivist.tool import Toolkit

DASHSCOPE_COMPATIBLE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
SYSTEM_PROMPT = (
    "You answer questions from the user's own documents. Use only the retrieved passages; "
    "cite each fact with the passage's [number] and source (file, page or slide). If the "
    "passages do not contain the answer, say so."
)
NO_MODEL_HINT = (
    "No chat model is configured, so here are the retrieved passages. To get answers, set "
    "OPENAI_API_KEY (with OPENAI_BASE_URL/--model for vLLM, Ollama or llama.cpp) or "
    "DASHSCOPE_API_KEY, or pass --base-url and --model."
)


def add_ask_command(commands: Any) -> None:
    """Register the `ask` sub-command."""
    cmd = commands.add_parser("ask", help="answer a question from a knowledge base")
    cmd.add_argument("question")
    cmd.add_argument("--mode", choices=["static", "agentic"], default="static")
    cmd.add_argument("-k", "--top-k", type=int, default=5)
    cmd.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint")
    cmd.add_argument("--model", default=None, help="chat model name")
    cmd.add_argument("--api-key", default=None, help="API key (default: from the environment)")
    add_common_arguments(cmd)
    cmd.set_defaults(handler=run_ask)


def configured_chat_model(args: argparse.Namespace) -> ChatModelBase | None:
    """The chat model the flags and environment describe, or None when there is none."""
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY")
    model = args.model or os.environ.get("OPENAI_MODEL")
    if base_url or api_key:
        return OpenAIChatModel(model or "gpt-4o-mini", api_key=api_key, base_url=base_url)
    dashscope_key = os.environ.get("DASHSCOPE_API_KEY")
    if dashscope_key:
        return OpenAIChatModel(
            model or "qwen-plus", api_key=dashscope_key, base_url=DASHSCOPE_COMPATIBLE_URL
        )
    return None


async def run_ask(args: argparse.Namespace) -> int:
    """Answer with an agent over the KB, or print the passages when no model is configured."""
    console = Console()
    chat_model = configured_chat_model(args)
    async with open_session(args, create=False) as session:
        middleware = RAGMiddleware(
            knowledges=[session.kb],
            parameters=RAGMiddleware.Parameters(mode=args.mode, top_k=args.top_k),
        )
        if chat_model is None:
            retrieval = await middleware.retrieve([args.question])
            for block in render_hits(retrieval):
                if isinstance(block, TextBlock):
                    console.print(block.text, markup=False, highlight=False)
            console.print(NO_MODEL_HINT, style="yellow")
            return 0
        agent = Agent(
            name="archivist",
            system_prompt=SYSTEM_PROMPT,
            model=chat_model,
            toolkit=Toolkit(tools=await middleware.list_tools()),
            middlewares=[middleware],
        )
        citations: list[str] = []
        async for event in agent.reply_stream(Msg("user", args.question, "user")):
            if isinstance(event, TextDelta):
                console.print(event.delta, end="", markup=False, highlight=False)
            elif isinstance(event, HintBlockEvent):
                citations.extend(event.metadata.get("citations", []))
            elif isinstance(event, ToolResult):
                console.print(f"[dim](searched the knowledge base: {event.result.name})[/dim]")
    console.print()
    if citations:
        console.print("Sources:", style="bold")
        for number, citation in enumerate(citations, 1):
            console.print(f"  [{number}] {citation}", markup=False, highlight=False)
    return 0
