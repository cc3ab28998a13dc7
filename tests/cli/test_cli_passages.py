"""Passages as a person reads them at 80 columns: prose reflowed, but a table row, a list item or a
line of code keeps a line of its own (never one flattened line)."""

import io
from pathlib import Path

import docx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from archivist.cli.main import main
from archivist.cli.output import display_width, text_lines


def test_text_lines_keeps_tables_lists_and_code() -> None:
    text = (
        "## Stock\nProse that is long enough to wrap across more than one line at forty columns.\n"
        "| part | count |\n| --- | --- |\n| bolt M8 with a washer and a nut on it | 7 |\n\n"
        "```sh\ntar --strip-components=1 -xf archive.tar    # keep my spaces\n  indented\n```\n"
        "- first item\n2. second item"
    )
    lines = text_lines(text, 40, "  ")
    assert lines == [
        "  ## Stock",
        "  Prose that is long enough to wrap",
        "  across more than one line at forty",
        "  columns.",
        "  | part | count |",
        "  | --- | --- |",
        "  | bolt M8 with a washer and a nut on",
        "    it | 7 |",
        "  ```sh",
        "  tar --strip-components=1 -xf archive.t",
        "  ar    # keep my spaces",
        "    indented",
        "  ```",
        "  - first item",
        "  2. second item",
    ]


@given(st.text(alphabet="ab |-#`\n熊猫 ", max_size=300), st.integers(min_value=8, max_value=100))
def test_text_lines_fit_and_keep_every_word(text: str, width: int) -> None:
    lines = text_lines(text, width, "  ")
    assert all(display_width(line) <= width for line in lines)
    assert all(line.startswith("  ") for line in lines)
    # every character but a wrapped table row's closing bar is kept, in order
    assert "".join("".join(lines).split()).replace("|", "") == "".join(text.split()).replace(
        "|", ""
    )


def test_search_shows_a_docx_table_row_by_row(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = docx.Document()
    document.add_heading("Ferry timetable", level=1)
    table = document.add_table(rows=1, cols=3)
    for cell, name in zip(table.rows[0].cells, ["departure", "harbour", "ferry"], strict=True):
        cell.text = name
    for values in (["07:15", "Oban", "Isle of Mull"], ["09:40", "Mallaig", "Lochnevis"]):
        for cell, value in zip(table.add_row().cells, values, strict=True):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ferries.docx").write_bytes(buffer.getvalue())
    assert main(["index", str(tmp_path / "docs")]) == 0
    capsys.readouterr()
    assert main(["search", "ferry departure Mallaig", "-k", "1"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "    | departure | harbour | ferry |" in lines
    assert "    | 07:15 | Oban | Isle of Mull |" in lines
    assert "    | 09:40 | Mallaig | Lochnevis |" in lines
    assert all(display_width(line) <= 80 for line in lines if line.startswith("    "))


def test_a_lone_tilde_line_is_an_underline_not_a_code_fence() -> None:
    text = (
        "Download\n~~~~~~\nThe CLI verifies checksums of downloads when it can.\n```\nx  = 1\n```"
    )
    assert text_lines(text, 30, "") == [
        "Download ~~~~~~ The CLI",
        "verifies checksums of",
        "downloads when it can.",
        "```",
        "x  = 1",
        "```",
    ]
    # a chunk cut inside a code block: its lines stay as written
    assert text_lines("```sh\nls  -l\nrm  x", 30, "") == ["```sh", "ls  -l", "rm  x"]


def test_a_wrapped_row_does_not_leave_its_closing_bar_alone() -> None:
    row = "| tar | --strip-components=N | drop N leading components |"
    assert text_lines(row, len(row) - 1, "") == [
        "| tar | --strip-components=N | drop N leading components"
    ]
