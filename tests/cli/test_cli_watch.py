"""`archivist index PATH --watch`: the real CLI in a subprocess (real file-system events, a
real SIGINT), the store checked in-process between its passes, which it does not hold."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_helpers import run

PASS = re.compile(r"^\d\d:\d\d:\d\d pass (\d+): (.+) \([\d.]+s\)$")
TIMEOUT = 120.0
"""Seconds a pass may take to show up (a burst of 1,000 files on a busy machine included)."""


class Watch:
    """`archivist index FOLDER --watch` running, its output lines gathered as they come."""

    def __init__(self, folder: Path, home: Path, *options: str) -> None:
        env = {**os.environ, "ARCHIVIST_HOME": str(home), "COLUMNS": "80"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "archivist", "index", str(folder), "--watch", *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.changed = threading.Condition()
        self.passes_seen = 0
        for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err)):
            threading.Thread(target=self._gather, args=(stream, lines), daemon=True).start()

    def _gather(self, stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            with self.changed:
                lines.append(line.rstrip("\n"))
                self.changed.notify_all()

    def wait_for(self, lines: list[str], pattern: str) -> str:
        """The first line of `lines` matching `pattern`, waiting for it up to TIMEOUT."""
        deadline = time.monotonic() + TIMEOUT
        with self.changed:
            while True:
                found = next((line for line in lines if re.search(pattern, line)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                assert left > 0 and self.process.poll() is None, (self.out, self.err)
                self.changed.wait(min(left, 1.0))

    def next_pass(self) -> str:
        """What the next pass did (`1 indexed, 1 pruned`), once it reports."""
        self.passes_seen += 1
        line = self.wait_for(self.out, rf" pass {self.passes_seen}: ")
        match = PASS.match(line)
        assert match is not None and len(line) <= 80, line
        return match.group(2)

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:  # a failed test: no process left behind
            self.process.kill()
            self.process.wait()

    def stop(self) -> int:
        """Ctrl-C: the exit code."""
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=30)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "notes"
    made.mkdir()
    return made


def documents(capsys: pytest.CaptureFixture[str]) -> set[str]:
    """The names of the files the knowledge base holds; `--wait 0`: the watch, between
    passes, does not hold the store."""
    code, out, err = run(capsys, "ls", "--json", "--wait", "0")
    assert code == 0, err
    return {Path(d["path"]).name for d in json.loads(out)}


def found(capsys: pytest.CaptureFixture[str], query: str) -> list[dict[str, str]]:
    code, out, err = run(capsys, "search", query, "--json", "-k", "5", "--wait", "0")
    assert code == 0, err
    hits: list[dict[str, str]] = json.loads(out)
    return hits


def test_watch_indexes_what_is_added_changed_renamed_and_deleted(
    home: Path, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = folder.parent / "elsewhere.txt"  # indexed from outside the watched folder,
    elsewhere.write_text("Cranes dance in the marsh.")  # then gone: the watch leaves it be
    assert run(capsys, "index", str(elsewhere))[0] == 0
    elsewhere.unlink()
    (folder / "seed.md").write_text("# Seed\n\nThe first note, indexed before the watch.\n")
    with Watch(folder, home) as watch:
        watch.wait_for(watch.err, r"^watching .* for changes \(Ctrl-C to stop\)$")
        watch.wait_for(watch.out, r"^1 file, 1 chunk written")  # `archivist index` first
        assert documents(capsys) == {"seed.md", "elsewhere.txt"}

        note = folder / "zoo.txt"
        note.write_text("Zebras graze on the open plain at dawn.")
        assert watch.next_pass() == "1 indexed"
        assert documents(capsys) == {"seed.md", "elsewhere.txt", "zoo.txt"}
        assert "Zebras" in found(capsys, "zebras grazing")[0]["text"]

        note.write_text("Penguins waddle across the ice in winter.")
        assert watch.next_pass() == "1 updated"
        # the old version is gone
        assert not any("Zebras" in hit["text"] for hit in found(capsys, "zebras grazing"))
        assert "Penguins" in found(capsys, "penguins on ice")[0]["text"]

        note.rename(folder / "polar.txt")
        assert watch.next_pass() == "1 indexed, 1 pruned"
        assert documents(capsys) == {"seed.md", "elsewhere.txt", "polar.txt"}

        (folder / "polar.txt").unlink()
        assert watch.next_pass() == "1 pruned"
        assert documents(capsys) == {"seed.md", "elsewhere.txt"}
        assert "pruned" in watch.wait_for(watch.err, r"polar\.txt$")

        # hidden names stay out, an unsupported type is skipped with its reason
        (folder / ".draft.txt").write_text("A hidden draft about otters.")
        (folder / "clip.mkv").write_bytes(b"\x1a\x45\xdf\xa3" + bytes(200))
        (folder / "otters.txt").write_text("Otters float on their backs.")
        assert watch.next_pass() == "1 indexed, 1 skipped"
        assert "not supported" in watch.wait_for(watch.err, r"^skipped .*clip\.mkv")
        assert documents(capsys) == {"seed.md", "elsewhere.txt", "otters.txt"}

        burst = folder / "burst"  # a folder and its files in one burst: one pass
        burst.mkdir()
        for i in range(1000):
            (burst / f"n{i:04d}.txt").write_text(f"Note {i} on topic {i % 37}.")
        assert watch.next_pass() == "1,000 indexed"
        assert len(documents(capsys)) == 1003

        (folder / "otters.txt").unlink()  # the next pass is this one: none was left over
        assert watch.next_pass() == "1 pruned"

        # a folder moved in brings its files (with no events of their own); moved out, takes them
        staged = folder.parent / "staged"
        staged.mkdir()
        (staged / "owls.txt").write_text("Owls hunt at night.")
        (staged / "larks.txt").write_text("Larks sing at dawn.")
        staged.rename(folder / "birds")
        assert watch.next_pass() == "2 indexed"
        (folder / "birds").rename(staged)
        assert watch.next_pass() == "2 pruned"

        assert watch.stop() == 130  # the CLI's exit code for an interrupt
        stderr = "\n".join(watch.err)
        assert "Traceback" not in stderr and stderr.endswith("archivist: interrupted")
        assert len(documents(capsys)) == 1002  # the store was closed: it opens at once


def test_watch_of_an_empty_folder_creates_the_knowledge_base_and_ignores_its_own_store(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Watch(tmp_path, home) as watch:  # ARCHIVIST_HOME (the store, the cache) lies inside
        watch.wait_for(watch.err, r"^watching ")
        assert not watch.out  # no index run: nothing to index yet
        (tmp_path / "deep").mkdir()
        (tmp_path / "deep" / "first.md").write_text("Kestrels hover over the meadow.")
        assert watch.next_pass() == "1 indexed"
        (tmp_path / "second.md").write_text("Herons stand still in the shallows.")
        assert watch.next_pass() == "1 indexed"  # the first pass's writes made no pass
        assert documents(capsys) == {"first.md", "second.md"}
        assert watch.stop() == 130


@contextmanager
def held(directory: Path) -> Iterator[None]:
    """The store at `directory` held open by this process (another one than the watch's)."""
    from archivist.rag.store.qdrant import QdrantStore

    ready, release = threading.Event(), threading.Event()

    async def hold() -> None:
        async with QdrantStore(path=str(directory)):
            ready.set()
            await asyncio.to_thread(release.wait)

    holder = threading.Thread(target=asyncio.run, args=(hold(),))
    holder.start()
    try:
        assert ready.wait(60)
        yield
    finally:
        release.set()
        holder.join()


def test_a_pass_that_finds_the_knowledge_base_held_tries_again_later(
    home: Path, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "seed.md").write_text("The first note.")
    with Watch(folder, home, "--wait", "0.5") as watch:
        watch.wait_for(watch.err, r"^watching ")
        with held(home / "store" / "kbs" / "default"):
            (folder / "late.txt").write_text("Swifts sleep on the wing.")
            busy = watch.wait_for(watch.err, r"^busy ")
            assert f"PID {os.getpid()} holds knowledge base 'default'" in busy
        assert watch.next_pass() == "1 indexed"
        assert documents(capsys) == {"seed.md", "late.txt"}
        assert watch.stop() == 130


def test_watch_json_is_one_object_per_pass(home: Path, folder: Path) -> None:
    with Watch(folder, home, "--json") as watch:
        watch.wait_for(watch.err, r"^watching ")
        (folder / "good.txt").write_text("Storks nest on chimneys.")
        (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
        line = watch.wait_for(watch.out, r'^\{"pass": 1, ')
        one = json.loads(line)
        assert (one["indexed"], one["failed"]) == (1, 1)
        assert [f["path"] for f in one["failures"]] == [str(folder / "broken.pdf")]
        assert watch.stop() == 130
        assert not any(line.startswith("failed") for line in watch.err)  # all in the JSON


def test_a_file_or_a_missing_path_is_a_one_line_usage_error(
    home: Path, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    note = folder / "a.txt"
    note.write_text("text")
    code, _, err = run(capsys, "index", str(note), "--watch")
    assert code == 2 and err.count("\n") == 1
    assert "a.txt: --watch watches folders" in err
    code, _, err = run(capsys, "index", str(folder / "missing"), "--watch")
    assert code == 2 and err.count("\n") == 1 and "missing: no such folder" in err
