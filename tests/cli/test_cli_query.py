"""`archivist search` takes any query: as an argument, with -q/--query (also one that starts with
'-', such as a command-line flag), or after `--`; a flag given bare gets a hint, not a riddle."""

import json
from pathlib import Path

import pytest
from cli_helpers import run

from archivist.cli.search_command import attach_query_values


def test_queries_that_start_with_a_dash(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tar.txt").write_text(
        "tar options\n\n--strip-components=NUMBER strips NUMBER leading components from file "
        "names on extraction.\n"
    )
    (docs / "birds.txt").write_text("Herons wade in shallow water and eat fish.\n")
    assert run(capsys, "index", str(docs))[0] == 0

    def top(*argv: str) -> dict[str, object]:
        code, out, err = run(capsys, "search", "-k", "1", "--json", *argv)
        assert code == 0, err
        [hit] = json.loads(out)
        return dict(hit)

    assert top("-q", "--strip-components")["source"] == "tar.txt"
    assert top("--query", "--strip-components", "--mode", "sparse")["source"] == "tar.txt"
    assert top("--query=--strip-components")["source"] == "tar.txt"
    assert top("--mode", "sparse", "--", "--strip-components")["source"] == "tar.txt"
    assert top("-q", "herons")["source"] == "birds.txt"
    assert top("herons")["source"] == "birds.txt"

    code, _, err = run(capsys, "search", "--strip-components")
    assert code == 2
    assert "unrecognized arguments: --strip-components" in err
    assert "-q/--query" in err and "archivist search -- --flag" in err

    code, _, err = run(capsys, "search")
    assert code == 2 and "search needs a query" in err and "-q/--query" in err
    assert 'e.g. archivist search "how tenants work"' in err
    code, _, err = run(capsys, "search", "herons", "-q", "owls")
    assert code == 2 and "not both" in err
    code, _, err = run(capsys, "search", "-q", "  ")
    assert code == 2 and "must not be empty" in err
    code, _, err = run(capsys, "search", "-q")
    assert code == 2 and "expected one argument" in err


def test_help_documents_the_query_option_and_the_double_dash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "search", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "-q TEXT, --query TEXT" in text
    assert "archivist search -q --strip-components" in text
    assert "archivist search -k 3 -- --strip-components" in text


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["search", "-q", "--flag"], ["search", "--query=--flag"]),
        (
            ["--debug", "search", "-k", "2", "--query", "-x"],
            ["--debug", "search", "-k", "2", "--query=-x"],
        ),
        (["search", "--", "-q", "-x"], ["search", "--", "-q", "-x"]),
        (["search", "-q"], ["search", "-q"]),
        (["index", "-q", "--x"], ["index", "-q", "--x"]),
        (["ask", "search", "-q", "-x"], ["ask", "search", "-q", "-x"]),
    ],
)
def test_attach_query_values_touches_only_search_options(
    argv: list[str], expected: list[str]
) -> None:
    assert attach_query_values(argv) == expected
