"""`archivist mcp` as a real subprocess, driven by the official MCP SDK client over stdio."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp_helpers import SECRET, server

from archivist.cli.home import load_kbs
from archivist.cli.session import embedding_model
from archivist.middleware import RAGMiddleware, SearchKnowledgeTool
from archivist.rag import KnowledgeBase, QdrantStore
from archivist.rag.store.tenant import tenant_scope


async def library_hits(home: Path, query: str, top_k: int, tenant: str | None = None) -> list[Any]:
    """What RAGMiddleware finds in `pets` in this process, as (document, chunk, citation)."""
    model = embedding_model(load_kbs(home / "store")["pets"].embedding_model)
    try:
        async with QdrantStore(path=home / "store" / "kbs" / "pets") as store:
            kb = KnowledgeBase(
                name="pets",
                description="",
                embedding_model=model,
                vector_store=store,
                collection="pets",
                metadata_filter=tenant_scope(tenant),
            )
            middleware = RAGMiddleware([kb], RAGMiddleware.Parameters(top_k=top_k))
            retrieval = await middleware.retrieve([query])
    finally:
        await model.aclose()
    return [
        [h.result.document_id, h.result.chunk.chunk_index, h.citation()] for h in retrieval.hits
    ]


def hits_of(result: Any) -> list[Any]:
    assert not result.is_error, result.content
    return [
        [h["document_id"], h["chunk_index"], h["citation"]]
        for h in result.structured_content["hits"]
    ]


async def test_the_tools_are_ragmiddlewares_search_tool_and_a_listing(home: Path) -> None:
    async with Client(server(home, "--kb", "pets")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(tools) == ["list_knowledge_bases", "search_knowledge"]
    # The agentic tool of RAGMiddleware over the same knowledge base: same text, same arguments.
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase(
            name="pets",
            description=load_kbs(home / "store")["pets"].description,
            embedding_model=embedding_model("all-MiniLM-L6-v2-int8"),
            vector_store=store,
            collection="pets",
        )
        [expected] = await RAGMiddleware([kb]).list_tools()
    assert isinstance(expected, SearchKnowledgeTool)
    search = tools["search_knowledge"]
    assert search.description == expected.description
    assert "- pets: Files indexed into pets" in (search.description or "")
    properties = search.input_schema["properties"]
    for name, spec in expected.parameters["properties"].items():
        assert properties[name] == {**spec, **({"maxLength": 4000} if name == "query" else {})}
    assert properties["top_k"]["type"] == "integer"
    assert search.input_schema["required"] == ["query"]
    assert search.annotations is not None and search.annotations.read_only_hint


async def test_search_returns_the_librarys_hits_with_citations(home: Path) -> None:
    query = "how long does a cat sleep"
    async with Client(server(home)) as client:
        result = await client.call_tool("search_knowledge", {"query": query, "top_k": 2})
    got = hits_of(result)
    assert len(got) == 2
    assert got == await library_hits(home, query, 2)
    assert got[0][2] == "cats.md, Cats, chunk 0"
    text = result.content[0].text
    assert "[1] cats.md, Cats, chunk 0 (knowledge base: pets" in text
    assert "sixteen hours" in text


async def test_the_default_top_k_subset_and_chinese(home: Path) -> None:
    async with Client(server(home, "--kb", "pets")) as client:
        default = await client.call_tool("search_knowledge", {"query": "pets"})
        subset = await client.call_tool(
            "search_knowledge", {"query": "熊猫吃什么", "knowledge_bases": ["pets"], "top_k": 1}
        )
    assert len(default.structured_content["hits"]) == 4  # every chunk; default top_k is 5
    [panda] = subset.structured_content["hits"]
    assert panda["source"] == "panda.txt" and "竹子" in panda["text"]


async def test_bad_arguments_are_error_results_naming_the_argument(home: Path) -> None:
    cases = {
        "top_k": {"query": "cats", "top_k": 0},
        "knowledge_bases[0]": {"query": "cats", "knowledge_bases": ["nope"]},
        "query": {"query": 7},
        "is too long": {"query": "cats " * 1000},
        "'surprise'": {"query": "cats", "surprise": True},
    }
    async with Client(server(home)) as client:
        for argument, arguments in cases.items():
            result = await client.call_tool("search_knowledge", arguments)
            assert result.is_error, arguments
            assert argument in result.content[0].text, result.content[0].text
        empty = await client.call_tool("search_knowledge", {"query": "   "})
        unknown = await client.call_tool("delete_everything", {})
    assert empty.is_error and "query must be a non-empty string" in empty.content[0].text
    assert unknown.is_error and "search_knowledge" in unknown.content[0].text


async def test_a_tenant_sees_only_its_own_knowledge(home: Path) -> None:
    async with Client(server(home)) as client:
        listed = await client.call_tool("list_knowledge_bases", {})
        untenanted = await client.call_tool(
            "search_knowledge", {"query": "launch code word", "top_k": 5}
        )
    names = [kb["name"] for kb in listed.structured_content["knowledge_bases"]]
    assert {"pets", "plans"} <= set(names)  # the registry is shared; records are per tenant
    assert all("heliotrope" not in (h["text"] or "") for h in untenanted.structured_content["hits"])
    async with Client(server(home, "--tenant", "acme")) as client:
        mine = await client.call_tool(
            "search_knowledge", {"query": "launch code word", "knowledge_bases": ["plans"]}
        )
        theirs = await client.call_tool("search_knowledge", {"query": "cats", "top_k": 3})
    assert [h["text"] for h in mine.structured_content["hits"]] == [SECRET]
    assert all(h["knowledge_base"] == "plans" for h in theirs.structured_content["hits"])


async def test_the_server_leaves_stores_free_and_sees_new_knowledge_bases(
    home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "birds"
    folder.mkdir()
    (folder / "owls.txt").write_text("Owls hunt at night and turn their heads far around.")
    env = dict(os.environ, ARCHIVIST_HOME=str(home))
    async with Client(server(home)) as client:
        await client.call_tool("search_knowledge", {"query": "cats"})
        # While the server runs, indexing is not blocked (--wait 0) and the new KB is served.
        done = subprocess.run(
            [sys.executable, "-m", "archivist", "index", str(folder), "--kb=birds", "--wait=0"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        tools = {t.name: t for t in (await client.list_tools(cache_mode="refresh")).tools}
        found = await client.call_tool(
            "search_knowledge", {"query": "night hunters", "knowledge_bases": ["birds"]}
        )
    assert "- birds: " in (tools["search_knowledge"].description or "")
    assert [h["source"] for h in found.structured_content["hits"]] == ["owls.txt"]


def test_an_unknown_kb_is_a_one_line_error(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "archivist", "mcp", "--kb", "nope"],
        env=dict(os.environ, ARCHIVIST_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("archivist: error: unknown knowledge base 'nope'")
    assert "Traceback" not in done.stderr and done.stdout == ""


async def test_a_knowledge_base_held_by_another_process_is_an_error_result(home: Path) -> None:
    async with (
        QdrantStore(path=home / "store" / "kbs" / "pets"),  # as `archivist index` would hold it
        Client(server(home, "--kb", "pets", "--wait", "0")) as client,
    ):
        busy = await client.call_tool("search_knowledge", {"query": "cats"})
    assert busy.is_error
    assert "knowledge base 'pets' is in use" in busy.content[0].text
    assert "--wait" in busy.content[0].text
