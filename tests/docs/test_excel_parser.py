"""ExcelParser on real generated .xlsx workbooks."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
from pathlib import Path

import pytest

from archivist.message import TextBlock
from archivist.rag import ExcelParser, default_registry
from factories import make_image, make_xlsx


def text(section: object) -> str:
    content = section.content  # type: ignore[attr-defined]
    assert isinstance(content, TextBlock)
    return content.text


async def test_one_section_per_sheet_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    path.write_bytes(
        make_xlsx(
            {
                "Prices": [
                    ["Item", "Price", "Since"],
                    ["Tea", 3.0, dt.date(2024, 5, 1)],
                    ["Cake", 4.5, None],
                ],
                "Empty": [],
                "Notes": [[None, None], ["a | b", "line\nbreak"]],
            }
        )
    )
    sections = await ExcelParser().parse(str(path), "book.xlsx")
    assert [s.metadata for s in sections] == [
        {"sheet": "Prices", "rows": [2, 3]},
        {"sheet": "Notes", "rows": [2, 2]},
    ]
    assert text(sections[0]) == (
        "Sheet: Prices\n| Item | Price | Since |\n| --- | --- | --- |\n"
        "| Tea | 3 | 2024-05-01T00:00:00 |\n| Cake | 4.5 |  |"
    )
    # a one-row sheet: that row is the data, not only a header
    assert text(sections[1]) == "Sheet: Notes\n| a \\| b | line<br>break |\n| --- | --- |"


async def test_big_sheet_is_cut_into_blocks_each_with_the_header() -> None:
    rows = [["id", "name"]] + [[i, f"row {i}"] for i in range(1, 251)]
    sections = await ExcelParser(max_rows_per_section=100).parse(
        make_xlsx({"Data": rows}), "big.xlsx"
    )
    assert [s.metadata["rows"] for s in sections] == [[2, 101], [102, 201], [202, 251]]
    for section in sections:
        lines = text(section).split("\n")
        assert lines[:3] == ["Sheet: Data", "| id | name |", "| --- | --- |"]
    assert text(sections[2]).endswith("| 250 | row 250 |")
    assert sum(len(text(s).split("\n")) - 3 for s in sections) == 250


async def test_json_format_without_sheet_names() -> None:
    data = make_xlsx({"S": [["k", "v"], ["a", 1], ["b", True]], "One": [["only", "row"]]})
    sections = await ExcelParser(include_sheet_names=False, table_format="json").parse(
        data, "j.xlsx"
    )
    assert json.loads(text(sections[0])) == [{"k": "a", "v": "1"}, {"k": "b", "v": "TRUE"}]
    assert json.loads(text(sections[1])) == [{"column_1": "only", "column_2": "row"}]


async def test_bad_inputs_name_the_file() -> None:
    with pytest.raises(ValueError, match=r"plain\.xlsx.*not a zip"):
        await ExcelParser().parse(b"a,b\n1,2\n", "plain.xlsx")
    data = make_xlsx({"S": [["a"], ["b"]]})
    with pytest.raises(ValueError, match=r"cut\.xlsx"):
        await ExcelParser().parse(data[: len(data) // 2], "cut.xlsx")
    with pytest.raises(ValueError, match=r"blank\.xlsx.*no filled cells"):
        await ExcelParser().parse(make_xlsx({"S": [], "T": [[None]]}), "blank.xlsx")
    with pytest.raises(ValueError, match="max_rows_per_section"):
        ExcelParser(max_rows_per_section=0)


def test_registry_routes_xlsx_here(tmp_path: Path) -> None:
    assert isinstance(default_registry().parser_for("sheet.xlsx"), ExcelParser)
    nameless = tmp_path / "download"
    nameless.write_bytes(make_xlsx({"S": [["a"], ["b"]]}))
    assert isinstance(default_registry().parser_for_path(nameless), ExcelParser)


async def test_cell_coordinates_give_each_filled_cell_its_address() -> None:
    data = make_xlsx({"Zoo": [[None], ["Animal", "Legs"], ["Cat", 4], [None], ["Bird", None]]})
    markdown = await ExcelParser(include_cell_coordinates=True).parse(data, "zoo.xlsx")
    assert text(markdown[0]) == (
        "Sheet: Zoo\n| [A2] Animal | [B2] Legs |\n| --- | --- |\n"
        "| [A3] Cat | [B3] 4 |\n| [A5] Bird |  |"
    )
    assert markdown[0].metadata == {"sheet": "Zoo", "rows": [3, 5]}
    as_json = await ExcelParser(False, True, table_format="json").parse(data, "zoo.xlsx")
    assert [json.loads(line) for line in text(as_json[0]).splitlines()] == [
        {"A2": "Animal", "B2": "Legs"},
        {"A3": "Cat", "B3": "4"},
        {"A5": "Bird"},
    ]


async def test_agentscopes_positional_arguments_mean_the_same() -> None:
    parser = ExcelParser(False, True, True, True, "json")
    assert (parser.include_sheet_names, parser.include_cell_coordinates) == (False, True)
    assert (parser.include_image, parser.separate_sheet, parser.table_format) == (
        True,
        True,
        "json",
    )
    with pytest.raises(TypeError):
        ExcelParser(True, False, False, False, "markdown", 10)  # type: ignore[misc]


async def test_pictures_follow_their_sheet_in_anchor_order() -> None:
    red, blue = make_image(color="red"), make_image("JPEG", color="blue")
    data = make_xlsx(
        {"One": [["a", "b"], ["1", "2"]], "Two": [["c"], ["3"]]},
        pictures={"One": [("D9", blue), ("C2", red)], "Two": [("A1", red)]},
    )
    plain = await ExcelParser().parse(data, "p.xlsx")
    assert all(isinstance(s.content, TextBlock) for s in plain)
    sections = await ExcelParser(include_image=True).parse(data, "p.xlsx")
    shapes = [
        (type(s.content).__name__, s.metadata.get("sheet"), s.metadata.get("cell"))
        for s in sections
    ]
    assert shapes == [
        ("TextBlock", "One", None),
        ("DataBlock", "One", "C2"),
        ("DataBlock", "One", "D9"),
        ("TextBlock", "Two", None),
        ("DataBlock", "Two", "A1"),
    ]
    assert [s.metadata.get("media_type") for s in sections if s.metadata.get("cell")] == [
        "image/png",
        "image/jpeg",
        "image/png",
    ]


async def test_a_sheet_filling_whole_blocks_has_no_extra_header_section() -> None:
    data = make_xlsx({"S": [["h"], ["1"], ["2"], ["3"], ["4"]]})
    sections = await ExcelParser(max_rows_per_section=2).parse(data, "s.xlsx")
    assert [s.metadata["rows"] for s in sections] == [[2, 3], [4, 5]]


@pytest.mark.filterwarnings("ignore:The image .* cannot be read")
async def test_a_broken_picture_is_skipped_and_the_table_kept() -> None:
    data = make_xlsx({"One": [["a"], ["1"]]}, pictures={"One": [("B2", make_image())]})
    broken = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            target.writestr(
                item, b"not an image" if item.filename.startswith("xl/media/") else body
            )
    sections = await ExcelParser(include_image=True).parse(broken.getvalue(), "b.xlsx")
    assert [type(s.content).__name__ for s in sections] == ["TextBlock"]
