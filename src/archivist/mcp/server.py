"""Knowledge bases as MCP tools, on the official `mcp` SDK's low-level server.

Two tools: `search_knowledge`, the very tool `RAGMiddleware` offers an agent (its name,
arguments and description are taken from it, plus an optional `top_k`), and
`list_knowledge_bases`. The tools are built per request from a `KnowledgeSource`, so the
service can answer each tenant with its own knowledge bases and the CLI sees knowledge bases
indexed after it started.
"""

from __future__ import annotations

import copy
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from pydantic import BaseModel, ConfigDict

from archivist import __version__
from archivist.errors import InvalidArgumentError
from archivist.message import DataBlock, TextBlock
from archivist.middleware.rag import RAGMiddleware, SearchKnowledgeTool
from archivist.middleware.retrieval import Retrieval
from archivist.rag.knowledge.knowledge_base import KnowledgeBase, Query
from archivist.tool.json_schema import schema_errors

logger = logging.getLogger(__name__)

SEARCH_TOOL = SearchKnowledgeTool.name
LIST_TOOL = "list_knowledge_bases"
MAX_TOP_K = 100
MAX_QUERY_CHARS = 4000
TOP_K_SCHEMA: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_TOP_K,
    "description": "How many passages to return "
    f"(default {RAGMiddleware.Parameters().top_k}, at most {MAX_TOP_K}).",
}
LIST_DESCRIPTION = (
    f"List the knowledge bases that {SEARCH_TOOL} can search, with their descriptions."
)
INSTRUCTIONS = (
    f"Knowledge bases of documents. Call {SEARCH_TOOL} to find passages; each comes with a "
    "citation (source, page or slide, chunk) to quote with the answer."
)
READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class KnowledgeSource(ABC):
    """Where the server finds the knowledge bases of the caller of one MCP request."""

    @abstractmethod
    async def knowledge_bases(self, request: Any) -> list[KnowledgeBase]:
        """Handles on the caller's knowledge bases, to describe (no store need be open).

        `request` is the HTTP request (a Starlette `Request`) on HTTP transports, else None.
        """

    def open(
        self, knowledge_bases: Sequence[KnowledgeBase]
    ) -> AbstractAsyncContextManager[list[KnowledgeBase]]:
        """Searchable handles on `knowledge_bases` while a search runs (default: the same)."""
        return _as_is(knowledge_bases)


@asynccontextmanager
async def _as_is(knowledge_bases: Sequence[KnowledgeBase]) -> AsyncIterator[list[KnowledgeBase]]:
    yield list(knowledge_bases)


class KnowledgeBaseInfo(BaseModel):
    """A knowledge base as `list_knowledge_bases` reports it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str


class KnowledgeBaseList(BaseModel):
    """The structured result of `list_knowledge_bases`."""

    model_config = ConfigDict(extra="forbid")

    knowledge_bases: list[KnowledgeBaseInfo]


class SearchHit(BaseModel):
    """One passage `search_knowledge` found, with what it takes to cite and fetch it."""

    model_config = ConfigDict(extra="forbid")

    knowledge_base: str
    document_id: str
    chunk_index: int
    source: str
    citation: str
    score: float
    """The store's score of the passage; it orders the hits of one knowledge base only."""
    relevance: float | None
    """The estimated probability (0..1) that the passage is relevant; hits come in this
    order. None when the store cannot tell."""
    text: str | None
    """The passage; None for an image or other media passage (sent as content instead)."""


class SearchResult(BaseModel):
    """The structured result of `search_knowledge`: hits best first, and per-KB errors."""

    model_config = ConfigDict(extra="forbid")

    hits: list[SearchHit]
    errors: dict[str, str]


class _RecordingMiddleware(RAGMiddleware):
    """`RAGMiddleware` that keeps the last retrieval, so a tool call also yields its hits."""

    last: Retrieval | None = None

    async def retrieve(self, queries: Sequence[Query], *args: Any, **kwargs: Any) -> Retrieval:
        retrieval = await super().retrieve(queries, *args, **kwargs)
        self.last = retrieval
        return retrieval


def _middleware(knowledge_bases: Sequence[KnowledgeBase], top_k: int) -> _RecordingMiddleware:
    return _RecordingMiddleware(
        knowledges=knowledge_bases,
        parameters=RAGMiddleware.Parameters(mode="agentic", top_k=top_k),
    )


async def _agentic_tool(middleware: RAGMiddleware) -> SearchKnowledgeTool:
    tools = await middleware.list_tools()
    tool = next(t for t in tools if t.name == SEARCH_TOOL)
    assert isinstance(tool, SearchKnowledgeTool)
    return tool


async def search_tool_schema(
    knowledge_bases: Sequence[KnowledgeBase],
) -> tuple[str, dict[str, Any], bool]:
    """The description and input schema of `search_knowledge` over `knowledge_bases`: those
    of RAGMiddleware's agentic tool, with a length limit on `query` and plus `top_k` unless
    the tool has it already (the third value says whether it was added here)."""
    tool = await _agentic_tool(_middleware(knowledge_bases, RAGMiddleware.Parameters().top_k))
    schema = copy.deepcopy(tool.parameters)
    properties = schema.setdefault("properties", {})
    query = properties.get("query")
    if isinstance(query, dict):
        query.setdefault("maxLength", MAX_QUERY_CHARS)
    added = "top_k" not in properties
    if added:
        properties["top_k"] = TOP_K_SCHEMA
    return tool.description, schema, added


async def _tools(knowledge_bases: Sequence[KnowledgeBase]) -> list[types.Tool]:
    listing = types.Tool(
        name=LIST_TOOL,
        description=LIST_DESCRIPTION,
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        output_schema=KnowledgeBaseList.model_json_schema(),
        annotations=READ_ONLY,
    )
    if not knowledge_bases:
        return [listing]  # RAGMiddleware's tool needs at least one knowledge base
    description, schema, _ = await search_tool_schema(knowledge_bases)
    search = types.Tool(
        name=SEARCH_TOOL,
        description=description,
        input_schema=schema,
        output_schema=SearchResult.model_json_schema(),
        annotations=READ_ONLY,
    )
    return [search, listing]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _content(blocks: Sequence[TextBlock | DataBlock]) -> list[types.ContentBlock]:
    """RAGMiddleware's rendered hits as MCP content: text as text, images as images."""
    content: list[types.ContentBlock] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            content.append(types.TextContent(type="text", text=block.text))
            continue
        source = block.source
        if source.type == "base64" and source.media_type.startswith("image/"):
            content.append(
                types.ImageContent(type="image", data=source.data, mime_type=source.media_type)
            )
        elif source.type == "url":
            content.append(
                types.TextContent(type="text", text=f"<{source.media_type}: {source.url}>")
            )
        else:
            content.append(types.TextContent(type="text", text=f"<{source.media_type} passage>"))
    return content


def _hits(retrieval: Retrieval) -> SearchResult:
    hits = []
    for hit in retrieval.hits:
        chunk = hit.result.chunk
        hits.append(
            SearchHit(
                knowledge_base=hit.knowledge_base,
                document_id=hit.result.document_id,
                chunk_index=chunk.chunk_index,
                source=chunk.source,
                citation=hit.citation(),
                score=hit.result.score,
                relevance=hit.result.relevance,
                text=chunk.content.text if isinstance(chunk.content, TextBlock) else None,
            )
        )
    return SearchResult(hits=hits, errors=dict(retrieval.errors))


async def search(
    source: KnowledgeSource, request: Any, arguments: dict[str, Any]
) -> types.CallToolResult:
    """Run `search_knowledge` with `arguments` for the caller of `request`."""
    knowledge_bases = await source.knowledge_bases(request)
    if not knowledge_bases:
        return _error("There are no knowledge bases to search yet.")
    _, schema, added_top_k = await search_tool_schema(knowledge_bases)
    problems = schema_errors(arguments, schema)
    if problems:
        return _error(f"invalid arguments for tool {SEARCH_TOOL!r}: " + "; ".join(problems))
    arguments = dict(arguments)
    top_k = RAGMiddleware.Parameters().top_k
    if added_top_k:
        top_k = arguments.pop("top_k", top_k)
    named = arguments.get("knowledge_bases") or []
    chosen = [kb for kb in knowledge_bases if not named or kb.name in named]
    try:
        async with source.open(chosen) as searchable:
            middleware = _middleware(searchable, top_k)
            tool = await _agentic_tool(middleware)
            blocks = await tool(**arguments)
    except InvalidArgumentError as exc:  # the tool's own check of its arguments
        return _error(str(exc))
    except Exception as exc:  # e.g. a store that stayed locked: the caller may try again
        logger.warning("search_knowledge failed: %s: %s", type(exc).__name__, exc)
        return _error(f"the search failed: {exc}")
    assert middleware.last is not None
    result = _hits(middleware.last)
    return types.CallToolResult(
        content=_content(blocks), structured_content=result.model_dump(mode="json")
    )


async def list_knowledge_bases(source: KnowledgeSource, request: Any) -> types.CallToolResult:
    """Run `list_knowledge_bases` for the caller of `request`."""
    listed = KnowledgeBaseList(
        knowledge_bases=[
            KnowledgeBaseInfo(name=kb.name, description=kb.description)
            for kb in await source.knowledge_bases(request)
        ]
    )
    lines = [
        f"- {kb.name}: {kb.description or '(no description)'}" for kb in listed.knowledge_bases
    ]
    text = "\n".join(lines) if lines else "There are no knowledge bases yet."
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=listed.model_dump(mode="json"),
    )


def knowledge_server(source: KnowledgeSource, *, name: str = "archivist") -> Server[Any]:
    """An MCP server offering the knowledge bases of `source` as tools."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await _tools(await source.knowledge_bases(ctx.request)))

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name == SEARCH_TOOL:
            return await search(source, ctx.request, arguments)
        if params.name == LIST_TOOL:
            if arguments:
                return _error(f"{LIST_TOOL} takes no arguments, got {sorted(arguments)}")
            return await list_knowledge_bases(source, ctx.request)
        return _error(
            f"there is no tool named {params.name!r}; available: {SEARCH_TOOL}, {LIST_TOOL}"
        )

    return Server(
        name,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
