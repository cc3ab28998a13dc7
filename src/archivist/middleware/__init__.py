"""Middlewares that hook an agent's reply: the base class, the reply context, RAG."""

from archivist.middleware.base import MiddlewareBase
from archivist.middleware.context import ReplyContext
from archivist.middleware.rag import RAGMiddleware, SearchKnowledgeTool
from archivist.middleware.retrieval import Hit, Retrieval

__all__ = [
    "Hit",
    "MiddlewareBase",
    "RAGMiddleware",
    "ReplyContext",
    "Retrieval",
    "SearchKnowledgeTool",
]
