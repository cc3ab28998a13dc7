"""RAGMiddleware in both modes: construction, parameters, the agentic tool, bad templates."""

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _toy import BagOfWordsEmbedding
from agentscope.middleware import RAGMiddleware
from agentscope.rag import KnowledgeBase, QdrantStore


async def main() -> None:
    out: dict = {}
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase(
            name="pets",
            description="Facts about pets.",
            embedding_model=BagOfWordsEmbedding(),
            vector_store=store,
            collection="pets",
        )
        static_mw = RAGMiddleware(
            knowledge_bases=[kb],
            parameters=RAGMiddleware.Parameters(
                mode="static",
                top_k=3,
                emit_hint_event=False,
                hint_template="<context>{context}</context>",
            ),
        )
        agentic_mw = RAGMiddleware(
            knowledge_bases=[kb],
            parameters=RAGMiddleware.Parameters(mode="agentic", top_k=3),
        )
        defaults = RAGMiddleware.Parameters()
        out["defaults"] = [
            defaults.mode,
            defaults.top_k,
            defaults.score_threshold,
            defaults.emit_hint_event,
            defaults.persist_hint,
        ]
        out["static_tools"] = [t.name for t in await static_mw.list_tools()]
        out["agentic_tools"] = [t.name for t in await agentic_mw.list_tools()]
        rejected = []
        for template in ("no placeholder", "{context}{context}"):
            try:
                RAGMiddleware.Parameters(hint_template=template)
            except ValueError:
                rejected.append(template)
        out["rejected_templates"] = rejected
        try:
            RAGMiddleware.Parameters(top_k=0)
            out["top_k_zero"] = "accepted"
        except ValueError:
            out["top_k_zero"] = "ValueError"
    print(json.dumps(out))


asyncio.run(main())
