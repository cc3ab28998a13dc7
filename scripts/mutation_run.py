"""Mutation testing of the core logic with mutmut's mutants: the chunker, ingestion, tenant
scope, the BM25 term rules, the ranking by relevance, the knowledge base's search planning,
and the OCR engine's choice and memory reserve.

mutmut 3 generates the mutants (needs `pip install mutmut`); each mutant then runs, one pytest
process each, against the tests that guard its module, selected by mutmut's own switch
`MUTANT_UNDER_TEST`, with PYTHONPATH ahead of the editable install. (mutmut's own runner
finds no test covering the mutants here.) Prints the score per module and every survivor.

    .venv/bin/python scripts/mutation_run.py [--ingest-stride N] [--workers 2] [--limit N]
        [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = {
    "archivist/rag/store/tenant.py": [
        "tests/knowledge/test_ingest_scope_and_fingerprint.py",
        "tests/store/test_absent_filter.py",
        "tests/reliability/test_tenant_isolation.py",
    ],
    "archivist/rag/store/qdrant/filter.py": [
        "tests/store/test_absent_filter.py",
        "tests/reliability/test_tenant_isolation.py",
    ],
    "archivist/rag/chunker/approx_token.py": [
        "tests/docs/test_chunker.py",
        "tests/docs/test_chunker_exact.py",
    ],
    "archivist/rag/knowledge/ingest.py": [
        "tests/knowledge/test_ingest_scope_and_fingerprint.py",
        "tests/cli/test_cli_scope.py",
    ],
    "archivist/rag/store/core/terms.py": [
        "tests/store/test_numbers.py",
        "tests/store/test_identifiers.py",
        "tests/knowledge/test_search_modes.py",
    ],
    "archivist/rag/store/core/ranking.py": [
        "tests/store/test_ranking.py",
        "tests/knowledge/test_relevance.py",
        "tests/knowledge/test_search_order.py",
    ],
    "archivist/rag/store/core/background.py": [
        "tests/store/test_background_weights.py",
        "tests/store/test_ranking.py",
        "tests/knowledge/test_relevance.py",
    ],
    "archivist/embedding/relevance.py": [
        "tests/embedding/test_relevance_curves.py",
        "tests/knowledge/test_relevance.py",
        "tests/store/test_capabilities.py",
    ],
    "archivist/_util/address_space.py": [
        "tests/docs/test_chunk_in_child.py",
    ],
    "archivist/rag/parser/ocr/reader.py": [
        "tests/service/test_ocr_uploads.py",
        "tests/docs/test_pdf_parser.py",
        "tests/cli/test_cli_doctor.py",
        "tests/docs/test_ocr.py",
        "tests/docs/test_chunk_in_child.py",
    ],
    "archivist/rag/knowledge/searching.py": [
        "tests/knowledge/test_search_order.py",
        "tests/knowledge/test_search_modes.py",
        "tests/knowledge/test_duplicates.py",
        "tests/knowledge/test_search_context.py",
    ],
}
CONFIG = """
[tool.mutmut]
paths_to_mutate = {paths}
tests_dir = ["tests/docs/test_chunker_exact.py"]
also_copy = ["samples", "tests", "src"]
"""


def generate(work: Path, modules: list[str]) -> Path:
    """A copy of the tree with mutmut's mutants of `modules` under `work/mutants`."""
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive.stdout, check=True)
    paths = json.dumps([f"src/{module}" for module in modules])
    with (work / "pyproject.toml").open("a") as fh:
        fh.write(CONFIG.format(paths=paths))
    mutmut = Path(sys.executable).with_name("mutmut")
    # Generates the mutants, then stops at its stats step: that is all we need of it.
    subprocess.run([str(mutmut), "run"], cwd=work, capture_output=True)
    return work / "mutants"


def mutants(
    mutated: Path, stride: int, limit: int | None, only: str | None
) -> list[tuple[str, str, list[str]]]:
    jobs = []
    for relative, tests in MODULES.items():
        if only is not None and only not in relative:
            continue
        text = (mutated / "src" / relative).read_text()
        module = relative.removesuffix(".py").replace("/", ".")
        names = re.findall(r"^\s*(?:async )?def (x\S*?__mutmut_\d+)\(", text, re.M)
        if relative.endswith("ingest.py"):
            names = names[::stride]
        names = names[:limit]
        jobs += [(module, name, tests) for name in names]
    return jobs


def run_one(mutated: Path, job: tuple[str, str, list[str]]) -> tuple[str, str, bool]:
    module, name, tests = job
    env = {
        **os.environ,
        "PYTHONPATH": str(mutated / "src"),
        "MUTANT_UNDER_TEST": f"{module}.{name}",
        "ARCHIVIST_ISOLATION_STEPS": "300",
    }
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=mutated,
            env=env,
            capture_output=True,
            timeout=240,
        )
    except subprocess.TimeoutExpired:  # the mutant hangs a test: killed (subprocess.run
        return module, name, True  # kills the child on timeout)
    return module, name, result.returncode != 0


def diff(mutated: Path, module: str, name: str) -> str:
    """The changed lines of mutant `name` against the original function."""
    text = (mutated / "src" / (module.replace(".", "/") + ".py")).read_text()

    def body(function: str) -> list[str]:
        match = re.search(
            # to the next def or the next line at the margin other than a signature's `)`
            rf"def {re.escape(function)}\(.*?(?=\n\s*(?:async )?def |\n[^\s)]|\Z)", text, re.S
        )
        return match.group(0).splitlines()[1:] if match else []

    original = body(name.rsplit("__mutmut_", 1)[0] + "__mutmut_orig")
    lines = difflib.unified_diff(original, body(name), lineterm="", n=0)
    return " | ".join(
        line.strip() for line in lines if line[:1] in "+-" and line[:3] not in ("+++", "---")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-stride", type=int, default=1, help="run every Nth ingest mutant")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="at most N mutants per module")
    parser.add_argument("--only", default=None, help="only the modules whose path holds this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="archivist-mutation-") as directory:
        chosen = [m for m in MODULES if args.only is None or args.only in m]
        mutated = generate(Path(directory), chosen)
        jobs = mutants(mutated, args.ingest_stride, args.limit, args.only)
        # The tests must pass on the tree as it is (no mutant chosen), or every mutant would
        # count as killed.
        for module in sorted({job[0] for job in jobs}):
            tests = next(job[2] for job in jobs if job[0] == module)
            _, _, failed = run_one(mutated, (module, "no_mutant", tests))
            if failed:
                sys.exit(f"the tests of {module} fail without a mutant: {' '.join(tests)}")
        print(f"{len(jobs)} mutants", flush=True)
        scores: dict[str, list[int]] = {}
        survivors = []
        with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
            for module, name, killed in pool.map(lambda j: run_one(mutated, j), jobs):
                tally = scores.setdefault(module, [0, 0])
                tally[0] += killed
                tally[1] += 1
                if not killed:
                    survivors.append(f"{module}.{name}: {diff(mutated, module, name)}")
        for module, (killed, total) in scores.items():
            print(f"{module}: {killed}/{total} killed ({100 * killed / total:.0f}%)")
        print("survivors:", *survivors, sep="\n  ")


if __name__ == "__main__":
    main()
