"""MarkdownParser and RSTParser: Sections per heading, heading paths, blocks kept whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from archivist.message import TextBlock
from archivist.rag import MarkdownParser, RSTParser

GUIDE_MD = """---
title: "The Guide"
tags: [a, b]
---
Preface text before any heading.

# Guide

Welcome to the guide.

## Install

Setext and ATX headings both count.

### Linux

Run this:

```bash
pip install archivist

# not a heading: inside a fence
archivist --help
```

- step one
- step two

  continued item

### Windows
Use the installer.

## Usage *with* `cli`

| flag | meaning |
|------|---------|
| -k   | results |

Other Title
===========

Last words.
"""


def text(section: object) -> str:
    content = section.content  # type: ignore[attr-defined]
    assert isinstance(content, TextBlock)
    return content.text


async def test_markdown_sections_follow_the_headings() -> None:
    sections = await MarkdownParser().parse(GUIDE_MD.encode(), "guide.md")
    assert [s.metadata["heading_path"] for s in sections] == [
        [],
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Install", "Linux"],
        ["Guide", "Install", "Windows"],
        ["Guide", "Usage with cli"],
        ["Other Title"],
    ]
    assert {s.metadata["title"] for s in sections} == {"The Guide"}
    assert text(sections[0]) == "Preface text before any heading."
    assert "tags:" not in "".join(text(s) for s in sections)
    assert text(sections[6]) == "# Other Title\n\nLast words."


async def test_markdown_fenced_code_and_lists_are_kept_verbatim() -> None:
    sections = await MarkdownParser().parse(GUIDE_MD, "guide.md")
    linux = text(sections[3])
    assert linux == (
        "### Linux\n\nRun this:\n\n```bash\npip install archivist\n\n"
        "# not a heading: inside a fence\narchivist --help\n```\n\n"
        "- step one\n- step two\n\n  continued item"
    )
    # a table in the canonical pipe form, padding dropped, so chunkers can cut it by rows
    assert "| flag | meaning |\n| --- | --- |\n| -k | results |" in text(sections[5])


async def test_markdown_max_heading_level_keeps_deeper_headings_inline(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE_MD, encoding="utf-16")  # BOM: decoded by detection
    sections = await MarkdownParser(max_heading_level=2).parse(str(path), "guide.md")
    assert [s.metadata["heading_path"] for s in sections] == [
        [],
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Usage with cli"],
        ["Other Title"],
    ]
    assert "### Linux" in text(sections[2]) and "### Windows" in text(sections[2])


async def test_markdown_of_headings_alone_is_one_section() -> None:
    sections = await MarkdownParser().parse(b"# One\n\n## Two\n", "heads.md")
    assert [text(s) for s in sections] == ["# One\n\n## Two"]
    assert sections[0].metadata == {"heading_path": []}


GUIDE_RST = """\
=========
The Guide
=========

Intro paragraph.

Install
=======

Install it::

    pip install archivist

    Not a title
    ===========

Linux
-----

Use pip.

Windows
-------

Use the installer.

Usage
=====

.. code-block:: python

   import archivist

----

After a transition.
"""


async def test_rst_sections_follow_titles_by_adornment_order() -> None:
    sections = await RSTParser().parse(GUIDE_RST.encode("latin-1"), "guide.rst")
    assert [s.metadata["heading_path"] for s in sections] == [
        ["The Guide"],
        ["The Guide", "Install"],
        ["The Guide", "Install", "Linux"],
        ["The Guide", "Install", "Windows"],
        ["The Guide", "Usage"],
    ]
    assert text(sections[1]) == (
        "## Install\n\nInstall it::\n\n    pip install archivist\n\n"
        "    Not a title\n    ==========="
    )
    assert text(sections[4]).endswith(
        ".. code-block:: python\n\n   import archivist\n\n----\n\nAfter a transition."
    )


async def test_rst_without_titles_is_one_section() -> None:
    sections = await RSTParser().parse("Just text.\n\nMore text.\n", "plain.rst")
    assert len(sections) == 1
    assert sections[0].metadata == {"heading_path": []}


@pytest.mark.parametrize("cls", [MarkdownParser, RSTParser])
def test_bad_arguments(cls: type) -> None:
    with pytest.raises(ValueError, match="max_heading_level"):
        cls(max_heading_level=7)
    with pytest.raises(LookupError):
        cls(encoding="no-such-codec")
