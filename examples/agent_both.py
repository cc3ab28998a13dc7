"""An agent with two RAGMiddlewares: static retrieval up front, agentic search on demand.

The static middleware puts passages found with the user's message into the context before
the first reasoning step (and emits a HintBlockEvent); the agentic one offers the
`search_knowledge` tool so the model can look further. The knowledge base holds the documents
in `samples/`. The chat model is `OpenAIChatModel` when `OPENAI_API_KEY` is set
(`OPENAI_BASE_URL` and `OPENAI_MODEL` optional), otherwise a scripted model that reads the
hint, searches once more for a follow-up point, and answers citing both.

Run from the repository root:

    python examples/agent_both.py
"""

import asyncio
import uuid

from _shared import (
    answer,
    chat_model_or,
    cite_first_passage,
    hint_in,
    print_events,
    sample_knowledge,
    tool_results_in,
)

from archivist.agent import Agent
from archivist.message import Msg, TextBlock, ToolUseBlock
from archivist.middleware import RAGMiddleware
from archivist.model import ChatResponse, ScriptedChatModel
from archivist.rag import QdrantStore
from archivist.tool import Toolkit


def offline_model(follow_up: str) -> ScriptedChatModel:
    """Answers from the static hint, searches for `follow_up`, then adds what it found."""

    def hint_then_search(messages: list[Msg], tools: object) -> ChatResponse:
        results = tool_results_in(messages[-1])
        if not results:
            background = TextBlock(text=cite_first_passage(hint_in(messages)))
            search = ToolUseBlock(
                id=uuid.uuid4().hex, name="search_knowledge", input={"query": follow_up}
            )
            return ChatResponse(content=[background, search])
        said_before = messages[-2].get_text_content()
        return answer(f"{said_before} Also: {cite_first_passage(results)}")

    return ScriptedChatModel([hint_then_search] * 10)  # one entry per model call


async def main() -> None:
    async with QdrantStore(location=":memory:") as store:
        knowledge = await sample_knowledge(store)
        chat_model = chat_model_or(offline_model(follow_up="How do answers cite their sources?"))

        # static gives the first step some background; agentic lets the model search more
        static_mw = RAGMiddleware(
            knowledges=[knowledge],
            parameters=RAGMiddleware.Parameters(mode="static", top_k=3),
        )
        agentic_mw = RAGMiddleware(
            knowledges=[knowledge],
            parameters=RAGMiddleware.Parameters(mode="agentic", top_k=3),
        )

        # In agentic mode the search_knowledge tool must be put into the Toolkit by hand.
        toolkit = Toolkit(tools=await agentic_mw.list_tools())

        agent = Agent(
            name="hybrid-agent",
            system_prompt="使用检索资料回答；必要时主动调用 search_knowledge 补充。",
            model=chat_model,
            toolkit=toolkit,
            middlewares=[static_mw, agentic_mw],
        )

        await print_events(agent, Msg("user", "How can an agent use a knowledge base?", "user"))


if __name__ == "__main__":
    asyncio.run(main())
