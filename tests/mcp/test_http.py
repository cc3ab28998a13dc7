"""`/mcp` on a real `archivist serve` (loopback), driven by the official MCP SDK client over
Streamable HTTP: the service's bearer keys, tenant scope, and the same hits as its search API."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

sys.path.insert(0, str(Path(__file__).parents[1] / "service"))
from service_helpers import ServeProcess, client, free_port, new_key, wait_final

from archivist.mcp import HttpMCPConfig, MCPClient
from archivist.message import ToolUseBlock
from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key, revoke_key
from archivist.tool import Toolkit

HANDBOOK = {
    "leave.md": "# Leave\n\nEmployees get 25 days of paid leave per year.\n",
    "travel.md": "# Travel\n\nBook trains for trips under 600 km; flights need approval.\n",
    "休假.txt": "员工每年有二十五天带薪年假，病假需要医生证明。\n",
}
GLOBEX_SECRET = "Globex merger code name: Project Nightingale, signing on 3 March."


@dataclass
class Served:
    url: str
    keys: dict[str, str]
    settings: ServiceSettings


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`archivist serve` with acme's `handbook` and globex's `deals` indexed."""
    home = tmp_path_factory.mktemp("mcp-service")
    settings = ServiceSettings(home=home)
    keys = {tenant: new_key(settings, tenant) for tenant in ("acme", "globex", "initech")}
    process = ServeProcess(home, free_port())
    process.start()
    try:
        for tenant, kb, description, files in (
            ("acme", "handbook", "HR rules of Acme", HANDBOOK),
            ("globex", "deals", "Globex deal notes", {"merger.txt": GLOBEX_SECRET}),
        ):
            with client(process.url, keys[tenant]) as http:
                made = http.post(
                    "/v1/knowledge-bases", json={"name": kb, "description": description}
                )
                assert made.status_code == 201, made.text
                uploads = [
                    ("files", (name, text.encode(), "text/plain")) for name, text in files.items()
                ]
                assert (
                    http.post(f"/v1/knowledge-bases/{kb}/documents", files=uploads).status_code
                    == 202
                )
                assert {d["status"] for d in wait_final(http, kb)} == {"ready"}
        yield Served(process.url, keys, settings)
    finally:
        process.stop()


@asynccontextmanager
async def mcp_client(url: str, key: str) -> AsyncIterator[Client]:
    """The SDK's client on `url/mcp`, sending `key` as a bearer token."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as session:
        yield session


def rest_hits(served: Served, key: str, kb: str, query: str, top_k: int) -> list[Any]:
    with client(served.url, key) as http:
        response = http.post(
            f"/v1/knowledge-bases/{kb}/search", json={"query": query, "top_k": top_k}
        )
    response.raise_for_status()
    return [
        [h["document_id"], h["chunk_index"], h["citation"], h["relevance"]]
        for h in response.json()["hits"]
    ]


def mcp_hits(result: Any) -> list[Any]:
    assert not result.is_error, result.content
    return [
        [h["document_id"], h["chunk_index"], h["citation"], h["relevance"]]
        for h in result.structured_content["hits"]
    ]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_no_key_a_bad_key_and_a_revoked_key_get_401(served: Served) -> None:
    engine = make_engine(served.settings.resolved_database_url)
    try:
        revoked = create_key(engine, "acme")
        assert revoke_key(engine, revoked.id)
    finally:
        engine.dispose()
    for headers in (
        {},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer ak_nothing_real"},
        {"Authorization": f"Bearer {revoked.key}"},
    ):
        response = httpx.post(f"{served.url}/mcp", json=INITIALIZE, headers={**ACCEPT, **headers})
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["detail"]
        assert "mcp-session-id" not in response.headers


async def test_a_tenant_gets_its_knowledge_bases_and_the_search_apis_hits(served: Served) -> None:
    key = served.keys["acme"]
    async with mcp_client(served.url, key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        listed = await session.call_tool("list_knowledge_bases", {})
        leave = await session.call_tool(
            "search_knowledge", {"query": "how many days of paid leave", "top_k": 2}
        )
        chinese = await session.call_tool("search_knowledge", {"query": "带薪年假", "top_k": 1})
    assert sorted(tools) == ["list_knowledge_bases", "search_knowledge"]
    assert "- handbook: HR rules of Acme" in (tools["search_knowledge"].description or "")
    assert tools["search_knowledge"].input_schema["properties"]["knowledge_bases"]["items"][
        "enum"
    ] == ["handbook"]
    assert listed.structured_content == {
        "knowledge_bases": [{"name": "handbook", "description": "HR rules of Acme"}]
    }
    got = mcp_hits(leave)
    assert got == rest_hits(served, key, "handbook", "how many days of paid leave", 2)
    assert got[0][2] == "leave.md, Leave, chunk 0"
    assert "[1] leave.md, Leave, chunk 0 (knowledge base: handbook" in leave.content[0].text
    [hit] = chinese.structured_content["hits"]
    assert hit["source"] == "休假.txt"


async def test_the_search_api_mcp_and_the_agent_tools_text_agree_on_order_and_relevance(
    served: Served,
) -> None:
    """The same question gives the same hits, in the same order, with the same relevance,
    through the search API, MCP's structured hits and the text an agent reads; relevance
    never rises down the list."""
    key = served.keys["acme"]
    for query in ("how many days of paid leave", "trains under 600 km", "带薪年假 病假"):
        rest = rest_hits(served, key, "handbook", query, 3)
        async with mcp_client(served.url, key) as session:
            result = await session.call_tool("search_knowledge", {"query": query, "top_k": 3})
        assert mcp_hits(result) == rest, query
        shown = [hit[3] for hit in rest]
        assert all(value is not None for value in shown)
        assert shown == sorted(shown, reverse=True), query
        text = result.content[0].text
        for number, (_, _, citation, relevance) in enumerate(rest, start=1):
            assert (
                f"[{number}] {citation} (knowledge base: handbook, relevance {relevance:.2f})"
                in text
            )


async def test_another_tenants_knowledge_bases_are_invisible(served: Served) -> None:
    async with mcp_client(served.url, served.keys["acme"]) as session:
        tools = (await session.list_tools()).tools
        named = await session.call_tool(
            "search_knowledge", {"query": "merger code name", "knowledge_bases": ["deals"]}
        )
        everything = await session.call_tool(
            "search_knowledge", {"query": "Globex merger code name Nightingale", "top_k": 100}
        )
    assert "deals" not in str([t.model_dump() for t in tools])
    assert named.is_error and "Nightingale" not in named.content[0].text
    assert "deals" not in str(everything.structured_content["errors"])
    assert all(h["knowledge_base"] == "handbook" for h in everything.structured_content["hits"])
    # A tenant with no knowledge base sees none, and searching says so.
    async with mcp_client(served.url, served.keys["initech"]) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        listed = await session.call_tool("list_knowledge_bases", {})
        searched = await session.call_tool("search_knowledge", {"query": "merger"})
    assert names == ["list_knowledge_bases"]
    assert listed.structured_content == {"knowledge_bases": []}
    assert searched.is_error and "no knowledge bases" in searched.content[0].text


def test_a_session_answers_only_the_key_that_opened_it(served: Served) -> None:
    def post(key: str, body: dict[str, Any], session: str | None = None) -> httpx.Response:
        headers = {**ACCEPT, "Authorization": f"Bearer {key}"}
        if session:
            headers["mcp-session-id"] = session
        return httpx.post(f"{served.url}/mcp", json=body, headers=headers, timeout=30)

    opened = post(served.keys["acme"], INITIALIZE)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    assert post(served.keys["globex"], listing, session).status_code == 404
    assert post(served.keys["acme"], listing, session).status_code == 200


async def test_archivists_stateless_http_client_mounts_the_services_tools(served: Served) -> None:
    config = HttpMCPConfig(
        url=f"{served.url}/mcp", headers={"Authorization": f"Bearer {served.keys['acme']}"}
    )
    client = MCPClient(name="acme", is_stateful=False, mcp_config=config)
    toolkit = Toolkit(tools=await client.list_tools())
    assert toolkit.names == ["mcp__acme__search_knowledge", "mcp__acme__list_knowledge_bases"]
    result = await toolkit.call(
        ToolUseBlock(
            id="c1",
            name="mcp__acme__search_knowledge",
            input={"query": "train or flight", "top_k": 1},
        )
    )
    assert not result.is_error, result.output
    assert "[1] travel.md, Travel, chunk 0" in str(result.output)
    intruder = MCPClient(
        name="x",
        is_stateful=False,
        mcp_config=HttpMCPConfig(url=config.url, headers={"Authorization": "Bearer ak_forged"}),
    )
    with pytest.raises(MCPError):  # the SDK's report of the 401
        await intruder.list_tools()


def test_a_huge_body_is_refused_before_it_is_read(served: Served) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "search_knowledge", "arguments": {"query": "x" * (5 * 1024 * 1024)}},
    }
    headers = {**ACCEPT, "Authorization": f"Bearer {served.keys['acme']}"}
    response = httpx.post(f"{served.url}/mcp", json=call, headers=headers, timeout=60)
    assert response.status_code == 413
    assert httpx.post(f"{served.url}/mcp", json=call, headers=ACCEPT).status_code == 401


def test_the_transports_own_errors_are_problem_details_keeping_the_json_rpc_error(
    served: Served,
) -> None:
    auth = {"Authorization": f"Bearer {served.keys['acme']}"}
    url = f"{served.url}/mcp"
    refused = {
        # no session given to a request that needs one, a session that does not exist, a
        # client that accepts no JSON, a body that is not JSON, a body not declared JSON
        "no session": httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={**ACCEPT, **auth},
        ),
        "unknown session": httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={**ACCEPT, **auth, "mcp-session-id": "0" * 32},
        ),
        "not acceptable": httpx.post(url, json=INITIALIZE, headers={**auth, "Accept": "text/html"}),
        "not json": httpx.post(
            url, content=b"{nope", headers={**ACCEPT, **auth, "Content-Type": "application/json"}
        ),
        "wrong method": httpx.put(url, json=INITIALIZE, headers={**ACCEPT, **auth}),
        "wrong type": httpx.post(
            url, content=b"{}", headers={**ACCEPT, **auth, "Content-Type": "text/plain"}
        ),
    }
    for case, response in refused.items():
        assert response.status_code >= 400, case
        assert response.headers["content-type"] == "application/problem+json", case
        problem = response.json()
        assert problem["status"] == response.status_code, case
        assert problem["title"] and problem["detail"], case
        if case != "wrong type":  # refused before the JSON-RPC layer, in words
            assert problem["jsonrpc"] == "2.0" and problem["error"]["message"], case
        assert response.headers["x-content-type-options"] == "nosniff", case
    assert refused["wrong type"].json()["detail"] == "Invalid Content-Type header"
