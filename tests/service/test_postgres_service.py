"""The service and `archivist keys` on a real PostgreSQL server (the multi-replica database)."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_helpers import client, running_service, wait_final

from archivist.cli.main import main
from archivist.service import ServiceSettings


def test_service_on_postgresql_end_to_end(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    assert main(["keys", "create", "--tenant", "pg-tenant", "--database", postgres_url]) == 0
    key = capsys.readouterr().out.strip()
    settings = ServiceSettings(home=tmp_path, database_url=postgres_url)
    assert not (tmp_path / "service" / "service.db").exists()
    with running_service(settings) as url, client(url, key) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "pg"}).status_code == 201
        response = http.post(
            "/v1/knowledge-bases/pg/documents",
            files=[
                (
                    "files",
                    ("a.txt", b"PostgreSQL shares one job queue between replicas.", "text/plain"),
                ),
                ("files", ("b.txt", b"Qdrant Edge keeps vectors on local disk.", "text/plain")),
            ],
        )
        assert response.status_code == 202
        docs = wait_final(http, "pg")
        assert [d["status"] for d in docs] == ["ready", "ready"]
        hits = http.post(
            "/v1/knowledge-bases/pg/search", json={"query": "job queue for replicas", "top_k": 1}
        ).json()["hits"]
        assert hits[0]["filename"] == "a.txt"
    assert not (tmp_path / "service" / "service.db").exists()  # everything went to PostgreSQL

    assert main(["keys", "list", "--json", "--database", postgres_url]) == 0
    listed = capsys.readouterr().out
    assert "pg-tenant" in listed


def test_chat_sessions_on_postgresql(postgres_url: str) -> None:
    from archivist.service.storage import sessions_store
    from archivist.service.storage.database import make_engine
    from archivist.service.storage.sessions_store import Citation

    engine = make_engine(postgres_url)
    try:
        session = sessions_store.create_session(engine, "pg-chat", "on postgres")
        citation = Citation(
            number=1,
            knowledge_base="kb",
            document_id="d1",
            filename="a.txt",
            chunk_index=0,
            citation="a.txt, chunk 0",
        )
        sessions_store.add_exchange(engine, session.id, "Q?", "A [1].", [citation])
        assert sessions_store.get_session(engine, "someone-else", session.id) is None
        assert [s.id for s in sessions_store.list_sessions(engine, "pg-chat")] == [session.id]
        messages = sessions_store.list_messages(engine, session.id)
        assert [(m.role, m.content) for m in messages] == [("user", "Q?"), ("assistant", "A [1].")]
        assert messages[1].citations == [citation]
        sessions_store.delete_session(engine, session.id)
        assert sessions_store.get_session(engine, "pg-chat", session.id) is None
        assert sessions_store.list_messages(engine, session.id) == []
    finally:
        engine.dispose()
