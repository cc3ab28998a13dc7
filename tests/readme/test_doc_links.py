"""Every relative link and picture of README.md and docs/ lands on a file in the repository,
and every `#anchor` on a heading of its page, as GitHub and an editor show the Markdown (the
built site is checked by `mkdocs build --strict` in test_docs_site.py)."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKDOWN = MarkdownIt("commonmark").enable("table")


def _text(inline: Token) -> str:
    """The plain text of a heading's inline token (code spans without their backticks)."""
    return "".join(
        child.content for child in inline.children or [] if child.type in ("text", "code_inline")
    )


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of `page`: lower case, punctuation dropped, spaces
    to hyphens, a repeated one suffixed -1, -2, ..."""
    tokens = MARKDOWN.parse(page.read_text(encoding="utf-8"))
    found: set[str] = set()
    for opening, inline in pairwise(tokens):
        if opening.type != "heading_open":
            continue
        slug = re.sub(r"[^\w\- ]", "", _text(inline).strip().lower()).replace(" ", "-")
        candidate, repeat = slug, 0
        while candidate in found:
            repeat += 1
            candidate = f"{slug}-{repeat}"
        found.add(candidate)
    return found


def links(page: Path) -> list[str]:
    """Every link target and picture source of `page` (code blocks and code spans excluded)."""
    targets: list[str] = []
    for token in MARKDOWN.parse(page.read_text(encoding="utf-8")):
        for child in token.children or []:
            if child.type == "link_open":
                targets.append(str(child.attrGet("href")))
            elif child.type == "image":
                targets.append(str(child.attrGet("src")))
    return targets


def broken(page: Path) -> list[str]:
    """The relative links of `page` whose file or anchor is missing, each with the reason."""
    problems: list[str] = []
    for link in links(page):
        parts = urlsplit(link)
        if parts.scheme or parts.netloc:
            continue  # https://..., mailto:
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not target.exists():
            problems.append(f"{link}: no file {target}")
        elif parts.fragment and target.suffix == ".md" and parts.fragment not in anchors(target):
            problems.append(f"{link}: no heading #{parts.fragment} in {target.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_lands(page: Path) -> None:
    assert broken(page) == []


def test_the_pages_have_links_to_check() -> None:
    local = [link for page in PAGES for link in links(page) if "://" not in link]
    assert len(local) > 50
    assert "reference/cli.md" in links(ROOT / "docs" / "index.md")


def test_a_missing_file_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## `archivist index` options\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n"
        "[ok](other.md) [ok](other.md#archivist-index-options) [ok](#title) "
        "[web](https://example.com/x.md)\n\n"
        "[gone](missing.md) [no anchor](other.md#nowhere) ![gone](pictures/none.png)\n\n"
        "`[not a link](in-code.md)`\n\n```\n[nor](in-a-block.md)\n```\n"
    )
    assert [problem.split(":")[0] for problem in broken(page)] == [
        "missing.md",
        "other.md#nowhere",
        "pictures/none.png",
    ]
