"""The benchmarks' runner: `python -m benchmarks [NAME [ARGS...]]`, from the repository's root.

Without NAME (or with `-h` / `--help`) it lists the cases, each with the first line of its
docstring; with NAME it runs that case's `main(ARGS)`, which parses ARGS itself (`NAME --help`
shows them). A case is a script of this folder: `bench_NAME.py` under NAME, and the scripts of
`OTHERS` under the names given there. The list is read from the files without importing them,
so it is quick and shows every case even where one's dependencies are not installed.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROG = "python -m benchmarks"
OTHERS = {  # the cases that are not bench_NAME.py: case name -> module
    "suite": "run_suite",
    "calibrate_relevance": "calibrate_relevance",
    "relevance_data": "relevance_data",
    "probe_onnx_memory": "probe_onnx_memory",
    "alternate": "alternate",
}


def cases() -> dict[str, str]:
    """Every case's name and module, sorted by name."""
    found = {path.stem.removeprefix("bench_"): path.stem for path in HERE.glob("bench_*.py")}
    return dict(sorted({**found, **OTHERS}.items()))


def summary(module: str) -> str:
    """The first line of `module`'s docstring, read from its source without importing it."""
    doc = ast.get_docstring(ast.parse((HERE / f"{module}.py").read_text(encoding="utf-8")))
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
            *(f"  {name:<{width}}  {summary(module)}" for name, module in names.items()),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    """List the cases, or run the one `argv` names with the rest of `argv`."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return
    name, rest = args[0], args[1:]
    module = cases().get(name)
    if module is None:
        print(f"{PROG}: no case named {name!r}\n\n{usage()}", file=sys.stderr)
        raise SystemExit(2)
    # The cases import their neighbours (`_common`, ...) by bare name, as when run as scripts.
    sys.path.insert(0, str(HERE))
    # argparse names the command after argv[0]; a case that records its command line reads it.
    sys.argv = [f"{PROG} {name}", *rest]
    importlib.import_module(module).main(rest)


if __name__ == "__main__":
    main()
