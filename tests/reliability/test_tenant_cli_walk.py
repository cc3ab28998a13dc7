"""Tenant scope at the command line: a seeded random walk of `index`, `index --prune`, `rm` and
`ls` runs in three scopes (no tenant, "a", "b") over the same few files, checked after every
step against a model of what each scope must hold. The files are shared on disk, so every
scope constantly indexes the very paths the others hold.

`ARCHIVIST_CLI_WALK_STEPS` changes the walk's length (default 40).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from pathlib import Path

import pytest

from archivist.cli.main import main
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.tenant import tenant_scope

STEPS = int(os.environ.get("ARCHIVIST_CLI_WALK_STEPS", "40"))
TENANTS: list[str | None] = [None, "a", "b"]
NAMES = ["one.txt", "two.md", "three.txt"]


def cli(capsys: pytest.CaptureFixture[str], *argv: str, tenant: str | None) -> tuple[int, str]:
    scope = ["--tenant", tenant] if tenant is not None else []
    code = main([*argv, "--kb", "walk", *scope])
    out, err = capsys.readouterr()
    assert code in (0, 5), err  # 5: a document that is not there (rm)
    return code, out


async def stored_texts(store_dir: Path, tenant: str | None) -> dict[str, str]:
    """path -> the text stored for it in `tenant`'s scope, read through the library."""
    from archivist.cli.session import kb_store_dir
    from archivist.rag.knowledge.ingest import PATH_KEY

    found: dict[str, str] = {}
    async with QdrantStore(path=kb_store_dir(store_dir, "walk")) as store:
        for summary in await store.list_documents("walk", tenant_scope(tenant)):
            chunks = await store.list_chunks(
                "walk", summary.document_id, limit=100, metadata_filter=tenant_scope(tenant)
            )
            text = " ".join(getattr(c.content, "text", "") for c in chunks)
            found[str(summary.metadata[PATH_KEY])] = text
    return found


@pytest.mark.heavy
def test_cli_random_walk_keeps_every_scope_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    rng = random.Random(13)
    folder = tmp_path / "files"
    folder.mkdir()
    model: dict[str | None, dict[str, str]] = {t: {} for t in TENANTS}
    counter = 0
    ops: dict[str, int] = {}
    for step in range(STEPS):
        tenant = rng.choice(TENANTS)
        path = folder / rng.choice(NAMES)
        op = rng.choices(["index", "prune", "rm"], weights=[5, 2, 2])[0]
        ops[op] = ops.get(op, 0) + 1
        where = f"step {step}: {op} {path.name} in scope {tenant!r}"
        if op == "index":
            counter += 1
            text = f"walk text {counter} for {path.name}"
            path.write_text(text + "\n")
            code, _ = cli(capsys, "index", str(path), tenant=tenant)
            assert code == 0, where
            model[tenant][str(path)] = text
        elif op == "prune":
            if path.exists() and rng.random() < 0.5:
                path.unlink()
            if not any(folder.iterdir()):
                path.write_text("refill\n")
            code, _ = cli(capsys, "index", str(folder), "--prune", tenant=tenant)
            assert code == 0, where
            model[tenant] = {str(p): p.read_text().strip() for p in sorted(folder.iterdir())}
        else:
            code, _ = cli(capsys, "rm", str(path), tenant=tenant)
            assert code == (0 if str(path) in model[tenant] else 5), where
            model[tenant].pop(str(path), None)
        for each in {tenant, rng.choice(TENANTS)}:
            _, out = cli(capsys, "ls", "--json", tenant=each)
            listed = sorted(str(d["path"]) for d in json.loads(out))
            assert listed == sorted(model[each]), (where, each)
    for each in TENANTS:
        texts = asyncio.run(stored_texts(tmp_path / "home" / "store", each))
        assert texts == model[each], each
    assert min(ops.values()) >= STEPS // 10, ops
