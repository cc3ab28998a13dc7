"""Archivist's benchmarks: each script is a case of one runner, `python -m benchmarks`.

The scripts are grouped by what they measure (`quality/`, `search/`, `ingest/`, `stores/`,
`service/`, `files/`); what they share sits here. Run from the repository's root:
`python -m benchmarks` lists the cases, `python -m benchmarks NAME [ARGS...]` runs one
(`NAME --help` shows its own options). Every case writes its figures to `benchmarks/results/`
through `_common.write_result`.
"""
