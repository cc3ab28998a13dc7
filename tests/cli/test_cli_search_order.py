"""`archivist search` shows what the library's `KnowledgeBase.search` returns: the same hits in
the same order with the same relevance, relevance never rising down the list; numbers find
their note."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from archivist.cli.main import main
from archivist.cli.session import open_session
from archivist.testing.corpora import load_corpus

QUESTIONS = [
    "port 8731",
    "which warehouse ships crates of item 221",
    "what did release 2.0.11 fix",
    "the staging gateway",
]


def _cli_hits(
    capsys: pytest.CaptureFixture[str], query: str, *argv: str
) -> list[tuple[str, int, float]]:
    assert main(["search", query, "--json", "-k", "6", *argv]) == 0
    return [
        (hit["document_id"], hit["chunk_index"], hit["relevance"])
        for hit in json.loads(capsys.readouterr().out)
    ]


def test_cli_and_library_list_the_same_hits_by_relevance(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in load_corpus("numbers").documents.items():
        (notes / f"{name}.txt").write_text(text)
    assert main(["index", str(notes), "--json"]) == 0
    capsys.readouterr()
    shown = {query: _cli_hits(capsys, query) for query in QUESTIONS}

    async def library() -> dict[str, list[tuple[str, int, float]]]:
        args = argparse.Namespace(kb="default", store=None, tenant=None, wait=5.0)
        async with open_session(args, create=False) as session:
            return {
                query: [
                    (h.document_id, h.chunk.chunk_index, round(h.relevance or 0, 4))
                    for h in await session.kb.search(query, top_k=6)
                ]
                for query in QUESTIONS
            }

    assert shown == asyncio.run(library())
    for query, hits in shown.items():
        relevance = [value for _, _, value in hits]
        assert relevance == sorted(relevance, reverse=True), query
    assert main(["search", "port 8731", "--json", "-k", "1"]) == 0
    [first] = json.loads(capsys.readouterr().out)
    assert Path(first["source"]).stem == "port-8731"
