"""Per-knowledge-base indexing chosen at creation (chunk size, overlap, embedding model among
the local ones), recorded and enforced; `PATCH` of name and description; many documents'
status in one call."""

from __future__ import annotations

from service_helpers import client, wait_final

from archivist.embedding import LocalEmbeddingModel
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL

LONG = " ".join(
    f"Sentence {n} says that the Zorbian harbour opens at {n % 12 + 1} o'clock." for n in range(40)
)


def _chunks(http, kb: str, document_id: str) -> list[dict]:
    page = http.get(
        f"/v1/knowledge-bases/{kb}/documents/{document_id}/chunks", params={"limit": 500}
    )
    assert page.status_code == 200
    return list(page.json()["items"])


def test_chunk_size_and_model_are_recorded_and_enforced(service) -> None:
    with client(service.url, service.keys["acme"]) as http:
        small = http.post(
            "/v1/knowledge-bases",
            json={
                "name": "small-chunks",
                "chunk_size": 32,
                "overlap": 8,
                "embedding_model": DEFAULT_EMBEDDING_MODEL,
            },
        )
        assert small.status_code == 201, small.text
        assert small.json()["chunk_size"] == 32 and small.json()["overlap"] == 8
        assert small.json()["embedding_model"] == DEFAULT_EMBEDDING_MODEL
        plain = http.post("/v1/knowledge-bases", json={"name": "default-chunks"}).json()
        assert plain["chunk_size"] == model_input_length()
        assert plain["overlap"] == service.settings.overlap

        ids = {}
        for kb in ("small-chunks", "default-chunks"):
            upload = http.post(
                f"/v1/knowledge-bases/{kb}/documents",
                files=[("files", ("harbour.txt", LONG.encode(), "text/plain"))],
            )
            ids[kb] = upload.json()["items"][0]["id"]
            assert wait_final(http, kb)[0]["status"] == "ready"
        small_chunks = _chunks(http, "small-chunks", ids["small-chunks"])
        default_chunks = _chunks(http, "default-chunks", ids["default-chunks"])
        assert len(small_chunks) > 2 * len(default_chunks)
        # 32 tokens of this text is well under 200 characters; the default is far longer
        assert max(len(c["text"]) for c in small_chunks) < 200
        hits = http.post(
            "/v1/knowledge-bases/small-chunks/search", json={"query": "harbour", "top_k": 3}
        ).json()["hits"]
        assert len(hits) == 3

        listed = {kb["name"]: kb for kb in http.get("/v1/knowledge-bases").json()["items"]}
        assert listed["small-chunks"]["chunk_size"] == 32
        assert http.get("/v1/knowledge-bases/small-chunks").json()["overlap"] == 8

        # deleting takes its settings along; the name starts afresh
        assert http.delete("/v1/knowledge-bases/small-chunks").status_code == 204
        again = http.post("/v1/knowledge-bases", json={"name": "small-chunks"}).json()
        assert again["chunk_size"] == model_input_length()


def model_input_length() -> int:
    """The tokens the service's default embedding model reads in one input."""
    tokenizer = LocalEmbeddingModel().chunk_tokenizer()
    assert tokenizer is not None
    return tokenizer.max_tokens


def test_a_knowledge_base_shows_the_chunk_size_it_cuts_when_none_was_given(service) -> None:
    assert service.settings.chunk_size is None  # the service's default: the model's input
    with client(service.url, service.keys["initech"]) as http:
        made = {
            "plain": http.post("/v1/knowledge-bases", json={"name": "plain"}),
            "model-only": http.post(
                "/v1/knowledge-bases",
                json={"name": "model-only", "embedding_model": DEFAULT_EMBEDDING_MODEL},
            ),
            "overlap-only": http.post(
                "/v1/knowledge-bases", json={"name": "overlap-only", "overlap": 4}
            ),
        }
        listed = {kb["name"]: kb for kb in http.get("/v1/knowledge-bases").json()["items"]}
        for name, created in made.items():
            assert created.status_code == 201, created.text
            shown = [
                created.json(),
                http.get(f"/v1/knowledge-bases/{name}").json(),
                listed[name],
                http.patch(f"/v1/knowledge-bases/{name}", json={"description": "d"}).json(),
            ]
            assert [kb["chunk_size"] for kb in shown] == [model_input_length()] * 4, name
        assert listed["overlap-only"]["overlap"] == 4


def test_bad_indexing_choices_are_refused_naming_the_option(service) -> None:
    with client(service.url, service.keys["acme"]) as http:
        unknown = http.post(
            "/v1/knowledge-bases", json={"name": "m", "embedding_model": "no-such-model"}
        )
        assert unknown.status_code == 422
        assert "embedding_model" in unknown.text and DEFAULT_EMBEDDING_MODEL in unknown.text
        overlap = http.post(
            "/v1/knowledge-bases", json={"name": "o", "chunk_size": 32, "overlap": 32}
        )
        assert overlap.status_code == 422
        assert "overlap (32) must be smaller than chunk_size (32)" in overlap.json()["detail"]
        # Against the service's default chunk size (the model's input length) once it is known.
        longer = http.post("/v1/knowledge-bases", json={"name": "l", "overlap": 4000})
        assert longer.status_code == 422
        assert "overlap (4000) must be smaller than chunk_size (" in longer.json()["detail"]
        for body in ({"name": "t", "chunk_size": 2}, {"name": "n", "overlap": -1}):
            assert http.post("/v1/knowledge-bases", json=body).status_code == 422
        names = [kb["name"] for kb in http.get("/v1/knowledge-bases").json()["items"]]
        assert not {"m", "o", "l", "t", "n"} & set(names)


def test_patch_renames_and_redescribes_but_never_reindexes(service) -> None:
    with (
        client(service.url, service.keys["acme"]) as http,
        client(service.url, service.keys["globex"]) as other,
    ):
        http.post("/v1/knowledge-bases", json={"name": "drafts", "chunk_size": 64})
        http.post("/v1/knowledge-bases", json={"name": "taken"})
        upload = http.post(
            "/v1/knowledge-bases/drafts/documents",
            files=[("files", ("memo.txt", b"The memo is about the harbour.", "text/plain"))],
        )
        document_id = upload.json()["items"][0]["id"]
        wait_final(http, "drafts")

        renamed = http.patch(
            "/v1/knowledge-bases/drafts", json={"name": "final", "description": "Approved"}
        )
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["name"] == "final" and renamed.json()["chunk_size"] == 64
        assert http.get("/v1/knowledge-bases/drafts").status_code == 404
        assert http.get("/v1/knowledge-bases/final").json()["description"] == "Approved"
        hits = http.post("/v1/knowledge-bases/final/search", json={"query": "memo"}).json()
        assert hits["hits"][0]["document_id"] == document_id

        assert http.patch("/v1/knowledge-bases/final", json={"name": "taken"}).status_code == 409
        assert http.patch("/v1/knowledge-bases/final", json={"chunk_size": 9}).status_code == 422
        assert http.patch("/v1/knowledge-bases/final", json={"name": "bad/name"}).status_code == 422
        assert other.patch("/v1/knowledge-bases/final", json={"name": "mine"}).status_code == 404
        assert http.get("/v1/knowledge-bases/final").status_code == 200


def test_status_of_many_documents_in_one_call(service) -> None:
    with (
        client(service.url, service.keys["acme"]) as http,
        client(service.url, service.keys["globex"]) as other,
    ):
        http.post("/v1/knowledge-bases", json={"name": "batch"})
        upload = http.post(
            "/v1/knowledge-bases/batch/documents",
            files=[
                ("files", (f"n{n}.txt", f"note number {n}".encode(), "text/plain"))
                for n in range(3)
            ],
        )
        ids = [item["id"] for item in upload.json()["items"]]
        wait_final(http, "batch")
        answer = http.get(
            "/v1/knowledge-bases/batch/documents/status",
            params={"ids": f"{ids[0]},{ids[1]},nope"},
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert [d["id"] for d in body["items"]] == ids[:2]
        assert {d["status"] for d in body["items"]} == {"ready"}
        assert body["missing"] == ["nope"]
        repeated = http.get(
            "/v1/knowledge-bases/batch/documents/status", params=[("ids", i) for i in ids]
        ).json()
        assert [d["id"] for d in repeated["items"]] == ids
        assert http.get("/v1/knowledge-bases/batch/documents/status").status_code == 422
        too_many = ",".join(f"id{n}" for n in range(1001))
        assert (
            http.get(
                "/v1/knowledge-bases/batch/documents/status", params={"ids": too_many}
            ).status_code
            == 422
        )
        # another tenant cannot even learn that the knowledge base exists
        assert (
            other.get(
                "/v1/knowledge-bases/batch/documents/status", params={"ids": ids[0]}
            ).status_code
            == 404
        )
