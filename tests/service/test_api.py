"""The HTTP API end to end: real server, real default embedding model, real files."""

from __future__ import annotations

from pathlib import Path

import httpx
from service_helpers import client, wait_final

from archivist.embedding import LocalEmbeddingModel
from archivist.service.indexing.uploads import safe_filename
from factories import make_pdf

TENANT_TEXT = (
    "Tenants are kept apart: every knowledge base has its own Qdrant collection and every "
    "handle filters by tenant id."
)


def test_health_and_generated_docs(service) -> None:
    with client(service.url) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        spec = http.get("/openapi.json").json()
        assert http.get("/docs").status_code == 200
    paths = spec["paths"]
    for path in (
        "/v1/knowledge-bases",
        "/v1/knowledge-bases/{name}",
        "/v1/knowledge-bases/{name}/documents",
        "/v1/knowledge-bases/{name}/documents/{document_id}",
        "/v1/knowledge-bases/{name}/documents/{document_id}/chunks",
        "/v1/knowledge-bases/{name}/documents/{document_id}/file",
        "/v1/knowledge-bases/{name}/search",
    ):
        assert path in paths, path
    upload = paths["/v1/knowledge-bases/{name}/documents"]["post"]
    assert {"202", "401", "404", "413", "415", "422"} <= set(upload["responses"])
    assert "401" in paths["/v1/knowledge-bases"]["get"]["responses"]
    assert "HTTPBearer" in spec["components"]["securitySchemes"]


def test_v1_needs_a_valid_key(service) -> None:
    with client(service.url) as http:
        for method, path in (
            ("GET", "/v1/knowledge-bases"),
            ("POST", "/v1/knowledge-bases"),
            ("GET", "/v1/knowledge-bases/x/documents"),
            ("POST", "/v1/knowledge-bases/x/search"),
        ):
            assert http.request(method, path).status_code == 401
            bad = http.request(method, path, headers={"Authorization": "Bearer ak_nope_nope"})
            assert bad.status_code == 401
            assert "invalid" in bad.json()["detail"]
        basic = http.get("/v1/knowledge-bases", headers={"Authorization": "Basic eDp5"})
        assert basic.status_code == 401


def document_counts(http: httpx.Client, kb: str) -> list[int]:
    """The knowledge base's document count as its GET, the list and a PATCH show it."""
    listed = {item["name"]: item for item in http.get("/v1/knowledge-bases").json()["items"]}
    one = http.get(f"/v1/knowledge-bases/{kb}").json()
    patched = http.patch(f"/v1/knowledge-bases/{kb}", json={"description": "counted"}).json()
    return [one["document_count"], listed[kb]["document_count"], patched["document_count"]]


def test_knowledge_base_lifecycle(service) -> None:
    with client(service.url, service.keys["acme"]) as http:
        created = http.post("/v1/knowledge-bases", json={"name": "life", "description": "d"})
        assert created.status_code == 201
        assert created.json()["name"] == "life"
        again = http.post("/v1/knowledge-bases", json={"name": "life", "description": "x"})
        assert again.status_code == 409
        names = [kb["name"] for kb in http.get("/v1/knowledge-bases").json()["items"]]
        assert "life" in names
        assert http.delete("/v1/knowledge-bases/life").status_code == 204
        assert http.delete("/v1/knowledge-bases/life").status_code == 404
        assert http.get("/v1/knowledge-bases/life/documents").status_code == 404
        names = [kb["name"] for kb in http.get("/v1/knowledge-bases").json()["items"]]
        assert "life" not in names


def test_upload_index_search_chunks_file_delete(service, tmp_path: Path) -> None:
    pdf = make_pdf(["Invoices are archived for seven years.", "Refunds take five days."])
    with client(service.url, service.keys["acme"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "main"}).status_code == 201
        response = http.post(
            "/v1/knowledge-bases/main/documents",
            files=[
                ("files", ("tenants.txt", TENANT_TEXT.encode(), "text/plain")),
                ("files", ("policy.pdf", pdf, "application/pdf")),
            ],
        )
        assert response.status_code == 202, response.text
        items = response.json()["items"]
        assert [i["filename"] for i in items] == ["tenants.txt", "policy.pdf"]
        assert {i["status"] for i in items} == {"queued"}
        ids = [i["id"] for i in items]
        docs = wait_final(http, "main", ids)
        assert {d["status"] for d in docs} == {"ready"}, docs
        by_name = {d["filename"]: d for d in docs}
        assert by_name["policy.pdf"]["chunk_count"] >= 1
        assert by_name["policy.pdf"]["media_type"] == "application/pdf"

        one = http.get(f"/v1/knowledge-bases/main/documents/{ids[1]}").json()
        assert one["status"] == "ready" and one["error"] is None
        assert document_counts(http, "main") == [2, 2, 2]

        hits = http.post(
            "/v1/knowledge-bases/main/search",
            json={"query": "how long do refunds take", "top_k": 3},
        ).json()["hits"]
        assert hits[0]["filename"] == "policy.pdf"
        assert "Refunds" in hits[0]["text"]
        assert hits[0]["citation"].startswith("policy.pdf, page 2")
        assert "path" not in hits[0]["metadata"] and "tenant_id" not in hits[0]["metadata"]

        page = http.get(
            f"/v1/knowledge-bases/main/documents/{ids[1]}/chunks", params={"limit": 1}
        ).json()
        assert page["total"] == by_name["policy.pdf"]["chunk_count"]
        assert [c["chunk_index"] for c in page["items"]] == [0]
        rest = http.get(
            f"/v1/knowledge-bases/main/documents/{ids[1]}/chunks", params={"offset": 1}
        ).json()["items"]
        assert [c["chunk_index"] for c in rest] == list(range(1, page["total"]))

        raw = http.get(f"/v1/knowledge-bases/main/documents/{ids[1]}/file")
        assert raw.status_code == 200 and raw.content == pdf
        assert raw.headers["content-type"] == "application/pdf"
        assert "policy.pdf" in raw.headers["content-disposition"]

        stored = service.settings.files_dir
        assert any(p.name == "policy.pdf" for p in stored.rglob("*"))
        assert http.delete(f"/v1/knowledge-bases/main/documents/{ids[1]}").status_code == 204
        assert http.get(f"/v1/knowledge-bases/main/documents/{ids[1]}").status_code == 404
        assert http.get(f"/v1/knowledge-bases/main/documents/{ids[1]}/file").status_code == 404
        assert not any(p.name == "policy.pdf" for p in stored.rglob("*"))
        assert document_counts(http, "main") == [1, 1, 1]
        hits = http.post(
            "/v1/knowledge-bases/main/search", json={"query": "refunds", "top_k": 5}
        ).json()["hits"]
        assert {h["document_id"] for h in hits} == {ids[0]}


def test_unparseable_file_ends_failed_with_a_reason(service) -> None:
    with client(service.url, service.keys["globex"]) as http:
        http.post("/v1/knowledge-bases", json={"name": "broken"})
        response = http.post(
            "/v1/knowledge-bases/broken/documents",
            files={"files": ("bad.pdf", b"%PDF-1.4 this is not really a pdf", "application/pdf")},
        )
        assert response.status_code == 202
        (doc,) = wait_final(http, "broken")
        assert doc["status"] == "failed"
        assert doc["error"] and "bad.pdf" in doc["error"]
        assert str(service.settings.home) not in doc["error"]


def test_safe_filename_neutralises_paths_nul_and_length() -> None:
    assert safe_filename("../../x") == "x"
    assert safe_filename("..\\..\\evil.txt") == "evil.txt"
    assert safe_filename("a\x00b.txt") == "a_b.txt"
    assert safe_filename("") == "upload"
    assert safe_filename("..") == "upload"
    long = safe_filename("n" * 4096 + ".txt")
    assert long.endswith(".txt") and len(long.encode()) <= 200
    assert "/" not in safe_filename("/etc/passwd") and safe_filename("/etc/passwd") == "passwd"


def _many_files(prefix: str, count: int) -> list[tuple[str, tuple[str, bytes, str]]]:
    text = " ".join(
        f"{prefix} paragraph about orchards and ledgers number {n}." for n in range(200)
    )
    return [
        ("files", (f"{prefix}-{n}.txt", f"{n} {text}".encode(), "text/plain")) for n in range(count)
    ]


def test_deleting_documents_and_kbs_while_they_index(service) -> None:
    with client(service.url, service.keys["globex"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "busy"}).status_code == 201
        items = http.post(
            "/v1/knowledge-bases/busy/documents", files=_many_files("busy", 6)
        ).json()["items"]
        for item in items[:3]:  # queued or indexing right now: both must go cleanly
            assert (
                http.delete(f"/v1/knowledge-bases/busy/documents/{item['id']}").status_code == 204
            )
        kept = wait_final(http, "busy")
        assert {d["id"] for d in kept} == {i["id"] for i in items[3:]}
        hits = http.post(
            "/v1/knowledge-bases/busy/search", json={"query": "orchards and ledgers", "top_k": 50}
        ).json()["hits"]
        assert {h["document_id"] for h in hits} <= {i["id"] for i in items[3:]}

        assert http.post("/v1/knowledge-bases", json={"name": "doomed"}).status_code == 201
        response = http.post("/v1/knowledge-bases/doomed/documents", files=_many_files("doomed", 6))
        assert response.status_code == 202
        assert http.delete("/v1/knowledge-bases/doomed").status_code == 204
        assert http.post("/v1/knowledge-bases", json={"name": "doomed"}).status_code == 201
        assert http.get("/v1/knowledge-bases/doomed/documents").json() == {"items": []}
        hits = http.post(
            "/v1/knowledge-bases/doomed/search", json={"query": "orchards", "top_k": 5}
        ).json()["hits"]
        assert hits == []
        assert http.get("/healthz").status_code == 200


def test_search_filters_and_per_document_cap(service) -> None:
    with client(service.url, service.keys["acme"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "steer"}).status_code == 201
        long_text = "\n\n".join(f"Orchard ledger entry {n}: apples counted." for n in range(400))
        files = [
            ("files", ("ledger.md", long_text.encode(), "text/markdown")),
            ("files", ("orchard.txt", b"The orchard ledger lists apple trees.", "text/plain")),
            ("files", ("cider.txt", b"Cider is pressed from orchard apples.", "text/plain")),
        ]
        items = http.post("/v1/knowledge-bases/steer/documents", files=files).json()["items"]
        docs = wait_final(http, "steer", [i["id"] for i in items])
        assert {d["status"] for d in docs} == {"ready"}, docs
        search = "/v1/knowledge-bases/steer/search"
        body = {"query": "orchard ledger apples", "top_k": 3}
        capped = http.post(search, json={**body, "max_per_document": 1}).json()["hits"]
        assert sorted(h["filename"] for h in capped) == ["cider.txt", "ledger.md", "orchard.txt"]
        typed = http.post(search, json={**body, "type": ["txt"]}).json()["hits"]
        assert {h["filename"] for h in typed} == {"cider.txt", "orchard.txt"}
        named = http.post(search, json={**body, "path": ["cid*"]}).json()["hits"]
        assert {h["filename"] for h in named} == {"cider.txt"}
        recent = http.post(search, json={**body, "since": "2000-01-01"}).json()["hits"]
        assert len(recent) == 3
        future = http.post(search, json={**body, "since": "2999-01-01"}).json()["hits"]
        assert future == []
        wide = http.post(search, json={**body, "type": ["md"], "context": 1}).json()["hits"]
        assert wide and all(h["context"] is not None for h in wide)
        first = wide[0]["context"]
        assert first["first_chunk"] <= wide[0]["chunk_index"] <= first["last_chunk"]
        assert first["last_chunk"] > first["first_chunk"]
        assert wide[0]["text"] in first["text"] or first["text"].count("Orchard ledger entry")
        assert http.post(search, json=body).json()["hits"][0]["context"] is None
        for bad in (
            {"path": ["/srv/*"]},
            {"where": {"tenant_id": "globex"}},
            {"where": {"path": "x"}},
            {"since": "soon"},
            {"type": ["*.md"]},
            {"where": {"page": {"gte": "many"}}},
            {"max_per_document": 0},
            {"context": 11},
            {"context": -1},
        ):
            response = http.post(search, json={**body, **bad})
            assert response.status_code == 422, (bad, response.text)


def test_the_same_file_uploaded_twice_is_one_hit_naming_both(service) -> None:
    with client(service.url, service.keys["acme"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "twice"}).status_code == 201
        text = b"Quinces ripen late in autumn and turn golden before they are picked."
        files = [
            ("files", ("quince.txt", text, "text/plain")),
            # other bytes (a trailing newline), the same passage: searches collapse them
            ("files", ("copy-of-quince.txt", text + b"\n", "text/plain")),
            ("files", ("pears.txt", b"Pears are picked unripe and ripen indoors.", "text/plain")),
        ]
        items = http.post("/v1/knowledge-bases/twice/documents", files=files).json()["items"]
        docs = wait_final(http, "twice", [i["id"] for i in items])
        assert {d["status"] for d in docs} == {"ready"}, docs
        search = "/v1/knowledge-bases/twice/search"
        body = {"query": "When do quinces ripen?", "top_k": 2}
        hits = http.post(search, json=body).json()["hits"]
        assert [h["filename"] for h in hits][1:] == ["pears.txt"]
        [copy] = hits[0]["also_in"]
        assert {hits[0]["filename"], copy["filename"]} == {"quince.txt", "copy-of-quince.txt"}
        assert copy["citation"] == f"{copy['filename']}, chunk 0"
        every = http.post(search, json={**body, "collapse_duplicates": False}).json()["hits"]
        assert sorted(h["filename"] for h in every) == ["copy-of-quince.txt", "quince.txt"]
        assert all(h["also_in"] == [] for h in every)


def test_the_same_content_uploaded_again_is_answered_with_its_document(service) -> None:
    with client(service.url, service.keys["acme"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "once"}).status_code == 201
        url = "/v1/knowledge-bases/once/documents"
        text = b"Medlars are eaten only once they have bletted on the shelf."
        first = http.post(url, files=[("files", ("medlar.txt", text))])
        assert first.status_code == 202
        [made] = first.json()["items"]
        assert made["existing"] is False
        # Again, under another name and beside a new file: the content is the document.
        again = http.post(
            url, files=[("files", ("renamed.txt", text)), ("files", ("new.txt", text + b"!"))]
        )
        assert again.status_code == 202
        same, new = again.json()["items"]
        assert same == {**made, "status": same["status"], "existing": True}
        assert same["filename"] == "medlar.txt" and new["existing"] is False
        # Twice in one request: one document, answered for both files.
        pair = http.post(
            url,
            files=[
                ("files", ("a.txt", b"Sloes after frost.")),
                ("files", ("b.txt", b"Sloes after frost.")),
            ],
        ).json()["items"]
        assert pair[0]["id"] == pair[1]["id"] and pair[1]["filename"] == "a.txt"
        listed = http.get(url).json()["items"]
        assert sorted(d["filename"] for d in listed) == ["a.txt", "medlar.txt", "new.txt"]
        stored = [p for p in service.settings.files_dir.rglob("*") if p.is_file()]
        assert [p.read_bytes() for p in stored].count(text) == 1  # not kept twice


def test_an_idempotency_key_answers_a_retry_as_the_first_request(service) -> None:
    with client(service.url, service.keys["acme"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "retried"}).status_code == 201
        url = "/v1/knowledge-bases/retried/documents"
        files = [("files", ("rowan.txt", b"Rowan berries are bitter raw."))]
        key = {"Idempotency-Key": "upload-7f3a"}
        first = http.post(url, files=files, headers=key)
        retry = http.post(url, files=files, headers=key)
        assert first.status_code == retry.status_code == 202
        assert [i["id"] for i in retry.json()["items"]] == [i["id"] for i in first.json()["items"]]
        assert retry.json()["items"][0]["existing"] is True
        other = http.post(
            url, files=[("files", ("elder.txt", b"Elderflowers in June."))], headers=key
        )
        assert other.status_code == 422, other.text
        assert "Idempotency-Key" in other.json()["detail"]
        assert [d["filename"] for d in http.get(url).json()["items"]] == ["rowan.txt"]
        bad = http.post(url, files=files, headers={"Idempotency-Key": "tab\there"})
        assert bad.status_code == 422 and "Idempotency-Key" in bad.text
    with client(service.url, service.keys["globex"]) as http:  # keys are per tenant
        assert http.post("/v1/knowledge-bases", json={"name": "retried"}).status_code == 201
        theirs = http.post(
            "/v1/knowledge-bases/retried/documents",
            files=[("files", ("elder.txt", b"Elderflowers in June."))],
            headers={"Idempotency-Key": "upload-7f3a"},
        )
        assert theirs.status_code == 202 and theirs.json()["items"][0]["existing"] is False


def test_served_chunks_fit_the_model_s_input(service) -> None:
    """The service chunks with its model's own tokenizer, as the CLI does: no chunk is
    longer than the model reads (hex ids are a few characters per model token, so a guess of
    four characters per token would make chunks the model truncates)."""
    tokenizer = LocalEmbeddingModel().chunk_tokenizer()
    assert tokenizer is not None
    words = [f"{n * 2654435761 % 2**48:012x}" for n in range(600)]
    text = " ".join(words).encode()
    with client(service.url, service.keys["acme"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "hexes"}).status_code == 201
        [item] = http.post(
            "/v1/knowledge-bases/hexes/documents", files={"files": ("ids.txt", text)}
        ).json()["items"]
        [document] = wait_final(http, "hexes", [item["id"]])
        assert document["status"] == "ready", document
        chunks = http.get(
            f"/v1/knowledge-bases/hexes/documents/{item['id']}/chunks", params={"limit": 500}
        ).json()["items"]
    assert len(chunks) == document["chunk_count"] > 1
    assert max(len(tokenizer.spans(c["text"])) for c in chunks) <= tokenizer.max_tokens
    assert words[0] in chunks[0]["text"] and words[-1] in chunks[-1]["text"]
