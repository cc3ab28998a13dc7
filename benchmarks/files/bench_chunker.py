"""ApproxTokenChunker on a large text file: throughput must stay linear in the size.

Run: .venv/bin/python -m benchmarks chunker [--mb 50]
"""

from __future__ import annotations

import argparse
import time

from _common import peak_rss_mb, write_result

from archivist.rag import ApproxTokenChunker

PARAGRAPH = ("Retrieval systems cut documents into overlapping windows of text. " * 12) + "\n\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=50)
    args = parser.parse_args(argv)
    chunker = ApproxTokenChunker(chunk_size=512, overlap=50)
    rows = []
    for fraction in (0.1, 1.0):
        size = int(args.mb * fraction * 1_000_000)
        text = (PARAGRAPH * (size // len(PARAGRAPH) + 1))[:size]
        start = time.perf_counter()
        pieces = chunker.split_text(text)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "mb": round(size / 1e6, 1),
                "chunks": len(pieces),
                "seconds": round(seconds, 3),
                "mb_per_s": round(size / 1e6 / seconds, 1),
            }
        )
        print(
            f"{size / 1e6:6.1f} MB → {len(pieces):7d} chunks in {seconds:.2f}s "
            f"({size / 1e6 / seconds:.1f} MB/s)"
        )
    ratio = rows[1]["seconds"] / rows[0]["seconds"]
    print(
        f"time ratio for 10x the text: {ratio:.1f} (linear ≈ 10); peak RSS {peak_rss_mb():.0f} MiB"
    )
    write_result(
        "chunker",
        {"runs": rows, "time_ratio_10x": round(ratio, 2), "peak_rss_mib": round(peak_rss_mb())},
    )


if __name__ == "__main__":
    main()
