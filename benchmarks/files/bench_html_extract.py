"""HTML main-content extraction on real pages: raw text vs trafilatura vs HTMLParser.

For every page, the reference is the text of its main-content element (`<main>` for
mdBook, `div[role=main]` for Sphinx themes). Each extraction is chunked like an index run
(ApproxTokenChunker, 256/32); a chunk is *boilerplate* when fewer than half of its word
trigrams occur in the page's reference. *Recall* is the share of the reference's trigrams
the extraction kept (code and tables included).

Run: .venv/bin/python -m benchmarks html_extract DIR_OR_FILE... [--limit 60]
(trafilatura comes with the `bench` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path

from _common import write_result
from selectolax.lexbor import LexborHTMLParser

from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, HTMLParser, Section

_WORDS = re.compile(r"\w+")
REFERENCE_SELECTORS = ("main", "[role=main]", "div.body", "article")


def trigrams(text: str) -> set[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def reference_text(html: str) -> str:
    tree = LexborHTMLParser(html)
    for tag in ("script", "style", "noscript", "template"):
        for node in tree.css(tag):
            node.decompose()
    for selector in REFERENCE_SELECTORS:
        node = tree.css_first(selector)
        if node is not None:
            return node.text(deep=True, separator=" ")
    raise ValueError("no main-content element")


def raw(html: str) -> str:
    return html  # what TextParser indexed before HTMLParser existed


def trafilatura_md(html: str) -> str:
    import trafilatura

    return (
        trafilatura.extract(
            html, output_format="markdown", include_tables=True, include_formatting=True
        )
        or ""
    )


def archivist(html: str) -> str:
    sections = HTMLParser().parse_text(html, "page.html")
    return "\n\n".join(s.content.text for s in sections)  # type: ignore[union-attr]


def measure(
    pages: list[tuple[str, str]], extract: Callable[[str], str], chunker: ApproxTokenChunker
) -> dict[str, float]:
    chunks = boiler = 0
    kept = total = 0
    seconds = 0.0
    for html, reference in pages:
        start = time.perf_counter()
        text = extract(html)
        seconds += time.perf_counter() - start
        ref = trigrams(reference)
        got = trigrams(text)
        kept += len(ref & got)
        total += len(ref)
        if not text.strip():
            continue
        section = Section(content=TextBlock(text=text), source="page.html")
        for chunk in asyncio.run(chunker.chunk([section])):
            grams = trigrams(chunk.content.text)  # type: ignore[union-attr]
            if not grams:
                continue
            chunks += 1
            if len(grams & ref) < len(grams) / 2:
                boiler += 1
    return {
        "chunks": chunks,
        "boilerplate_chunks": boiler,
        "boilerplate_share": round(boiler / max(chunks, 1), 4),
        "recall": round(kept / max(total, 1), 4),
        "pages_per_s": round(len(pages) / seconds, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--limit", type=int, default=60, help="pages per path")
    parser.add_argument("--name", default="html_extract")
    args = parser.parse_args(argv)
    chunker = ApproxTokenChunker(chunk_size=256, overlap=32)
    extractors: dict[str, Callable[[str], str]] = {
        "raw HTML as text": raw,
        "trafilatura (markdown)": trafilatura_md,
        "Archivist HTMLParser (selectolax + rules)": archivist,
    }
    results: dict[str, dict[str, dict[str, float]]] = {}
    for path in args.paths:
        files = sorted(path.glob("*.html")) if path.is_dir() else [path]
        pages = []
        for file in files:
            html = file.read_text(encoding="utf-8", errors="replace")
            try:
                pages.append((html, reference_text(html)))
            except ValueError:
                continue
            if len(pages) >= args.limit:
                break
        results[str(path)] = {}
        print(f"{path}: {len(pages)} pages")
        for name, extract in extractors.items():
            row = measure(pages, extract, chunker)
            results[str(path)][name] = row
            print(
                f"  {name:45s} chunks {row['chunks']:5d}  boilerplate "
                f"{row['boilerplate_share']:.1%}  recall {row['recall']:.1%}  "
                f"{row['pages_per_s']} pages/s"
            )
    write_result(args.name, {"results": results})


if __name__ == "__main__":
    main()
