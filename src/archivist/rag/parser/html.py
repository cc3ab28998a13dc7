"""`HTMLParser`: a web page's main content (no menus, scripts or footers) cut at its headings."""

from __future__ import annotations

import codecs
import contextlib
import re
from typing import TYPE_CHECKING, Any, ClassVar

from archivist._util.extras import require
from archivist.errors import DocumentParseError
from archivist.rag.document import Section
from archivist.rag.parser.base import read_binary
from archivist.rag.parser.encoding import decode_text
from archivist.rag.parser.heading_text import HeadingTextParser
from archivist.rag.parser.structure import Block, sections_by_heading
from archivist.rag.parser.table import table_to_markdown
from archivist.rag.parser.text import is_existing_file

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser, LexborNode

# Never content: code, styling, embedded objects, forms and the page's own navigation.
_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "canvas",
        "iframe",
        "object",
        "embed",
        "form",
        "input",
        "button",
        "select",
        "textarea",
        "label",
        "nav",
        "aside",
        "footer",
        "dialog",
        "head",
        "link",
        "meta",
    }
)
_DROP_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "search", "complementary", "menu", "menubar"}
)
# class/id tokens of page chrome in common site generators (Sphinx, mdBook, MkDocs, ...).
_CHROME = re.compile(
    r"^(nav|navbar|navigation|menu|menubar|sidebar|side-bar|toc|breadcrumbs?|footer|"
    r"related|headerlink|skip-?link|skip-to-content|pagination|prev-next|searchbox|"
    r"search|social|share|cookie|banner|copyright|edit-?(this-)?page|"
    r"md-header|md-footer|md-sidebar|wy-nav-side|rst-versions)$"
    r"|sidebar|breadcrumb|navbar|cookie-|-nav$|^nav-",
)
# Where the main content lives, most specific first; `body` is the fallback.
_MAIN_SELECTORS = (
    "main",
    "[role=main]",
    "article",
    "div.body",
    "div.document",
    "#content",
    "#main-content",
    ".content",
)
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCK_TAGS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "blockquote",
        "figure",
        "figcaption",
        "address",
        "details",
        "summary",
        "hr",
        "center",
        "body",
    }
)
# Elements nested deeper than this are refused: the HTML5 tree builder is quadratic in depth.
MAX_NESTING = 5_000
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)[^>]*?(/?)>")
# Void elements and those the HTML5 parser closes implicitly do not nest.
_FLAT_TAGS = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
        "p",
        "li",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "option",
        "optgroup",
        "thead",
        "tbody",
        "tfoot",
        "colgroup",
        "rp",
        "rt",
    ]
)


def nesting_depth(html: str, limit: int = MAX_NESTING) -> int:
    """How deep `html`'s elements nest (a quick tag scan; stops counting past `limit`)."""
    depth = deepest = 0
    for match in _TAG.finditer(html):
        closing, name, self_closing = match.groups()
        if name.lower() in _FLAT_TAGS or self_closing:
            continue
        if closing:
            depth = max(depth - 1, 0)
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
    return deepest


_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0]+")


def _is_chrome(node: LexborNode) -> bool:
    attrs = node.attributes
    role = (attrs.get("role") or "").lower()
    if role in _DROP_ROLES or "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    tokens = (attrs.get("class") or "").lower().split() + (attrs.get("id") or "").lower().split()
    if any(_CHROME.search(token) for token in tokens):
        return True
    # Texinfo's "Previous: ..., Up: ... [Index]" bar: a header of links to the neighbours.
    return "header" in tokens and node.css_first("a[rel=prev], a[rel=next], a[rel=up]") is not None


def _plain_text(node: LexborNode) -> str:
    """The text under `node` on one line, without chrome such as Sphinx's `¶` links."""
    parts: list[str] = []
    stack = list(reversed(list(node.iter(include_text=True))))
    while stack:
        child = stack.pop()
        tag = child.tag
        if tag == "-text":
            parts.append(child.text_content or "")
        elif tag and not tag.startswith("-") and tag not in _DROP_TAGS and not _is_chrome(child):
            if tag in _BLOCK_TAGS or tag in ("br", "li", "td", "th"):
                parts.append(" ")  # blocks inside a heading or cell are words apart
            stack.extend(reversed(list(child.iter(include_text=True))))
    return _SPACES.sub(" ", "".join(parts)).strip()


class _Walker:
    """Turns an element tree into `Block`s: headings, paragraphs, list items, code, tables."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.inline: list[str] = []
        self.prefix = ""
        self.in_list = False  # the last block emitted is a list item

    def flush(self) -> None:
        text = "".join(self.inline)
        text = "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n")).strip()
        self.inline = []
        if not text:
            return
        if self.prefix and self.in_list and self.blocks and not self.blocks[-1].is_heading:
            # consecutive list items stay one block, one item per line
            self.blocks[-1] = Block(f"{self.blocks[-1].text}\n{self.prefix}{text}")
        else:
            self.blocks.append(Block(self.prefix + text))
        self.in_list = bool(self.prefix)
        self.prefix = ""

    def walk(self, root: LexborNode, drop_header: bool) -> list[Block]:
        # Iterative: documents nest deeper than Python's recursion limit allows.
        stack: list[tuple[LexborNode, bool]] = [(root, False)]  # (node, leaving it)
        lists: list[list[int] | None] = []  # open lists: an item counter for <ol>, None for <ul>
        while stack:
            node, leaving = stack.pop()
            if leaving:
                self.flush()
                if node.tag in ("ul", "ol"):
                    lists.pop()
                continue
            tag = node.tag
            if tag == "-text":
                self.inline.append(_SPACES.sub(" ", node.text_content or ""))
                continue
            if tag is None or tag.startswith("-"):  # comments, doctype
                continue
            if tag in _DROP_TAGS or (drop_header and tag == "header") or _is_chrome(node):
                continue
            if tag in _HEADINGS:
                self.flush()
                title = _plain_text(node)
                if title:
                    self.blocks.append(Block(title, _HEADINGS[tag]))
                continue
            if tag == "pre":
                self.flush()
                self.blocks.append(Block(_code_block(node)))
                continue
            if tag == "table" and not _is_layout_table(node):
                self.flush()
                rows = _table_rows(node)
                if rows:
                    self.blocks.append(Block(table_to_markdown(rows)))
                continue
            if tag == "br":
                self.inline.append("\n")
                continue
            if tag == "code":
                self.inline.append(f"`{node.text(deep=True)}`")
                continue
            if tag == "img":
                alt = (node.attributes.get("alt") or "").strip()
                if alt:
                    self.inline.append(f" [image: {alt}] ")
                continue
            children = list(node.iter(include_text=True))
            if tag == "li":
                self.flush()
                counter = lists[-1] if lists else None
                if counter is not None:
                    counter[0] += 1
                marker = f"{counter[0]}. " if counter is not None else "- "
                self.prefix = "  " * max(len(lists) - 1, 0) + marker
                stack.append((node, True))
            elif tag in ("ul", "ol"):
                self.flush()
                lists.append([0] if tag == "ol" else None)
                stack.append((node, True))
            elif tag in _BLOCK_TAGS or tag in ("table", "tr", "td", "th"):
                self.flush()
                stack.append((node, True))
            stack.extend((child, False) for child in reversed(children))
        self.flush()
        return self.blocks


def _code_block(node: LexborNode) -> str:
    parts = []
    for child in node.traverse(include_text=True):
        if child.tag == "-text":
            parts.append(child.text_content or "")
        elif child.tag == "br":  # generated listings break lines with <br>, not newlines
            parts.append("\n")
    code = "".join(parts).strip("\n")
    language = ""
    for element in (node, node.css_first("code")):
        if element is None:
            continue
        for token in (element.attributes.get("class") or "").split():
            if token.startswith(("language-", "lang-")):
                language = token.split("-", 1)[1]
                break
    return f"```{language}\n{code}\n```"


_LAYOUT_CONTENT = "pre, table, h1, h2, h3, h4, h5, h6, blockquote, hr"


def _is_layout_table(table: LexborNode) -> bool:
    """A table used to lay out a page, not to hold data: marked so (`role=presentation`),
    or holding code, headings or other tables, or a single cell. Its content is read as
    the page's own blocks instead of being squeezed into table cells."""
    if (table.attributes.get("role") or "").lower() in ("presentation", "none"):
        return True
    if any(found.mem_id != table.mem_id for found in table.css(_LAYOUT_CONTENT)):
        return True  # (`css` matches the table itself too)
    return len(table.css("td, th")) <= 1


def _table_rows(table: LexborNode) -> list[list[str]]:
    rows = []
    for tr in table.css("tr"):
        cells = [_plain_text(cell) for cell in tr.iter() if cell.tag in ("td", "th")]
        if any(cells):
            rows.append(cells)
    return rows


def _main_root(tree: LexborHTMLParser) -> tuple[LexborNode | None, bool]:
    """The element holding the page's main content, and whether it is the bare `<body>`."""
    for selector in _MAIN_SELECTORS:
        node = tree.css_first(selector)
        if node is not None and node.text(deep=True).strip():
            return node, False
    return tree.body, True


class HTMLParser(HeadingTextParser):
    """`.html` pages → the main content as Markdown-like text, one Section per heading.

    The main content is the page's `<main>` (else `[role=main]`, `<article>`, Sphinx's
    `div.body`, ..., else `<body>`), without scripts, styles, navigation, sidebars, footers
    and forms; headings, paragraphs, lists, tables (Markdown) and code (fenced) are kept.
    Each Section's metadata has `heading_path` (titles of its enclosing headings) and
    `title` (the page's `<title>`, if any). Headings deeper than `max_heading_level` stay
    inside their parent's Section.
    """

    supported_media_types: ClassVar[list[str]] = ["text/html"]

    empty_message: ClassVar[str] = "the page has no text content"

    def read(self, file: bytes | str, filename: str) -> str:
        """The page: markup given as a string, or bytes decoded by BOM, `<meta charset>`,
        `encoding`, then detection."""
        if isinstance(file, str) and not is_existing_file(file):
            return file
        return self._decode(read_binary(file, filename), filename)

    def parse_text(self, html: str, filename: str) -> list[Section]:
        """Sections of the page `html` (synchronous)."""
        require("office", "selectolax", f"reading {filename}")
        from selectolax.lexbor import LexborHTMLParser

        if "\x00" in html:
            raise DocumentParseError("the page holds NUL bytes (a binary file?)", filename=filename)
        if nesting_depth(html) > MAX_NESTING:
            raise DocumentParseError(
                f"elements nest over {MAX_NESTING:,} deep (a malformed page?)",
                filename=filename,
            )
        try:
            tree = LexborHTMLParser(html)
        except Exception as exc:  # selectolax raises for input it cannot build a tree from
            raise DocumentParseError(f"unreadable HTML: {exc}", filename=filename) from exc
        title_node = tree.css_first("head > title")  # not an <svg> <title> in the body
        title = _SPACES.sub(" ", title_node.text()).strip() if title_node is not None else ""
        root, is_body = _main_root(tree)
        if root is None:
            return []
        blocks = _Walker().walk(root, drop_header=is_body)
        metadata: dict[str, Any] = {"title": title} if title else {}
        return sections_by_heading(blocks, filename, metadata, self.max_heading_level)

    def _decode(self, data: bytes, filename: str) -> str:
        declared = _META_CHARSET.search(data[:4096])
        encoding = self.encoding
        if declared is not None:
            name = declared.group(1).decode("ascii", "replace")
            with contextlib.suppress(LookupError):
                encoding = codecs.lookup(name).name
        return decode_text(data, filename, encoding)
