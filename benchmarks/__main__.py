"""The benchmarks' runner: `python -m benchmarks [NAME [ARGS...]]`, from the repository's root.

Without NAME (or with `-h` / `--help`) it lists the cases, each with the first line of its
docstring; with NAME it runs that case's `main(ARGS)`, which parses ARGS itself (`NAME --help`
shows them). A case is a script in one of `FOLDERS`: `bench_NAME.py` under NAME, and the scripts
of `OTHERS` under the names given there. The list is read from the files without importing them,
so it is quick and shows every case even where one's dependencies are not installed.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROG = "python -m benchmarks"
FOLDERS = ("quality", "search", "ingest", "stores", "service", "files")  # what is measured
OTHERS = {  # the cases that are not bench_NAME.py: case name -> script
    "suite": "quality/run_suite.py",
    "calibrate_relevance": "quality/calibrate_relevance.py",
    "relevance_data": "quality/relevance_data.py",
    "probe_onnx_memory": "ingest/probe_onnx_memory.py",
    "alternate": "alternate.py",
}


def folders() -> list[Path]:
    """This folder and its subfolders: the cases import each other by bare module name."""
    return [HERE, *(HERE / name for name in FOLDERS)]


def import_path() -> list[Path]:
    """Where a case's bare-name imports are found: its neighbours in every folder, then the
    test helpers the cases reuse (`factories`, `service_helpers`, ...)."""
    tests = HERE.parent / "tests"
    return [*folders(), tests, tests / "service"]


def cases() -> dict[str, Path]:
    """Every case's name and script, sorted by name; a module name used twice is refused,
    since a bare-name import would find only one of the two."""
    scripts = [path for folder in folders() for path in folder.glob("*.py")]
    stems = [path.stem for path in scripts]
    twice = sorted({stem for stem in stems if stems.count(stem) > 1})
    if twice:
        raise SystemExit(f"{PROG}: scripts named alike in two folders: {', '.join(twice)}")
    found = {p.stem.removeprefix("bench_"): p for p in scripts if p.stem.startswith("bench_")}
    others = {name: HERE / script for name, script in OTHERS.items()}
    return dict(sorted({**found, **others}.items()))


def summary(script: Path) -> str:
    """The first line of `script`'s docstring, read from its source without importing it."""
    import ast  # here: a case measured in a fresh process starts through this runner

    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
    return doc.splitlines()[0] if doc else ""


def usage() -> str:
    """How to call the runner, and every case with its one-line description."""
    names = cases()
    width = max(map(len, names))
    return "\n".join(
        [
            f"usage: {PROG} NAME [ARGS...]    ({PROG} NAME --help: the case's own options)",
            "",
            "cases:",
            *(f"  {name:<{width}}  {summary(script)}" for name, script in names.items()),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    """List the cases, or run the one `argv` names with the rest of `argv`."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return
    name, rest = args[0], args[1:]
    script = cases().get(name)
    if script is None:
        print(f"{PROG}: no case named {name!r}\n\n{usage()}", file=sys.stderr)
        raise SystemExit(2)
    sys.path[:0] = [str(folder) for folder in import_path()]
    # argparse names the command after argv[0]; a case that records its command line reads it.
    sys.argv = [f"{PROG} {name}", *rest]
    importlib.import_module(script.stem).main(rest)


if __name__ == "__main__":
    main()
