"""Crash benchmark for `archivist serve`: >= 10 trials of kill -9 during a 100-file upload.

Each trial starts a fresh service, uploads the files in batches of 10, SIGKILLs the process
at a random moment (half the trials by the number of documents already ready, half by
time, so some kills land inside an upload request), restarts it and waits. A trial passes
when every accepted upload is `ready`, the chunk counts equal a clean run's, the store
holds exactly the table's documents and `verify()` is clean.

    .venv/bin/python -m benchmarks service_crash --trials 10 --files 100
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from _common import write_result
from crash_harness import make_files, run_trial


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--paragraphs", type=int, default=4, help="~ chunks per file")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    files = make_files(args.files, paragraphs=args.paragraphs)
    rows = []
    with tempfile.TemporaryDirectory(prefix="archivist-crash-") as root:
        started = time.monotonic()
        clean = run_trial(Path(root) / "clean", files, kill_at_ready=None)
        assert not clean.problems, clean.problems
        print(
            f"clean run: {len(clean.accepted)} files, {sum(clean.chunks_by_filename.values())} "
            f"chunks in {time.monotonic() - started:.1f} s",
            flush=True,
        )
        for trial in range(args.trials):
            by_time = trial % 2 == 1
            kill_at = None if by_time else rng.randint(1, args.files // 2)
            delay = rng.uniform(0.05, 1.5) if by_time else None
            started = time.monotonic()
            result = run_trial(
                Path(root) / f"trial-{trial}", files, kill_at_ready=kill_at, kill_delay=delay
            )
            wrong = {
                name: (count, clean.chunks_by_filename.get(name))
                for name, count in result.chunks_by_filename.items()
                if count != clean.chunks_by_filename.get(name)
            }
            problems = result.problems + ([f"chunk counts differ: {wrong}"] if wrong else [])
            row = {
                "trial": trial,
                "kill": f"after {delay:.2f} s" if by_time else f"at {kill_at} ready",
                "ready_at_kill": result.killed_after_ready,
                "accepted": len(result.accepted),
                "documents": len(result.statuses),
                "ready": sum(s == "ready" for s in result.statuses.values()),
                "chunks": sum(result.chunks_by_filename.values()),
                "verify_ok": result.verify_ok,
                "seconds": round(time.monotonic() - started, 1),
                "problems": problems,
            }
            rows.append(row)
            print(row, flush=True)
    passed = sum(not r["problems"] for r in rows)
    write_result(
        "service_crash",
        {
            "trials": rows,
            "files": args.files,
            "passed": passed,
            "clean_chunks": sum(clean.chunks_by_filename.values()),
        },
    )
    print(f"{passed}/{len(rows)} trials clean")
    if passed < len(rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
