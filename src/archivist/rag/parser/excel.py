"""`ExcelParser`: an `.xlsx` workbook's sheets as tables, big sheets in blocks of rows."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from openpyxl import load_workbook

from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.archive import ArchiveLimits, check_archive
from archivist.rag.parser.base import ParserBase, read_binary
from archivist.rag.parser.table import table_to_json, table_to_markdown

XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# Excel's own row limit; openpyxl fills gaps before a row numbered past it with empty rows.
MAX_ROWS = 1_048_576


def cell_text(value: Any) -> str:
    """A cell's value as text: whole floats without ".0", dates in ISO form, None as ""."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value).replace("\r\n", "\n").replace("\r", "\n").strip()


class ExcelParser(ParserBase):
    """Excel `.xlsx` workbooks → one Section per sheet, or per block of at most
    `max_rows_per_section` data rows for big sheets; every block repeats the sheet's header
    row (its first non-empty row) so each chunk is self-describing.

    Metadata: `sheet` (its name) and `rows` (first and last worksheet row numbers in the
    block). Tables are Markdown or JSON (`table_format`); with `include_sheet_names` each
    block starts with a `Sheet: NAME` line. Values are the cached results of formulas.
    The workbook is streamed (openpyxl read-only mode), so a big sheet is never held whole;
    the archive is checked against `archive_limits` (zip bombs) before it is opened.
    """

    supported_media_types: ClassVar[list[str]] = [XLSX_MEDIA_TYPE]
    archive_limits: ClassVar[ArchiveLimits] = ArchiveLimits()

    def __init__(
        self,
        include_sheet_names: bool = True,
        table_format: Literal["markdown", "json"] = "markdown",
        max_rows_per_section: int = 100,
    ) -> None:
        if table_format not in ("markdown", "json"):
            raise ValueError(f"table_format must be 'markdown' or 'json', not {table_format!r}")
        if max_rows_per_section < 1:
            raise ValueError(f"max_rows_per_section must be ≥ 1, not {max_rows_per_section!r}")
        self.include_sheet_names = include_sheet_names
        self.table_format = table_format
        self.max_rows_per_section = max_rows_per_section

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = read_binary(file, filename)
        sections = await asyncio.to_thread(lambda: list(self.iter_sections(data, filename)))
        if not sections:
            raise ValueError(f"{filename}: the workbook has no filled cells")
        return sections

    def iter_sections(self, data: bytes, filename: str) -> Iterator[Section]:
        """Yield the Sections of workbook `data` sheet by sheet (synchronous)."""
        names = check_archive(data, filename, "XLSX", self.archive_limits)
        if not any(name.startswith("xl/") for name in names):
            raise ValueError(f"{filename}: not an XLSX workbook (no xl/ part in the archive)")
        try:
            workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        except Exception as exc:  # openpyxl raises many types for broken packages
            raise ValueError(f"{filename}: corrupt XLSX: {type(exc).__name__}: {exc}") from exc
        try:
            for sheet in workbook.worksheets:
                try:
                    yield from self._sheet_sections(sheet, filename)
                except Exception as exc:
                    raise ValueError(
                        f"{filename}: sheet {sheet.title!r} is unreadable: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
        finally:
            workbook.close()

    def _sheet_sections(self, sheet: Any, filename: str) -> Iterator[Section]:
        header: list[str] | None = None
        header_row = 0
        block: list[list[str]] = []
        first = last = 0
        for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
            if number > MAX_ROWS:
                raise ValueError(f"more than Excel's {MAX_ROWS:,} rows")
            row = [cell_text(v) for v in values]
            while row and not row[-1]:
                row.pop()
            if not row:
                continue
            if header is None:
                header, header_row = row, number
                continue
            if not block:
                first = number
            block.append(row)
            last = number
            if len(block) >= self.max_rows_per_section:
                yield self._section(sheet.title, header, block, (first, last), filename)
                block = []
        if block:
            yield self._section(sheet.title, header or [], block, (first, last), filename)
        elif header is not None and last == 0:  # a sheet of one row: the header is the data
            yield self._section(sheet.title, header, [], (header_row, header_row), filename)

    def _section(
        self,
        sheet: str,
        header: list[str],
        rows: list[list[str]],
        span: tuple[int, int],
        filename: str,
    ) -> Section:
        width = max(len(header), *(len(r) for r in rows)) if rows else len(header)
        table = [header + [""] * (width - len(header)), *rows]
        body = table_to_markdown(table) if self.table_format == "markdown" else table_to_json(table)
        text = f"Sheet: {sheet}\n{body}" if self.include_sheet_names else body
        return Section(
            content=TextBlock(text=text),
            source=filename,
            metadata={"sheet": sheet, "rows": [span[0], span[1]]},
        )
