"""Archivist's benchmarks: each script here is a case of one runner, `python -m benchmarks`.

Run from the repository's root: `python -m benchmarks` lists the cases, `python -m benchmarks
NAME [ARGS...]` runs one (`NAME --help` shows its own options). Each script still runs on its
own too (`python benchmarks/bench_store.py`), and writes its figures to `benchmarks/results/`
through `_common.write_result`.
"""
