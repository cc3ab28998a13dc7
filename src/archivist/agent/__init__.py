"""The agent, its memory and the context its middlewares see."""

from archivist.agent.agent import Agent
from archivist.agent.context import ReplyContext
from archivist.agent.memory import Memory

__all__ = ["Agent", "Memory", "ReplyContext"]
