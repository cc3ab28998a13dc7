"""`/mcp`: each tenant's knowledge bases as MCP tools, over Streamable HTTP with the API keys.

Authentication is the keys table itself (`keys.tenant_for_key`), checked by a plain ASGI
wrapper for every request, so it does not depend on FastAPI's dependency system.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from archivist.mcp.http import BearerKeyApp, caller_tenant
from archivist.mcp.server import KnowledgeSource, knowledge_server
from archivist.rag import KnowledgeBase
from archivist.service.operations import knowledge_bases
from archivist.service.state import ServiceState
from archivist.service.storage.keys import tenant_for_key

MCP_PATH = "/mcp"


class TenantKnowledgeSource(KnowledgeSource):
    """The knowledge bases of the request's tenant, as tenant-confined handles."""

    def __init__(self, state: Callable[[], ServiceState]) -> None:
        self._state = state

    async def knowledge_bases(self, request: Any) -> list[KnowledgeBase]:
        return await knowledge_bases.handles(self._state(), caller_tenant(request))


def mcp_app(state: Callable[[], ServiceState]) -> BearerKeyApp:
    """The ASGI app to serve at `MCP_PATH`; `state` gives the running service's state."""

    async def tenant_of(key: str) -> str | None:
        return await asyncio.to_thread(tenant_for_key, state().engine, key)

    return BearerKeyApp(knowledge_server(TenantKnowledgeSource(state)), tenant_of)
