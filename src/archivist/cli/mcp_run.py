"""What `archivist mcp` runs: the stdio MCP server over the CLI's knowledge bases.

Kept apart from the command's registration so `archivist --help` imports none of it."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.stdio import stdio_server

from archivist.cli.arguments import CLIError
from archivist.cli.home import default_store_dir, load_kbs
from archivist.cli.session import (
    check_kb_name,
    embedding_model,
    enter_kb_store,
    kb_store_dir,
)
from archivist.embedding import EmbeddingModelBase
from archivist.mcp.server import KnowledgeSource, knowledge_server
from archivist.rag import KnowledgeBase
from archivist.rag.knowledge import factories
from archivist.rag.knowledge.profile import KnowledgeProfile, StoreSpec


class LocalKnowledgeSource(KnowledgeSource):
    """The knowledge bases of one CLI store, re-read at every request; embedding models are
    loaded once and kept, stores are opened only while a search runs."""

    def __init__(
        self, store_dir: Path, names: Sequence[str] | None, tenant: str | None, wait: float
    ) -> None:
        self.store_dir = store_dir
        self.names = list(names) if names else None
        self.tenant = tenant
        self.wait = wait
        self._models: dict[str, EmbeddingModelBase] = {}
        self._opening = asyncio.Lock()

    def records(self) -> list[KnowledgeProfile]:
        """The served knowledge bases' profiles, by name, scoped to the served tenant."""
        records = load_kbs(self.store_dir)
        names = self.names if self.names is not None else sorted(records)
        return [
            records[name].model_copy(update={"tenant": self.tenant})
            for name in names
            if name in records
        ]

    def _model(self, name: str) -> EmbeddingModelBase:
        if name not in self._models:
            self._models[name] = embedding_model(name)
        return self._models[name]

    async def knowledge_bases(self, request: Any) -> list[KnowledgeBase]:
        # Handles for their names and descriptions; `open` binds them to an entered store.
        return [
            factories.knowledge_base(
                profile,
                factories.open_store(StoreSpec(path=kb_store_dir(self.store_dir, profile.name))),
                self._model(profile.embedding_model),
            )
            for profile in self.records()
        ]

    @asynccontextmanager
    async def open(
        self, knowledge_bases: Sequence[KnowledgeBase]
    ) -> AsyncIterator[list[KnowledgeBase]]:
        # One search at a time: a store directory admits one opener, this process included.
        profiles = {profile.name: profile for profile in self.records()}
        async with self._opening, AsyncExitStack() as stack:
            handles = []
            for kb in knowledge_bases:
                directory = kb_store_dir(self.store_dir, kb.name)
                store = await enter_kb_store(directory, kb.name, self.wait)
                stack.push_async_exit(store.__aexit__)
                profile = profiles.get(kb.name) or KnowledgeProfile(
                    name=kb.name, description=kb.description, tenant=self.tenant
                )
                handles.append(factories.knowledge_base(profile, store, kb.embedding_model))
            yield handles

    async def aclose(self) -> None:
        """Release the embedding models."""
        for model in self._models.values():
            await model.aclose()


async def run_mcp(args: argparse.Namespace) -> int:
    """Serve over stdio until the client closes the connection."""
    store_dir: Path = args.store or default_store_dir()
    known = load_kbs(store_dir)
    for name in args.kb or []:
        check_kb_name(name)
        if name not in known:
            listed = ", ".join(sorted(known)) or "none yet"
            raise CLIError(
                f"unknown knowledge base {name!r} in {store_dir} (known: {listed}); "
                f"create it with: archivist index PATH --kb {name}"
            )
    if not known:
        print(
            f"archivist: no knowledge bases in {store_dir} yet; serving anyway "
            "(create one with: archivist index PATH --kb NAME)",
            file=sys.stderr,
        )
    source = LocalKnowledgeSource(store_dir, args.kb, args.tenant, args.wait)
    server = knowledge_server(source)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await source.aclose()
    return 0
