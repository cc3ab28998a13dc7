"""One handbook of real files, indexed twice for the framework retrievers' tests: into a local
knowledge base (conftest's `embedding_model`, Qdrant Edge in memory) and into a tenant of a
real service on 127.0.0.1, beside another tenant's secret. A test module names the fixtures
it uses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from service_helpers import client, new_key, running_service, wait_final

from archivist import SAMPLES
from archivist.embedding import EmbeddingModelBase
from archivist.rag import KnowledgeBase, QdrantStore, default_registry
from archivist.rag.chunker import chunker_for
from archivist.rag.knowledge.ingest import ingest_files
from archivist.service import ServiceSettings

LEAVE = "\n\n".join(
    [
        "# Leave",
        "Employees get 25 days of paid leave per year, booked in the leave calendar.",
        "Unused paid leave carries over to the next year, up to five days of leave.",
        "Parental leave is 16 weeks at full pay, taken within two years of the birth.",
        "Sick leave needs a doctor's note after the third day of leave.",
    ]
)
HANDBOOK = {
    "leave.md": LEAVE,
    "travel.md": "# Travel\n\nBook trains for trips under 600 km; flights need approval.\n",
    "expenses.txt": "Expenses are refunded within 30 days of the receipt; keep every receipt.\n",
    "guide.pdf": (SAMPLES / "archivist-guide.pdf").read_bytes(),
}
"""File name -> content: a long Markdown file of several chunks, two short ones, a real PDF."""
KB = "handbook"
SECRET = "Globex merger code name: Project Nightingale, signing on 3 March."
CHUNK_SIZE, OVERLAP = 40, 8
"""Small chunks, so the leave policy is several chunks of one document."""


def write_handbook(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in HANDBOOK.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture
async def handbook_kb(
    embedding_model: EmbeddingModelBase, tmp_path: Path
) -> AsyncIterator[KnowledgeBase]:
    """The handbook in a local knowledge base, Qdrant Edge in memory."""
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase(
            name=KB,
            description="HR rules of Acme",
            embedding_model=embedding_model,
            vector_store=store,
            collection=KB,
        )
        report = await ingest_files(
            kb,
            write_handbook(tmp_path / "handbook"),
            registry=default_registry(),
            chunker=chunker_for(embedding_model.chunk_tokenizer(), CHUNK_SIZE, OVERLAP),
        )
        assert not report.failed, report
        yield kb


@dataclass
class Served:
    url: str
    keys: dict[str, str]


@pytest.fixture(scope="module")
def handbook_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A running service: acme's `handbook` holds the handbook, globex's `handbook` a secret."""
    settings = ServiceSettings(home=tmp_path_factory.mktemp("frameworks-service"))
    keys = {tenant: new_key(settings, tenant) for tenant in ("acme", "globex", "initech")}
    folder = tmp_path_factory.mktemp("handbook")
    files = {
        "acme": [(p.name, p.read_bytes()) for p in write_handbook(folder)],
        "globex": [("merger.txt", SECRET.encode())],
    }
    with running_service(settings) as url:
        for tenant, uploads in files.items():
            with client(url, keys[tenant]) as http:
                made = http.post(
                    "/v1/knowledge-bases",
                    json={"name": KB, "chunk_size": CHUNK_SIZE, "overlap": OVERLAP},
                )
                assert made.status_code == 201, made.text
                sent = http.post(
                    f"/v1/knowledge-bases/{KB}/documents",
                    files=[("files", (name, body)) for name, body in uploads],
                )
                assert sent.status_code == 202, sent.text
                assert {d["status"] for d in wait_final(http, KB)} == {"ready"}
        yield Served(url, keys)
