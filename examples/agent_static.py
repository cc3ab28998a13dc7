"""An agent with RAGMiddleware in static mode: retrieval before the first reasoning step.

Before the model is first called in each reply, the middleware searches the knowledge base
with the user's message and puts the hits into the context as a HintBlock (removed again after
that step). The knowledge base holds the documents in `samples/`. The chat model is
`OpenAIChatModel` when `OPENAI_API_KEY` is set (`OPENAI_BASE_URL` and `OPENAI_MODEL` optional),
otherwise a scripted model that answers from the retrieved passage, so it runs offline.

Run from the repository root:

    python examples/agent_static.py
"""

import asyncio

from _shared import (
    answer,
    chat_model_or,
    cite_first_passage,
    hint_in,
    print_events,
    sample_knowledge,
)

from archivist.agent import Agent
from archivist.message import Msg
from archivist.middleware import RAGMiddleware
from archivist.model import ChatResponse, ScriptedChatModel
from archivist.rag import QdrantStore
from archivist.tool import Toolkit


def offline_model() -> ScriptedChatModel:
    """Answers every call from the passages the middleware put into the context."""

    def answer_from_hint(messages: list[Msg], tools: object) -> ChatResponse:
        return answer(cite_first_passage(hint_in(messages)))

    return ScriptedChatModel([answer_from_hint] * 10)  # one entry per model call


async def main() -> None:
    async with QdrantStore(location=":memory:") as store:
        knowledge = await sample_knowledge(store)
        chat_model = chat_model_or(offline_model())

        static_mw = RAGMiddleware(
            knowledges=[knowledge],  # one or more KnowledgeBase handles
            parameters=RAGMiddleware.Parameters(
                mode="static",
                top_k=3,
                emit_hint_event=False,
            ),
        )

        agent = Agent(
            name="static-agent",
            system_prompt="使用检索到的资料回答用户问题。",
            model=chat_model,
            toolkit=Toolkit(),
            middlewares=[static_mw],
        )

        reply = await agent.reply(Msg("user", "How do tenants stay isolated?", "user"))
        print(f"reply: {reply.get_text_content()}")
        hints_left = [b for m in agent.memory.messages for b in m.content if b.type == "hint"]
        print(f"hints left in memory after the reply: {len(hints_left)}")

        # A UI that shows what was retrieved asks for a HintBlockEvent (the default).
        ui_agent = Agent(
            name="static-agent",
            system_prompt="使用检索到的资料回答用户问题。",
            model=chat_model,
            toolkit=Toolkit(),
            middlewares=[
                RAGMiddleware(
                    knowledges=[knowledge],
                    parameters=RAGMiddleware.Parameters(mode="static", top_k=3),
                )
            ],
        )
        print("\nstreamed, with emit_hint_event=True:")
        await print_events(ui_agent, Msg("user", "Which model embeds text offline?", "user"))


if __name__ == "__main__":
    asyncio.run(main())
