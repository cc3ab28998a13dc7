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
from archivist.cli.home import KBRecord, default_store_dir, load_kbs
from archivist.cli.session import check_kb_name, embedding_model, kb_store_dir, open_store
from archivist.embedding import EmbeddingModelBase
from archivist.mcp.server import KnowledgeSource, knowledge_server
from archivist.rag import KnowledgeBase, QdrantStore
from archivist.rag.store.tenant import tenant_scope


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

    def records(self) -> list[KBRecord]:
        """The served knowledge bases' records, by name."""
        records = load_kbs(self.store_dir)
        names = self.names if self.names is not None else sorted(records)
        return [records[name] for name in names if name in records]

    def _model(self, name: str) -> EmbeddingModelBase:
        if name not in self._models:
            self._models[name] = embedding_model(name)
        return self._models[name]

    def _handle(self, record: KBRecord, store: QdrantStore) -> KnowledgeBase:
        return KnowledgeBase(
            name=record.name,
            description=record.description,
            embedding_model=self._model(record.embedding_model),
            vector_store=store,
            collection=record.name,
            metadata_filter=tenant_scope(self.tenant),
        )

    async def knowledge_bases(self, request: Any) -> list[KnowledgeBase]:
        return [
            self._handle(record, QdrantStore(path=kb_store_dir(self.store_dir, record.name)))
            for record in self.records()
        ]

    @asynccontextmanager
    async def open(
        self, knowledge_bases: Sequence[KnowledgeBase]
    ) -> AsyncIterator[list[KnowledgeBase]]:
        # One search at a time: a store directory admits one opener, this process included.
        async with self._opening, AsyncExitStack() as stack:
            handles = []
            for kb in knowledge_bases:
                directory = kb_store_dir(self.store_dir, kb.name)
                store = await open_store(directory, kb.name, self.wait)
                stack.push_async_exit(store.__aexit__)
                handles.append(
                    KnowledgeBase(
                        name=kb.name,
                        description=kb.description,
                        embedding_model=kb.embedding_model,
                        vector_store=store,
                        collection=kb.collection,
                        metadata_filter=kb.metadata_filter,
                    )
                )
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
