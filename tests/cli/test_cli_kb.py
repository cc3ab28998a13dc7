"""Settings belong to the knowledge base, `chunk` previews what `index` stores, and `verify` /
`repair` at the command line over a store left as a killed write leaves it."""

import asyncio
import json
from pathlib import Path

import pytest
from cli_helpers import run

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
