"""An agent with RAGMiddleware in agentic mode: the model searches when it decides to.

The middleware offers a `search_knowledge` tool (register it in the agent's Toolkit); the
model chooses when to call it and with what query, and cites the passages it gets back. The
knowledge base holds the documents in `samples/`. The chat model is `OpenAIChatModel` when
`OPENAI_API_KEY` is set (`OPENAI_BASE_URL` and `OPENAI_MODEL` optional), otherwise a scripted
model that calls `search_knowledge` first and then answers citing what it found.

Run from the repository root:

    python examples/agent_agentic.py
"""

import asyncio
import uuid

from _shared import (
    answer,
    chat_model_or,
    cite_first_passage,
    print_events,
    sample_knowledge,
    tool_results_in,
)

from archivist.agent import Agent
from archivist.message import Msg, ToolUseBlock
from archivist.middleware import RAGMiddleware
from archivist.model import ChatResponse, ScriptedChatModel
from archivist.rag import QdrantStore
from archivist.tool import Toolkit


def offline_model() -> ScriptedChatModel:
    """Searches the knowledge base with the user's question, then answers from the results."""

    def search_then_answer(messages: list[Msg], tools: object) -> ChatResponse:
        results = tool_results_in(messages[-1])
        if results:
            return answer(cite_first_passage(results))
        question = messages[-1].get_text_content()
        search = ToolUseBlock(
            id=uuid.uuid4().hex, name="search_knowledge", input={"query": question}
        )
        return ChatResponse(content=[search])

    return ScriptedChatModel([search_then_answer] * 10)  # one entry per model call


async def main() -> None:
    async with QdrantStore(location=":memory:") as store:
        knowledge = await sample_knowledge(store)
        chat_model = chat_model_or(offline_model())

        agentic_mw = RAGMiddleware(
            knowledges=[knowledge],
            parameters=RAGMiddleware.Parameters(mode="agentic", top_k=3),
        )

        # In agentic mode the search_knowledge tool must be put into the Toolkit by hand.
        toolkit = Toolkit(tools=await agentic_mw.list_tools())

        agent = Agent(
            name="agentic-agent",
            system_prompt="必要时调用 search_knowledge 工具查询资料。",
            model=chat_model,
            toolkit=toolkit,
            middlewares=[agentic_mw],
        )

        [tool] = await agentic_mw.list_tools()
        print(f"tool offered to the model: {tool.name}")
        print(f"{tool.description}\n")

        reply = await agent.reply(Msg("user", "Which model embeds text offline?", "user"))
        print(f"reply: {reply.get_text_content()}")

        print("\nstreamed:")
        await print_events(agent, Msg("user", "How do tenants stay isolated?", "user"))


if __name__ == "__main__":
    asyncio.run(main())
