"""`ExcelParser`: an `.xlsx` workbook's sheets as tables, big sheets in blocks of rows."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
from collections.abc import Iterator
from typing import Any, ClassVar

from archivist._util.extras import require
from archivist.errors import DocumentParseError
from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.archive import ArchiveLimits, check_archive
from archivist.rag.parser.base import BinaryParser
from archivist.rag.parser.image import embedded_image_sections
from archivist.rag.parser.ocr import Ocr
from archivist.rag.parser.ocr.reader import as_ocr
from archivist.rag.parser.table import (
    TableFormat,
    check_table_format,
    render_table,
    table_to_markdown,
)
from archivist.validation import check_positive_int

logger = logging.getLogger(__name__)

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


class ExcelParser(BinaryParser):
    """Excel `.xlsx` workbooks → one Section per sheet, or per block of at most
    `max_rows_per_section` data rows for big sheets; every block repeats the sheet's header
    row (its first non-empty row) so each chunk is self-describing.

    Metadata: `sheet` (its name) and `rows` (first and last worksheet row numbers in the
    block). Tables are Markdown or JSON (`table_format`); with `include_sheet_names` each
    block starts with a `Sheet: NAME` line; with `include_cell_coordinates` every filled cell
    carries its address (`[B7] 42` in Markdown, `{"B7": "42"}` rows in JSON). With
    `include_image`, pictures on a sheet follow its table as DataBlock Sections (metadata
    `sheet`, `cell` of their top-left anchor, `media_type`), with `ocr` each followed by the
    text on it, as `ImageParser` reads image files. Sheets are always separate
    Sections; `separate_sheet` is accepted for AgentScope's signature and changes nothing.
    Values are the cached results of formulas.
    The workbook is streamed (openpyxl read-only mode), so a big sheet is never held whole;
    the archive is checked against `archive_limits` (zip bombs) before it is opened.
    """

    supported_media_types: ClassVar[list[str]] = [XLSX_MEDIA_TYPE]
    nothing_found: ClassVar[str] = "the workbook has no filled cells"
    archive_limits: ClassVar[ArchiveLimits] = ArchiveLimits()

    def __init__(
        self,
        include_sheet_names: bool = True,
        include_cell_coordinates: bool = False,
        include_image: bool = False,
        separate_sheet: bool = False,
        table_format: TableFormat = "markdown",
        *,
        max_rows_per_section: int = 100,
        ocr: Ocr | str | None = None,
    ) -> None:
        check_table_format(table_format)
        self.ocr = as_ocr(ocr)
        check_positive_int(max_rows_per_section, "max_rows_per_section")
        self.include_sheet_names = include_sheet_names
        self.include_cell_coordinates = include_cell_coordinates
        self.include_image = include_image
        self.separate_sheet = separate_sheet
        self.table_format = table_format
        self.max_rows_per_section = max_rows_per_section

    def iter_sections(self, data: bytes, filename: str) -> Iterator[Section]:
        """Yield the Sections of workbook `data` sheet by sheet (synchronous)."""
        require("office", "openpyxl", f"reading {filename}")
        from openpyxl import load_workbook

        names = check_archive(data, filename, "XLSX", self.archive_limits)
        if not any(name.startswith("xl/") for name in names):
            raise DocumentParseError(
                "not an XLSX workbook (no xl/ part in the archive)", filename=filename
            )
        try:
            workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        except Exception as exc:  # openpyxl raises many types for broken packages
            raise DocumentParseError(
                f"corrupt XLSX: {type(exc).__name__}: {exc}", filename=filename
            ) from exc
        try:
            pictures = _pictures_by_sheet(data, filename, self.ocr) if self.include_image else {}
            for sheet in workbook.worksheets:
                try:
                    yield from self._sheet_sections(sheet, filename)
                except Exception as exc:
                    raise DocumentParseError(
                        f"sheet {sheet.title!r} is unreadable: {type(exc).__name__}: {exc}",
                        filename=filename,
                    ) from exc
                yield from pictures.get(sheet.title, [])
        finally:
            workbook.close()

    def _sheet_sections(self, sheet: Any, filename: str) -> Iterator[Section]:
        header: list[str] | None = None
        header_row = 0
        block: list[list[str]] = []
        numbers: list[int] = []
        data_rows = 0
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
            block.append(row)
            numbers.append(number)
            data_rows += 1
            if len(block) >= self.max_rows_per_section:
                yield self._section(sheet.title, header, header_row, block, numbers, filename)
                block, numbers = [], []
        if block:
            yield self._section(sheet.title, header or [], header_row, block, numbers, filename)
        elif header is not None and not data_rows:
            # a sheet of one row: the header is the data
            yield self._section(sheet.title, header, header_row, [], [], filename)

    def _section(
        self,
        sheet: str,
        header: list[str],
        header_row: int,
        rows: list[list[str]],
        numbers: list[int],
        filename: str,
    ) -> Section:
        width = max(len(header), *(len(r) for r in rows)) if rows else len(header)
        table = [header + [""] * (width - len(header)), *rows]
        if self.include_cell_coordinates:
            body = _with_coordinates(table, [header_row, *numbers], self.table_format)
        else:
            body = render_table(table, self.table_format)
        text = f"Sheet: {sheet}\n{body}" if self.include_sheet_names else body
        span = (numbers[0], numbers[-1]) if numbers else (header_row, header_row)
        return Section(
            content=TextBlock(text=text),
            source=filename,
            metadata={"sheet": sheet, "rows": [span[0], span[1]]},
        )


def _with_coordinates(table: list[list[str]], numbers: list[int], table_format: TableFormat) -> str:
    """`table` with each filled cell's address: `[B7] 42` cells in Markdown, or one JSON
    object per row keyed by address."""
    from openpyxl.utils import get_column_letter

    if table_format == "json":
        return "\n".join(
            json.dumps(
                {f"{get_column_letter(c + 1)}{n}": v for c, v in enumerate(row) if v},
                ensure_ascii=False,
            )
            for row, n in zip(table, numbers, strict=True)
        )
    addressed = [
        [f"[{get_column_letter(c + 1)}{n}] {v}" if v else "" for c, v in enumerate(row)]
        for row, n in zip(table, numbers, strict=True)
    ]
    return table_to_markdown(addressed)


def _pictures_by_sheet(data: bytes, filename: str, ocr: Ocr | None) -> dict[str, list[Section]]:
    """The pictures of each sheet as DataBlock Sections, top to bottom. openpyxl reads them
    only when it loads the whole workbook, so this loads it a second time (opt-in)."""
    from openpyxl import load_workbook
    from openpyxl.utils import get_column_letter

    try:
        workbook = load_workbook(io.BytesIO(data), data_only=True)
    except Exception as exc:  # the cells were readable; only the pictures are lost
        logger.warning("%s: pictures skipped: %s: %s", filename, type(exc).__name__, exc)
        return {}
    found: dict[str, list[Section]] = {}
    try:
        for sheet in workbook.worksheets:
            anchored: list[tuple[int, int, Section]] = []
            for index, picture in enumerate(getattr(sheet, "_images", [])):
                start = getattr(getattr(picture, "anchor", None), "_from", None)
                row, column = (start.row, start.col) if start is not None else (0, 0)
                cell = f"{get_column_letter(column + 1)}{row + 1}"
                name = f"{sheet.title}!{cell}"
                metadata = {"sheet": sheet.title, "cell": cell}
                try:
                    blob = picture._data()
                except Exception as exc:  # a picture part missing from the archive
                    logger.warning("%s: picture %s skipped: %s", filename, name, exc)
                    continue
                for section in embedded_image_sections(blob, filename, name, metadata, ocr):
                    anchored.append((row, index, section))
            found[sheet.title] = [
                section for _, _, section in sorted(anchored, key=lambda item: item[:2])
            ]
    finally:
        workbook.close()
    return found
