"""kill -9 of the real `archivist serve` mid-indexing: after a restart every accepted upload
is ready, with the chunk counts of a clean run, and the store holds nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_harness import make_files, run_trial

pytestmark = pytest.mark.heavy


def test_kill_9_during_a_multi_file_upload_loses_and_doubles_nothing(tmp_path: Path) -> None:
    files = make_files(30)
    clean = run_trial(tmp_path / "clean", files, kill_at_ready=None)
    assert clean.problems == []
    assert len(clean.accepted) == 30

    crashed = run_trial(tmp_path / "crashed", files, kill_at_ready=3, batch=10)
    assert 3 <= crashed.killed_after_ready < 30, "the kill did not land mid-indexing"
    assert crashed.problems == []
    assert set(crashed.accepted) <= set(crashed.statuses)
    assert set(crashed.statuses.values()) == {"ready"}
    accepted_names = {
        name for name in crashed.chunks_by_filename if name in clean.chunks_by_filename
    }
    assert accepted_names == set(crashed.chunks_by_filename)
    for name, count in crashed.chunks_by_filename.items():
        assert count == clean.chunks_by_filename[name], name
    assert crashed.verify_ok
