"""Shared by the agent examples: a knowledge base over `samples/`, the chat model to use, and
a printer for the events an agent streams. Not an example itself."""

import os
import re
from collections.abc import Sequence
from pathlib import Path

from archivist.agent import Agent
from archivist.embedding import LocalEmbeddingModel
from archivist.event import (
    HintBlockEvent,
    ReasoningEnd,
    ReasoningStart,
    ReplyEnd,
    TextDelta,
    ToolCall,
    ToolResult,
)
from archivist.message import HintBlock, Msg, TextBlock, ToolResultBlock
from archivist.model import ChatModelBase, ChatResponse, OpenAIChatModel
from archivist.rag import ApproxTokenChunker, KnowledgeBase, VectorStoreBase, default_registry

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


async def sample_knowledge(store: VectorStoreBase) -> KnowledgeBase:
    """A knowledge base holding the text of every file in `samples/` (offline embeddings)."""
    knowledge = KnowledgeBase(
        name="archivist-docs",
        description="Archivist's own documentation: an overview, a user guide, slides.",
        embedding_model=LocalEmbeddingModel(),
        vector_store=store,
        collection="archivist-docs",
    )
    registry = default_registry()
    chunker = ApproxTokenChunker(chunk_size=256, overlap=32)
    for path in sorted(SAMPLES.glob("*.*")):
        sections = await registry.parser_for_path(path).parse(file=str(path), filename=path.name)
        # The offline model embeds text only; pictures would be skipped anyway.
        text_sections = [s for s in sections if isinstance(s.content, TextBlock)]
        if text_sections:
            chunks = await chunker.chunk(text_sections)
            await knowledge.insert_document(chunks, document_metadata={"filename": path.name})
    return knowledge


def chat_model_or(offline_model: ChatModelBase) -> ChatModelBase:
    """An OpenAI-compatible model when OPENAI_API_KEY is set, else `offline_model`.

    The model reads OPENAI_BASE_URL itself, so vLLM, Ollama or DashScope's compatible mode
    work too; OPENAI_MODEL picks the model.
    """
    if os.environ.get("OPENAI_API_KEY"):
        return OpenAIChatModel(os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return offline_model


# -- for the scripted models: read what retrieval put in front of them ------------------------

_FIRST_PASSAGE = re.compile(
    r"^\[1\] (?P<citation>[^\n]+?) \(knowledge base: [^)\n]*\)\n(?P<text>.*?)(?=\n\n\[2\] |\Z)",
    re.MULTILINE | re.DOTALL,
)


def blocks_text(blocks: str | Sequence[object]) -> str:
    if isinstance(blocks, str):
        return blocks
    return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))


def hint_in(messages: list[Msg]) -> str:
    """The text of the retrieval hint in the context, or ''."""
    hints = [b for m in messages for b in m.content if isinstance(b, HintBlock)]
    return "\n".join(blocks_text(h.hint) for h in hints)


def tool_results_in(message: Msg) -> str:
    """The text of the tool results a message carries, or ''."""
    return "\n".join(blocks_text(b.output) for b in message.get_blocks(ToolResultBlock))


def cite_first_passage(passages: str) -> str:
    """The first two sentences of the best passage (headings skipped), with its citation."""
    found = _FIRST_PASSAGE.search(passages)
    if found is None:
        return "The knowledge base has nothing on that."
    lines = [line.strip() for line in found["text"].splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("<slide", "</slide"))]
    if lines and len(lines[0].split()) < 5:
        lines = lines[1:]  # a heading
    prose = " ".join(lines)
    sentences = re.split(r"(?<=[.!?])\s", prose)
    return f"{' '.join(sentences[:2]).rstrip('.')} [1: {found['citation']}]."


def answer(text: str) -> ChatResponse:
    return ChatResponse(content=[TextBlock(text=text)])


# -- printing a streamed reply ----------------------------------------------------------------


async def print_events(agent: Agent, msg: Msg) -> None:
    """Stream `agent`'s reply to `msg`, printing one line per event (text as it arrives)."""
    print(f"user: {msg.get_text_content()}")
    async for event in agent.reply_stream(msg):
        if isinstance(event, HintBlockEvent):
            print(f"  [hint] searched {event.knowledge_bases} with {event.query!r}")
            for citation in event.metadata["citations"]:
                print(f"         cites: {citation}")
        elif isinstance(event, ReasoningStart):
            print(f"  [reasoning {event.iteration}] ", end="", flush=True)
        elif isinstance(event, TextDelta):
            print(event.delta, end="", flush=True)
        elif isinstance(event, ReasoningEnd):
            print()
        elif isinstance(event, ToolCall):
            print(f"  [tool call] {event.tool_call.name}({event.tool_call.input})")
        elif isinstance(event, ToolResult):
            lines = blocks_text(event.result.output).splitlines()
            print(f"  [tool result] {len(lines)} line(s), citing:")
            for line in lines:
                if line.startswith("["):
                    print(f"         {line}")
        elif isinstance(event, ReplyEnd):
            print(f"  [reply end] {event.msg.get_text_content()}")
