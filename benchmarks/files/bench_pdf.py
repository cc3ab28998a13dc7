"""PDF text extraction: pypdfium2 (what PDFParser uses) vs pypdf, side by side in one run.

Run: .venv/bin/python -m benchmarks pdf [--pages 200]
"""

from __future__ import annotations

import argparse
import asyncio
import io

from _common import best_of, write_result

from archivist.rag import PDFParser
from factories import make_pdf

LINE = "The quarterly report covers revenue, costs and the outlook for the next year. 第{n}页。"


def pypdf_extract(data: bytes) -> int:
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    return sum(len(page.extract_text() or "") for page in reader.pages)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args(argv)
    data = make_pdf(["\n".join(LINE.format(n=p) for _ in range(40)) for p in range(args.pages)])
    archivist_parser = PDFParser()
    ours = best_of(lambda: asyncio.run(archivist_parser.parse(data, "bench.pdf")))
    theirs = best_of(lambda: pypdf_extract(data))
    result = {
        "pages": args.pages,
        "pypdfium2_pages_per_s": round(args.pages / ours, 1),
        "pypdf_pages_per_s": round(args.pages / theirs, 1),
        "speedup": round(theirs / ours, 2),
    }
    print(
        f"{args.pages} pages: PDFParser (pypdfium2) {result['pypdfium2_pages_per_s']} pages/s, "
        f"pypdf {result['pypdf_pages_per_s']} pages/s → {result['speedup']}x"
    )
    write_result("pdf", result)


if __name__ == "__main__":
    main()
