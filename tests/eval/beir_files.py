"""A tiny BEIR-layout dataset, laid out as the real files are (a module of its own: test
files import it by name, which `conftest` is not across directories)."""

import gzip
import json
from pathlib import Path

DOCS = [
    {
        "_id": "10",
        "title": "Photosynthesis",
        "text": "Plants turn sunlight, water and carbon dioxide into glucose and oxygen in their chloroplasts.",
        "metadata": {},
    },
    {
        "_id": "20",
        "title": "Volcanoes",
        "text": "Magma rises through the crust and erupts as lava, ash and volcanic gases.",
        "metadata": {},
    },
    {
        "_id": "30",
        "title": "Black holes",
        "text": "A black hole's gravity is so strong that not even light escapes its event horizon.",
        "metadata": {},
    },
    {
        "_id": "40",
        "title": "Sourdough bread",
        "text": "Bakers leaven sourdough with a fermented starter of flour, water, wild yeast and lactobacilli.",
        "metadata": {},
    },
    {
        "_id": "50",
        "title": "Jazz",
        "text": "Jazz musicians improvise over chord changes, swing rhythms and blue notes.",
        "metadata": {},
    },
    {
        "_id": "60",
        "title": "",
        "text": "The offside rule in football penalises attackers who stand beyond the last defender.",
        "metadata": {},
    },
]
QUERIES = [
    {"_id": "1", "text": "how do plants make sugar from light", "metadata": {}},
    {"_id": "2", "text": "lava eruptions from the earth's crust", "metadata": {}},
    {"_id": "3", "text": "light cannot escape the event horizon", "metadata": {}},
    {"_id": "4", "text": "an unjudged query that must be ignored", "metadata": {}},
]
QRELS = "query-id\tcorpus-id\tscore\r\n1\t10\t1\r\n2\t20\t2\r\n3\t30\t1\r\n3\t60\t0\r\n"


def write_beir(root: Path, *, gz: bool = True) -> Path:
    """corpus.jsonl(.gz), queries.jsonl and qrels/test.tsv (CRLF) under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    corpus = "".join(json.dumps(d) + "\n" for d in DOCS).encode()
    if gz:
        (root / "corpus.jsonl.gz").write_bytes(gzip.compress(corpus))
    else:
        (root / "corpus.jsonl").write_bytes(corpus)
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_bytes(QRELS.encode())
    return root
