"""TokenChunker with and without table awareness (`table_header`), side by side in one run.

On Markdown table rows and on prose, with the default model's own tokenizer.

Run: .venv/bin/python -m benchmarks table_chunks [--kb 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

from _common import write_result

from archivist.embedding import LocalEmbeddingModel
from archivist.rag.chunker import TokenChunker

HEADER = (
    "| hostname | role | os | ram_gb | location | owner |\n| --- | --- | --- | --- | --- | --- |\n"
)
PROSE = "Retrieval systems cut documents into overlapping windows of text. " * 12 + "\n\n"


def table_text(size: int) -> str:
    rows = []
    n = 0
    while sum(len(r) for r in rows) < size:
        rows.append(
            f"| srv-{n:05d} | web | debian 12 | {8 * (1 + n % 8)} | Oslo | team-{n % 7} |\n"
        )
        n += 1
    return HEADER + "".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", type=int, default=400, help="kilobytes of each text")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    tokenizer = LocalEmbeddingModel().chunk_tokenizer()
    assert tokenizer is not None
    texts = {"table": table_text(args.kb * 1000), "prose": (PROSE * (args.kb * 1000 // len(PROSE)))}
    rows = []
    for name, text in texts.items():
        best: dict[bool, float] = {}
        counts: dict[bool, int] = {}
        for _ in range(args.rounds):  # alternate the two settings so drift hits both alike
            for aware in (True, False):
                chunker = TokenChunker(tokenizer, overlap=32, table_header=aware)
                start = time.perf_counter()
                pieces = chunker.split_text(text)
                seconds = time.perf_counter() - start
                best[aware] = min(best.get(aware, seconds), seconds)
                counts[aware] = len(pieces)
        ratio = best[True] / best[False]
        rows.append(
            {
                "text": name,
                "kb": len(text) // 1000,
                "seconds_table_header": round(best[True], 3),
                "seconds_plain": round(best[False], 3),
                "ratio": round(ratio, 2),
                "chunks_table_header": counts[True],
                "chunks_plain": counts[False],
            }
        )
        print(
            f"{name:5s} {len(text) / 1000:6.0f} kB: table_header {best[True]:.2f}s "
            f"({counts[True]} chunks), plain {best[False]:.2f}s ({counts[False]} chunks), "
            f"ratio {ratio:.2f}"
        )
    write_result("table_chunks", {"runs": rows, "rounds": args.rounds})


if __name__ == "__main__":
    main()
