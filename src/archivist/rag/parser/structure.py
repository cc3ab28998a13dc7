"""Cut a document's blocks into Sections at its headings, each with its `heading_path`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archivist.message import TextBlock
from archivist.rag.document import Section


@dataclass(frozen=True)
class Block:
    """One block of a document in reading order: a heading (with `level` 1–6) or body text."""

    text: str
    level: int | None = None  # heading level; None for body text
    alone: bool = False  # body text that is a Section of its own (a separated table)
    section: Section | None = None  # a ready Section (a picture) placed here in order

    @property
    def is_heading(self) -> bool:
        return self.level is not None


def sections_by_heading(
    blocks: list[Block],
    source: str,
    metadata: dict[str, Any] | None = None,
    max_level: int = 6,
    heading_prefix: bool = True,
) -> list[Section]:
    """One Section per heading of level ≤ `max_level` (text before the first heading is a
    Section too), with `metadata["heading_path"]` the titles of the enclosing headings.

    A section's text starts with its heading as a Markdown `#` line when `heading_prefix`
    (deeper headings stay inline as such lines). A heading with no body of its own before
    the next heading yields no Section: its title lives on in the path of what follows
    (a document of headings alone becomes one Section of them).
    Blocks marked `alone` and ready `section`s become Sections of their own, in order, with
    the current `heading_path` added to their metadata.
    """
    base = dict(metadata or {})
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    path: list[str] = []
    lines: list[str] = []
    has_body = False
    bare_headings: list[str] = []

    def flush() -> None:
        if lines and has_body:
            sections.append(
                Section(
                    content=TextBlock(text="\n\n".join(lines)),
                    source=source,
                    metadata={**base, "heading_path": list(path)},
                )
            )

    for block in blocks:
        if block.section is not None or block.alone:
            flush()
            lines, has_body = [], False
            if block.section is not None:
                extra = {**base, **block.section.metadata, "heading_path": list(path)}
                sections.append(block.section.model_copy(update={"metadata": extra}))
            elif block.text.strip():
                sections.append(
                    Section(
                        content=TextBlock(text=block.text),
                        source=source,
                        metadata={**base, "heading_path": list(path)},
                    )
                )
            continue
        text = block.text.strip("\n")
        if not text.strip():
            continue
        if block.level is not None and block.level <= max_level:
            flush()
            title = " ".join(text.split())
            bare_headings.append(f"{'#' * block.level} {title}")
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, title))
            path = [t for _, t in stack]
            lines = [f"{'#' * block.level} {title}"] if heading_prefix else []
            has_body = False
        elif block.level is not None:
            lines.append(f"{'#' * block.level} {' '.join(text.split())}")
            has_body = True
        else:
            lines.append(text)
            has_body = True
    flush()
    if not sections and bare_headings:
        sections.append(
            Section(
                content=TextBlock(text="\n\n".join(bare_headings)),
                source=source,
                metadata={**base, "heading_path": []},
            )
        )
    return sections
