"""The `archivist` command line end to end, in a temporary ARCHIVIST_HOME."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run

from archivist.cli.main import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps tables at 80 columns when not a tty
    return home


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(SAMPLES, folder)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (folder / ".hidden.md").write_text("never indexed")
    return folder


def index_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code, out, _ = run(capsys, "index", *argv, "--json")
    return code, json.loads(out)


def test_index_reindex_change_prune_search_ls_rm(
    home: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    off = ("--ocr", "off")  # whatever OCR engine this machine has, the png holds no text
    code, summary = index_json(capsys, str(corpus), *off)
    assert code == 1  # broken.pdf failed, the rest indexed
    assert summary["indexed"] == 3  # md, pdf, pptx
    assert summary["skipped"] == 1  # the png: the default model is text-only
    assert [f["path"] for f in summary["failures"]] == [str(corpus / "broken.pdf")]  # type: ignore[index]
    assert "broken.pdf" in summary["failures"][0]["error"]  # type: ignore[index]
    assert (home / "store").is_dir()

    (corpus / "broken.pdf").unlink()
    code, summary = index_json(capsys, str(corpus), *off)
    assert code == 0
    assert summary["unchanged"] == 3 and summary["indexed"] == 0 and summary["updated"] == 0

    md = corpus / "archivist-overview.md"
    md.write_text(md.read_text() + "\n\nA brand new paragraph about zebras grazing.\n")
    (corpus / "archivist-guide.pdf").unlink()
    code, summary = index_json(capsys, str(corpus), "--prune", *off)
    assert (summary["updated"], summary["unchanged"], summary["pruned"]) == (1, 1, 1)

    code, out, _ = run(capsys, "search", "zebras grazing", "-k", "2", "--json")
    hits = json.loads(out)
    assert code == 0 and len(hits) == 2
    assert hits[0]["source"] == "archivist-overview.md"
    assert "zebras" in hits[0]["text"]
    assert hits[0]["score"] >= hits[1]["score"]

    code, out, _ = run(capsys, "search", "Qdrant server deployment engine", "--json", "-k", "1")
    [hit] = json.loads(out)
    assert hit["source"] == "archivist-architecture.pptx" and hit["slide"] == 3

    code, out, _ = run(capsys, "ls")
    assert code == 0
    assert "archivist-overview.md" in out and "archivist-architecture.pptx" in out
    assert "archivist-guide.pdf" not in out

    code, out, _ = run(capsys, "rm", str(md))
    assert code == 0 and "removed" in out
    code, out, _ = run(capsys, "ls")
    assert "archivist-overview.md" not in out
    code, _, err = run(capsys, "rm", str(md))
    assert code == 5 and "no document" in err  # a document that cannot be used


def test_search_table_shows_citations(
    home: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "index", str(corpus / "archivist-guide.pdf"))
    code, out, _ = run(capsys, "search", "tenants share one collection", "-k", "1")
    assert code == 0
    assert "archivist-guide.pdf" in out and "page 3" in out


def test_tenants_are_confined(home: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "index", str(corpus / "archivist-overview.md"), "--tenant", "a")
    run(capsys, "index", str(corpus / "archivist-guide.pdf"), "--tenant", "b")
    _, out, _ = run(capsys, "search", "parsers and chunking", "--tenant", "b", "--json", "-k", "9")
    assert {h["source"] for h in json.loads(out)} == {"archivist-guide.pdf"}
    _, out, _ = run(capsys, "ls", "--tenant", "a")
    assert "archivist-overview.md" in out and "archivist-guide.pdf" not in out


def test_clear_errors(home: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "search", "anything", "--kb", "nope")
    assert code == 2 and "unknown knowledge base 'nope'" in err
    code, _, err = run(capsys, "index", str(corpus / "missing-file.md"))
    assert code == 2 and "missing-file.md" in err
    code, _, err = run(capsys, "index", str(corpus), "--chunk-size", "10", "--overlap", "10")
    assert code == 2 and "overlap" in err
    unsupported = corpus / "movie.mkv"
    unsupported.write_bytes(b"\x1a\x45\xdf\xa3" + bytes(200))
    code, summary = index_json(capsys, str(unsupported))
    assert code == 0 and summary["skipped"] == 1  # skipped with its reason, not a failure
    assert "not supported" in summary["skipped_files"][0]["reason"]  # type: ignore[index]
    # an empty knowledge base says so
    run(capsys, "index", str(unsupported), "--kb", "empty")
    code, _, err = run(capsys, "search", "x", "--kb", "empty")
    assert code == 2 and "is empty" in err


def _hold(directory: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """A process holding the store at `directory` open until it reads a line."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys\n"
            "from archivist.rag.store.qdrant import QdrantStore\n"
            "async def hold():\n"
            f"    async with QdrantStore(path={str(directory)!r}):\n"
            "        print('ready', flush=True)\n"
            "        sys.stdin.readline()\n"
            "asyncio.run(hold())\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    return holder


def test_a_busy_knowledge_base_makes_others_wait_and_never_blocks_another_kb(
    home: Path, corpus: Path
) -> None:
    env = {**os.environ, "ARCHIVIST_HOME": str(home)}
    archivist = [sys.executable, "-m", "archivist"]
    md = str(corpus / "archivist-overview.md")
    assert subprocess.run([*archivist, "index", md], env=env, timeout=120).returncode == 0
    holder = _hold(home / "store" / "kbs" / "default", env)
    try:
        # another knowledge base is not blocked at all
        other = subprocess.run(
            [*archivist, "index", md, "--kb", "other", "--wait", "0"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert other.returncode == 0, other.stderr
        # the busy one: a visible wait, then a one-line error naming the holder
        result = subprocess.run(
            [*archivist, "index", md, "--wait", "1"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert result.returncode == 4  # the store is unavailable, not a usage error
        assert f"PID {holder.pid}" in result.stderr and "waiting up to 1 s" in result.stderr
        assert "Traceback" not in result.stderr
        # a reader waits and gets its answer once the writer is done
        reader = subprocess.Popen(
            [*archivist, "search", "archivist", "--json", "--wait", "60"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert reader.stderr is not None and "waiting up to 60 s" in reader.stderr.readline()
    finally:
        holder.communicate("done\n", timeout=60)
    out, _ = reader.communicate(timeout=120)
    assert reader.returncode == 0 and json.loads(out)[0]["source"] == "archivist-overview.md"


def test_console_script_and_module_entry_points(home: Path) -> None:
    for command in (
        [str(Path(sys.executable).parent / "archivist"), "--help"],
        [sys.executable, "-m", "archivist", "--help"],
    ):
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0
        assert "index" in result.stdout and "search" in result.stdout


def test_index_and_search_with_a_provider_model_on_a_loopback_stand_in(
    home: Path, corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from archivist.embedding import LocalEmbeddingModel
    from dashscope_loopback import dashscope_loopback

    with dashscope_loopback(LocalEmbeddingModel()) as (base_url, requests):
        monkeypatch.setenv("DASHSCOPE_BASE_URL", base_url)
        monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-loopback")
        spec = "dashscope:text-embedding-v4:512"
        code, summary = index_json(
            capsys, str(corpus / "archivist-guide.pdf"), "--kb", "ds", "--embedding", spec
        )
        assert code == 0 and summary["indexed"] == 1
        code, out, _ = run(capsys, "search", "tenant isolation", "--kb", "ds", "--json", "-k", "1")
        assert json.loads(out)[0]["page"] == 3
        # the KB remembers its model: another one is refused
        code, _, err = run(
            capsys, "index", str(corpus), "--kb", "ds", "--embedding", "all-MiniLM-L6-v2-int8"
        )
        assert code == 2 and "was built with --embedding 'dashscope:text-embedding-v4:512'" in err
    assert {r["parameters"]["dimension"] for r in requests} == {512}
    assert {r["auth"] for r in requests} == {"Bearer sk-loopback"}
    code, _, err = run(capsys, "index", str(corpus), "--kb", "x", "--embedding", "openai:m")
    assert code == 2 and "vector size" in err


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        (["eval", "."], "--chunk-size", "0"),
        (["eval", "."], "--overlap", "-1"),
        (["serve"], "--chunk-size", "-5"),
        (["index", "."], "--overlap", "many"),
    ],
)
def test_chunking_options_are_checked_alike_by_every_command(
    capsys: pytest.CaptureFixture[str], command: list[str], option: str, value: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, option, value])
    _, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert f"argument {option}" in err and repr(value) in err
    assert "Traceback" not in err
