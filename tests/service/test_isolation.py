"""Randomised tenant isolation: 3 tenants, 1,200 HTTP calls over every endpoint (300 in the
fast set; the full run is `heavy`).

Each tenant's files carry a secret word of its own; no response to a tenant may carry
another tenant's secret, document id or knowledge base, and every access to another
tenant's object answers 404 exactly like an id that never existed.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

import pytest
from service_helpers import client, new_key, wait_final

TENANTS = ("iso-a", "iso-b", "iso-c")
OPERATIONS = 1200
TOPICS = ("invoices", "holidays", "parking", "security badges", "travel", "laptops")


@dataclass
class TenantModel:
    secret: str
    http: object
    kbs: dict[str, dict[str, str]] = field(default_factory=dict)  # kb -> {doc id: filename}


def body(secret: str, n: int) -> bytes:
    topic = TOPICS[n % len(TOPICS)]
    return f"{secret} notes on {topic}, item {n}. The {topic} rule is owned by {secret}.".encode()


def upload(model: TenantModel, kb: str, n: int) -> None:
    response = model.http.post(
        f"/v1/knowledge-bases/{kb}/documents",
        files={"files": (f"{model.secret}-{n}.txt", body(model.secret, n), "text/plain")},
    )
    assert response.status_code == 202, response.text
    for item in response.json()["items"]:
        model.kbs[kb][item["id"]] = item["filename"]


def assert_no_leak(models: dict[str, TenantModel], actor: str, text: str, op: str) -> None:
    """`text` (a response to `actor`) names no other tenant's secret or document id."""
    for tenant, other in models.items():
        if tenant == actor:
            continue
        assert other.secret not in text, (op, actor, text[:300])
        for kb_docs in other.kbs.values():
            for doc_id in kb_docs:
                assert doc_id not in text, (op, actor)


@pytest.mark.parametrize(
    "operations",
    [pytest.param(300, id="short"), pytest.param(OPERATIONS, id="full", marks=pytest.mark.heavy)],
)
def test_randomised_cross_tenant_isolation(service, operations: int) -> None:
    rng = random.Random(20261130)
    models: dict[str, TenantModel] = {}
    for tenant in TENANTS:
        secret = f"secret{uuid.uuid4().hex[:8]}"
        models[tenant] = TenantModel(secret, client(service.url, new_key(service.settings, tenant)))
    try:
        for tenant, model in models.items():
            for kb in ("shared", f"own-{tenant}"):  # "shared": every tenant has one of that name
                assert model.http.post("/v1/knowledge-bases", json={"name": kb}).status_code == 201
                model.kbs[kb] = {}
                for n in range(3):
                    upload(model, kb, n)
        for model in models.values():
            for kb in model.kbs:
                assert {d["status"] for d in wait_final(model.http, kb)} == {"ready"}

        counts: dict[str, int] = {}
        for _ in range(operations):
            actor_name = rng.choice(TENANTS)
            actor = models[actor_name]
            victim_name = rng.choice([t for t in TENANTS if t != actor_name])
            victim = models[victim_name]
            op = rng.choice(
                [
                    "list_kbs",
                    "list_docs",
                    "get_doc",
                    "chunks",
                    "file",
                    "search",
                    "foreign_kb",
                    "foreign_doc",
                    "foreign_delete",
                    "upload",
                    "delete_own",
                ]
            )
            counts[op] = counts.get(op, 0) + 1
            own_kb = rng.choice(list(actor.kbs))
            own_docs = actor.kbs[own_kb]
            http = actor.http

            def no_leak(text: str, actor_name: str = actor_name, op: str = op) -> None:
                assert_no_leak(models, actor_name, text, op)

            if op == "list_kbs":
                response = http.get("/v1/knowledge-bases")
                names = {kb["name"] for kb in response.json()["items"]}
                assert names == set(actor.kbs), (names, set(actor.kbs))
                no_leak(response.text)
            elif op == "list_docs":
                response = http.get(f"/v1/knowledge-bases/{own_kb}/documents")
                assert {d["id"] for d in response.json()["items"]} == set(own_docs)
                no_leak(response.text)
            elif op in ("get_doc", "chunks", "file") and own_docs:
                doc_id = rng.choice(list(own_docs))
                suffix = {"get_doc": "", "chunks": "/chunks", "file": "/file"}[op]
                response = http.get(f"/v1/knowledge-bases/{own_kb}/documents/{doc_id}{suffix}")
                assert response.status_code == 200
                no_leak(response.text)
                if op == "file":
                    assert actor.secret.encode() in response.content
            elif op == "search":
                query = f"{rng.choice(TOPICS)} rule {victim.secret}"  # even naming their secret
                response = http.post(
                    f"/v1/knowledge-bases/{own_kb}/search", json={"query": query, "top_k": 10}
                )
                hits = response.json()["hits"]
                assert {h["document_id"] for h in hits} <= set(own_docs)
                assert all(actor.secret in h["text"] for h in hits)
                no_leak(response.text)
            elif op == "foreign_kb":
                kb = f"own-{victim_name}"  # exists, but for the victim only
                for method, path in (
                    ("GET", f"/v1/knowledge-bases/{kb}/documents"),
                    ("POST", f"/v1/knowledge-bases/{kb}/search"),
                    ("DELETE", f"/v1/knowledge-bases/{kb}"),
                ):
                    kwargs = {"json": {"query": "x"}} if method == "POST" else {}
                    absent = f"nope{uuid.uuid4().hex[:6]}"
                    response = http.request(method, path, **kwargs)
                    missing = http.request(method, path.replace(kb, absent), **kwargs)
                    assert response.status_code == missing.status_code == 404
                    # the same answer as for a name nobody has: existence is not revealed
                    assert response.json()["detail"].replace(kb, "?") == missing.json()[
                        "detail"
                    ].replace(absent, "?")
            elif op in ("foreign_doc", "foreign_delete"):
                victim_kb = rng.choice(list(victim.kbs))
                if not victim.kbs[victim_kb]:
                    continue
                doc_id = rng.choice(list(victim.kbs[victim_kb]))
                # through the actor's own KB of the same name, and through the victim's name
                for kb in {victim_kb if victim_kb in actor.kbs else own_kb, victim_kb}:
                    if op == "foreign_delete":
                        paths = [("DELETE", f"/v1/knowledge-bases/{kb}/documents/{doc_id}")]
                    else:
                        paths = [
                            ("GET", f"/v1/knowledge-bases/{kb}/documents/{doc_id}{suffix}")
                            for suffix in ("", "/chunks", "/file")
                        ]
                    for method, path in paths:
                        response = http.request(method, path)
                        assert response.status_code == 404, (method, path, response.text)
                        no_leak(response.text.replace(doc_id, ""))
                still = victim.http.get(f"/v1/knowledge-bases/{victim_kb}/documents/{doc_id}")
                assert still.status_code == 200  # the victim's document was not touched
            elif op == "upload":
                upload(actor, own_kb, rng.randrange(1000, 10**6))
            elif op == "delete_own" and len(own_docs) > 2:
                doc_id = rng.choice(list(own_docs))
                response = http.delete(f"/v1/knowledge-bases/{own_kb}/documents/{doc_id}")
                assert response.status_code == 204
                del own_docs[doc_id]
                assert (
                    http.get(f"/v1/knowledge-bases/{own_kb}/documents/{doc_id}").status_code == 404
                )
        assert sum(counts.values()) == operations and len(counts) == 11, counts
        for model in models.values():  # queued uploads end ready, still only in their tenant
            for kb, docs in model.kbs.items():
                final = wait_final(model.http, kb)
                assert {d["id"] for d in final} == set(docs)
                assert {d["status"] for d in final} == {"ready"}
    finally:
        for model in models.values():
            model.http.close()
