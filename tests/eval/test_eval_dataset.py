"""Loading and subsetting BEIR-layout directories."""

import json
from pathlib import Path

import pytest
from beir_files import DOCS, write_beir

from archivist.eval import CorpusDocument, load_beir, load_qrels

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "scifact"


def test_loads_gzip_corpus_crlf_qrels_and_only_judged_queries(beir_dir: Path) -> None:
    data = load_beir(beir_dir)
    assert data.name == "tiny"
    assert [d.id for d in data.corpus] == ["10", "20", "30", "40", "50", "60"]
    assert [q.id for q in data.queries] == ["1", "2", "3"]
    assert data.qrels == {"1": {"10": 1}, "2": {"20": 2}, "3": {"30": 1, "60": 0}}
    assert data.corpus[0].text_for_indexing.startswith("Photosynthesis\n\nPlants turn")
    assert data.corpus[5].text_for_indexing.startswith("The offside rule")  # no title


def test_plain_corpus_and_numeric_ids(tmp_path: Path) -> None:
    root = write_beir(tmp_path / "plain", gz=False)
    lines = [json.dumps({**d, "_id": int(d["_id"])}) for d in DOCS]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n\n")
    assert [d.id for d in load_beir(root).corpus][:2] == ["10", "20"]


def test_lf_qrels_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "q.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n\nq\td\t3\n")
    assert load_qrels(path) == {"q": {"d": 3}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("q\td\t1\n", "header"),
        ("query-id\tcorpus-id\tscore\nq\td\n", "3 tab-separated"),
        ("query-id\tcorpus-id\tscore\nq\td\tx\n", "not an integer"),
    ],
)
def test_bad_qrels_name_the_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "q.tsv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_qrels(path)


def test_missing_pieces_are_clear_errors(tmp_path: Path, beir_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_beir(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="dev.tsv"):
        load_beir(beir_dir, split="dev")
    (beir_dir / "corpus.jsonl.gz").unlink()
    with pytest.raises(FileNotFoundError, match="corpus.jsonl"):
        load_beir(beir_dir)


def test_bad_json_line_is_located(beir_dir: Path) -> None:
    (beir_dir / "queries.jsonl").write_text('{"_id": "1", "text": "x"}\n{oops\n')
    with pytest.raises(ValueError, match=r"queries.jsonl:2"):
        load_beir(beir_dir)


def test_judged_query_missing_from_queries_file(beir_dir: Path) -> None:
    (beir_dir / "queries.jsonl").write_text('{"_id": "1", "text": "x"}\n')
    with pytest.raises(ValueError, match="judged queries are not in"):
        load_beir(beir_dir)


def test_subset_keeps_judged_docs_and_is_deterministic(beir_dir: Path) -> None:
    data = load_beir(beir_dir)
    small = data.subset(queries=2, corpus=3, seed=7)
    assert [q.id for q in small.queries] == ["1", "2"]
    assert set(small.qrels) == {"1", "2"}
    ids = [d.id for d in small.corpus]
    assert {"10", "20"} <= set(ids) and len(ids) == 3
    assert ids == [d.id for d in data.subset(queries=2, corpus=3, seed=7).corpus]
    # Judged documents are never dropped, even when they exceed the requested size.
    assert {d.id for d in data.subset(queries=3, corpus=1).corpus} == {"10", "20", "30", "60"}
    assert data.subset() == data


def test_document_text_for_indexing() -> None:
    assert CorpusDocument(_id="x", title=" T ", text="").text_for_indexing == "T"
    assert CorpusDocument(_id="x", title="", text="body").text_for_indexing == "body"


@pytest.mark.skipif(not SCIFACT.is_dir(), reason="shared/datasets/scifact is absent")
def test_scifact_counts() -> None:
    data = load_beir(SCIFACT)
    assert len(data.corpus) == 5183
    assert len(data.queries) == 300
    assert sum(len(j) for j in data.qrels.values()) == 339
