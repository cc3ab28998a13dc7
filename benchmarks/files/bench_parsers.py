"""Parse speed of the document parsers on generated DOCX, XLSX, HTML and Markdown files.

PDF is the reference row. Each format runs in its own process so its peak RSS is its own.

Run: .venv/bin/python -m benchmarks parsers [--scale 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from _common import ROOT, best_of, peak_rss_mb, write_result

from archivist.rag import (
    ExcelParser,
    HTMLParser,
    MarkdownParser,
    ParserBase,
    PDFParser,
    WordParser,
)

SENTENCE = "The quarterly report covers revenue, costs and the outlook for the next year. "


def docx(scale: float) -> tuple[bytes, str, float, str]:
    from factories import make_docx

    chapters = int(100 * scale)
    blocks: list[tuple[str, object]] = []
    for c in range(chapters):
        blocks.append(("h1", f"Chapter {c}"))
        for s in range(3):
            blocks.append(("h2", f"Section {c}.{s}"))
            blocks += [("p", SENTENCE * 6)] * 6
            blocks.append(("table", [["k", "v", "w"]] + [[f"r{r}", str(r), "x"] for r in range(5)]))
    return make_docx(blocks), f"{chapters} chapters, {len(blocks):,} blocks", len(blocks), "blocks"


def xlsx(scale: float) -> tuple[bytes, str, float, str]:
    from factories import make_xlsx

    rows = int(50_000 * scale)
    data = [["id", "name", "amount", "region", "note"]] + [
        [i, f"customer {i}", i * 1.5, ["north", "south"][i % 2], SENTENCE[:40]] for i in range(rows)
    ]
    return make_xlsx({"Data": data}), f"{rows:,} rows x 5 columns", rows, "rows"


def html(scale: float) -> tuple[bytes, str, float, str]:
    from factories import make_docs_page

    pages = int(100 * scale)
    page = make_docs_page(chapters=12).encode()
    return page, f"a {len(page) // 1024} KiB docs page, {pages}x", pages, "pages"


def markdown(scale: float) -> tuple[bytes, str, float, str]:
    parts = []
    for c in range(int(400 * scale)):
        parts.append(f"# Chapter {c}\n\n{SENTENCE * 8}\n\n## Details {c}\n\n- one\n- two\n\n")
        parts.append(f"```python\nprint({c})\n```\n\n| a | b |\n|---|---|\n| {c} | x |\n\n")
    text = "".join(parts)
    size = len(text) / 1024 / 1024
    return text.encode(), f"{len(text) // 1024:,} KiB, {int(400 * scale)} chapters", size, "MB"


def pdf(scale: float) -> tuple[bytes, str, float, str]:
    from factories import make_pdf

    pages = int(300 * scale)
    return make_pdf(["\n".join([SENTENCE] * 40)] * pages), f"{pages} pages", pages, "pages"


Builder = Callable[[float], tuple[bytes, str, float, str]]
FORMATS: dict[str, tuple[Builder, Callable[[], ParserBase], str]] = {
    "DOCX": (docx, WordParser, "report.docx"),
    "XLSX": (xlsx, ExcelParser, "book.xlsx"),
    "HTML": (html, HTMLParser, "page.html"),
    "Markdown": (markdown, MarkdownParser, "guide.md"),
    "PDF": (pdf, PDFParser, "report.pdf"),
}


def run_one(name: str, scale: float) -> dict[str, Any]:
    build, factory, filename = FORMATS[name]
    data, what, units, unit = build(scale)
    parser = factory()
    repeat = int(100 * scale) if name == "HTML" else 1

    def parse() -> int:
        count = 0
        for _ in range(repeat):
            count = len(asyncio.run(parser.parse(data, filename)))
        return count

    sections = parse()
    seconds = best_of(parse)
    return {
        "format": name,
        "input": what,
        "bytes": len(data) * repeat,
        "sections": sections * repeat,
        "seconds": round(seconds, 3),
        "throughput": round(units / seconds, 1),
        "unit": f"{unit}/s",
        "peak_rss_mb": round(peak_rss_mb()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--one", choices=sorted(FORMATS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.scale)))
        return
    rows = []
    for name in FORMATS:
        one = ["parsers", "--one", name, "--scale", str(args.scale)]
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks", *one],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{name:9s} {row['input']:40s} {row['seconds']:7.3f} s  {row['throughput']:9.1f} "
            f"{row['unit']:9s} "
            f"{row['sections']:6d} sections  peak RSS {row['peak_rss_mb']} MiB"
        )
    write_result("parsers", {"scale": args.scale, "rows": rows})


if __name__ == "__main__":
    main()
