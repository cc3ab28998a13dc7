"""The agent, its memory and the context its middlewares see."""

from archivist.agent.agent import Agent
from archivist.message.memory import Memory
from archivist.middleware.context import ReplyContext

__all__ = ["Agent", "Memory", "ReplyContext"]
