"""`RAGMiddleware`: knowledge for an agent, before it thinks (static) or as a tool (agentic)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from archivist.errors import InvalidArgumentError
from archivist.event import HintBlockEvent
from archivist.message import DataBlock, HintBlock, Msg, TextBlock
from archivist.middleware.base import MiddlewareBase
from archivist.middleware.context import ReplyContext
from archivist.middleware.retrieval import Retrieval, render_hits, search_and_fuse
from archivist.rag.knowledge.context import MAX_CONTEXT
from archivist.rag.knowledge.knowledge_base import KnowledgeBase, Query
from archivist.tool import ToolBase

HINT_SOURCE = "rag"


class RAGMiddleware(MiddlewareBase):
    """Hands what a set of KnowledgeBases finds to an agent.

    - `static`: before the first reasoning step of each reply, searches every KB with the
      reply's input (its DataBlocks too, for multimodal KBs), puts one HintBlock right after
      the input in the context (none when no passage clears `min_relevance`), emits a
      HintBlockEvent if asked, and takes the hint out again after that step unless
      `persist_hint`.
    - `agentic` (default): `list_tools()` offers a `search_knowledge` tool to register.
    Hits from all KBs are merged by relevance, deduplicated and cut to `top_k`; each one
    is labelled with its source, page/slide and chunk so the answer can cite it.
    `on_retrieval`, if given, is called with every retrieval (static or by the tool) as it
    happens, e.g. to show the passages while the answer is still being written.
    """

    class Parameters(BaseModel):
        """How the middleware searches and injects."""

        model_config = ConfigDict(extra="forbid")

        mode: Literal["agentic", "static"] = "agentic"
        top_k: int = Field(default=5, gt=0)
        score_threshold: float | None = None
        min_relevance: float | None = Field(default=None, ge=0, le=1)
        """Passages less likely than this to be relevant are left out (see `relevance`);
        in static mode nothing is inserted when none clears it. None (the default, as in
        AgentScope) keeps the `top_k` best; `DEFAULT_MIN_RELEVANCE` is the suggested value for
        English collections of some size."""
        context: int = Field(default=0, ge=0, le=MAX_CONTEXT)
        """Neighbouring chunks given with each passage (static mode; the tool's default)."""
        emit_hint_event: bool = True
        persist_hint: bool = False
        hint_template: str = "{context}"
        """Wraps the static-mode hint; its one `{context}` placeholder becomes the passages."""

        @field_validator("hint_template")
        @classmethod
        def _one_placeholder(cls, value: str) -> str:
            count = value.count("{context}")
            if count != 1:
                raise InvalidArgumentError(
                    f"hint_template must hold exactly one '{{context}}' placeholder, found {count}",
                    argument="hint_template",
                )
            return value

    def __init__(
        self,
        knowledges: Sequence[KnowledgeBase] | None = None,
        parameters: Parameters | None = None,
        *,
        knowledge_bases: Sequence[KnowledgeBase] | None = None,
        on_retrieval: Callable[[Retrieval], None] | None = None,
    ) -> None:
        if knowledges is not None and knowledge_bases is not None:
            raise InvalidArgumentError(
                "pass knowledges= or knowledge_bases=, not both", argument="knowledge_bases"
            )
        kbs = list(knowledges if knowledges is not None else knowledge_bases or [])
        if not kbs:
            raise InvalidArgumentError(
                "RAGMiddleware needs at least one KnowledgeBase", argument="knowledge_bases"
            )
        for index, kb in enumerate(kbs):
            if not isinstance(kb, KnowledgeBase):
                raise TypeError(f"knowledges[{index}] is not a KnowledgeBase")
        names = [kb.name for kb in kbs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise InvalidArgumentError(
                f"knowledge base names must be unique; repeated: {duplicates}",
                argument="knowledge_bases",
            )
        self.knowledges = kbs
        self.parameters = parameters or self.Parameters()
        self._state_key = f"rag-hint:{id(self)}"
        self._on_retrieval = on_retrieval

    async def retrieve(
        self,
        queries: Sequence[Query],
        knowledge_bases: Sequence[str] | None = None,
        *,
        context: int | None = None,
    ) -> Retrieval:
        """Search the attached KBs (or the named subset) and merge what they find; `context`
        neighbouring chunks with each hit (default: the parameters')."""
        chosen = self.knowledges
        if knowledge_bases:
            unknown = sorted(set(knowledge_bases) - {kb.name for kb in self.knowledges})
            if unknown:
                raise InvalidArgumentError(
                    f"unknown knowledge base(s) {unknown}; available: "
                    f"{[kb.name for kb in self.knowledges]}. Search again naming only "
                    "available ones, or leave knowledge_bases out to search them all.",
                    argument="knowledge_bases",
                )
            chosen = [kb for kb in self.knowledges if kb.name in knowledge_bases]
        retrieval = await search_and_fuse(
            chosen,
            queries,
            self.parameters.top_k,
            self.parameters.score_threshold,
            context=self.parameters.context if context is None else context,
            min_relevance=self.parameters.min_relevance,
        )
        if self._on_retrieval is not None:
            self._on_retrieval(retrieval)
        return retrieval

    async def list_tools(self) -> list[ToolBase]:
        if self.parameters.mode != "agentic":
            return []
        return [SearchKnowledgeTool(self)]

    async def before_reasoning(self, ctx: ReplyContext) -> None:
        if self.parameters.mode != "static" or ctx.iteration != 0:
            return
        queries = _queries_from(ctx.input)
        if not queries:
            return
        retrieval = await self.retrieve(queries)
        if not retrieval.hits and not retrieval.errors:
            return  # nothing cleared min_relevance: the model is better off without a hint
        hint = HintBlock(
            hint=wrap_hint(self.parameters.hint_template, render_hits(retrieval)),
            source=HINT_SOURCE,
        )
        msg = Msg(HINT_SOURCE, [hint], "user")
        anchor = (
            ctx.input_msg if ctx.input_msg is not None and ctx.input_msg in ctx.memory else None
        )
        ctx.memory.add(msg, after=anchor)
        ctx.state[self._state_key] = msg.id
        if self.parameters.emit_hint_event:
            await ctx.emit(
                HintBlockEvent(
                    hint=hint,
                    source=HINT_SOURCE,
                    knowledge_bases=retrieval.searched,
                    query="\n".join(q for q in queries if isinstance(q, str)),
                    metadata={
                        "citations": [h.citation() for h in retrieval.hits],
                        "errors": retrieval.errors,
                    },
                )
            )

    async def after_reasoning(self, ctx: ReplyContext) -> None:
        msg_id = ctx.state.pop(self._state_key, None)
        if msg_id is not None and not self.parameters.persist_hint:
            ctx.memory.remove(msg_id)


def wrap_hint(template: str, blocks: list[TextBlock | DataBlock]) -> list[TextBlock | DataBlock]:
    """`blocks` inside `template`: the text around `{context}` joins the first and last block."""
    before, after = template.split("{context}")
    wrapped = list(blocks)
    if before:
        if wrapped and isinstance(wrapped[0], TextBlock):
            wrapped[0] = TextBlock(text=before + wrapped[0].text)
        else:
            wrapped.insert(0, TextBlock(text=before))
    if after:
        if wrapped and isinstance(wrapped[-1], TextBlock):
            wrapped[-1] = TextBlock(text=wrapped[-1].text + after)
        else:
            wrapped.append(TextBlock(text=after))
    return wrapped


def _queries_from(messages: Sequence[Msg]) -> list[Query]:
    """The reply input as queries: all its text joined into one, plus its DataBlocks."""
    texts: list[str] = []
    data: list[Query] = []
    for msg in messages:
        for block in msg.content:
            if isinstance(block, TextBlock) and block.text.strip():
                texts.append(block.text)
            elif isinstance(block, DataBlock):
                data.append(block)
    joined = "\n".join(texts)
    return ([joined] if joined else []) + data


class SearchKnowledgeTool(ToolBase):
    """The agentic-mode tool: the model chooses the query and, optionally, which KBs."""

    name = "search_knowledge"

    def __init__(self, middleware: RAGMiddleware) -> None:
        self._middleware = middleware
        names = [kb.name for kb in middleware.knowledges]
        listing = "\n".join(
            f"- {kb.name}: {kb.description or '(no description)'}" for kb in middleware.knowledges
        )
        self.description = (
            "Search the knowledge bases for passages relevant to a query. Every passage comes "
            "with a citation (source, page or slide, chunk); cite it when you use it.\n"
            f"Available knowledge bases:\n{listing}"
        )
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to look for, in natural language.",
                },
                "knowledge_bases": {
                    "type": "array",
                    "items": {"type": "string", "enum": names},
                    "description": "Search only these knowledge bases (default: all).",
                },
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT,
                    "description": "Also return this many neighbouring chunks before and "
                    "after each passage, when the answer may continue around it (default "
                    f"{middleware.parameters.context}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    async def __call__(self, **kwargs: Any) -> Any:
        query = kwargs.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query must be a non-empty string", argument="query")
        context = kwargs.get("context")
        if context is not None and (
            isinstance(context, bool)
            or not isinstance(context, int)
            or not 0 <= context <= MAX_CONTEXT
        ):
            raise InvalidArgumentError(
                f"context must be a whole number from 0 to {MAX_CONTEXT}", argument="context"
            )
        retrieval = await self._middleware.retrieve(
            [query], kwargs.get("knowledge_bases"), context=context
        )
        return render_hits(retrieval)
