"""Every script in examples/ runs offline and prints what it promises, so none rots silently.

The scripts run as a user would run them (`python examples/X.py` from the repository root)
with no provider keys in the environment, all at once to keep the suite quick. A few helpers
of the examples are also called directly, for the branches taken only with an API key.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from archivist.embedding.dashscope import DashScopeEmbeddingModel
from archivist.message import DataBlock
from archivist.model import OpenAIChatModel, ScriptedChatModel
from archivist.rag import ImageParser, QdrantStore
from archivist.testing.embedding import HashEmbeddingModel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if not p.stem.startswith("_"))
TIMEOUT = 120


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def offline_env() -> dict[str, str]:
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OPENAI_", "DASHSCOPE_"))
    }


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    """Run every example at once; their output by name."""
    processes = {
        name: subprocess.Popen(
            [sys.executable, f"examples/{name}.py"],
            cwd=ROOT,
            env=offline_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in EXAMPLES
    }
    results = {}
    for name, process in processes.items():
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            stderr += f"\n(killed after {TIMEOUT}s)"
        results[name] = Run(process.returncode, stdout, stderr)
    return results


def between(text: str, start: str, end: str | None = None) -> str:
    """The part of `text` from `start` up to `end` (or the end of the text)."""
    tail = text[text.index(start) :]
    return tail if end is None else tail[: tail.index(end)]


def check_parse_and_chunk(out: str) -> None:
    assert "TextParser, bytes: 1 section(s)" in out
    assert "cats.md {} '# Cats Cats sleep 12-16 hours per day.'" in out
    assert re.search(r"PDFParser, path: \d+ section\(s\)\n  archivist-guide.pdf \{'page': 1\}", out)
    assert "same text as from the path: True" in out
    assert re.search(
        r"archivist-architecture.pptx \{'slide': \d+, 'media_type': 'image/png'\} <image/png", out
    )
    assert "pipeline.png {'media_type': 'image/png'} <image/png" in out
    assert re.search(
        r"ApproxTokenChunker on archivist-guide.pdf: \d+ chunk\(s\)\n  chunk 0/\d+ ", out
    )


def check_knowledge_base(out: str) -> None:
    assert (
        "embedding model: OnnxEmbeddingModel(model='all-MiniLM-L6-v2-int8', dimensions=384)" in out
    )
    tenants = between(out, "search: 'How do tenants share a collection?'", "search: 'Which")
    first_hit = tenants.splitlines()[1]
    assert "archivist-guide.pdf {'filename': 'archivist-guide.pdf', 'page': 3}" in first_hit
    listed = between(out, "list_documents:", "delete_document(")
    assert all(name in listed for name in ["archivist-guide.pdf", "archivist-overview.md"])
    left = between(out, "removed archivist-guide.pdf; left:")
    assert "archivist-overview.md" in left and "archivist-guide.pdf chunks" not in left


def check_multi_tenant(out: str) -> None:
    acme = between(out, "[acme] search", "[globex] search")
    assert "acme-refunds" in acme
    assert "globex" not in acme and "secret price list" not in acme
    globex = between(out, "[globex] search", "[acme] delete_document")
    assert "acme-refunds" not in globex
    # the forged chunk claimed tenant acme; the writer's filter won
    assert "globex-prices {'tenant_id': 'globex'} \"Acme's secret price list" in globex
    assert "[acme] delete_document('globex-prices') refused: no document 'globex-prices'" in out
    operator = between(out, "[operator, no metadata_filter]")
    assert all(d in operator for d in ["acme-refunds", "globex-prices", "globex-refunds"])


def check_multimodal(out: str) -> None:
    assert (
        "ImageParser.supported_media_types = "
        "['image/png', 'image/jpeg', 'image/gif', 'image/bmp', 'image/webp']"
    ) in out
    assert (
        "pipeline.png -> one Section: data block, image/png, metadata {'media_type': 'image/png'}"
        in out
    )
    assert "all-MiniLM-L6-v2-int8: supports_multimodal = False" in out
    assert "indexing the image with a text-only model fails:" in out
    assert "search([image]) -> 0 hit(s)" in out
    text_hits = between(out, "only the text query is searched:", "Set DASHSCOPE_API_KEY")
    assert "archivist-overview.md" in text_hits
    assert "Set DASHSCOPE_API_KEY" in out


# file, then page / slide / heading path when known, then the chunk
CITATION = r"\[1: archivist-[a-z]+\.(pdf|md|pptx), (page \d+, |slide \d+, |[^,\]]+, )?chunk \d+\]"


def check_agent_static(out: str) -> None:
    assert re.search(r"reply: Several tenants may share one collection.*" + CITATION, out)
    assert "hints left in memory after the reply: 0" in out
    assert "[hint] searched ['archivist-docs'] with 'Which model embeds text offline?'" in out
    assert "cites: archivist-guide.pdf, page 1, chunk 0" in out
    assert re.search(r"\[reply end\] Archivist runs offline.*" + CITATION, out)


def check_agent_agentic(out: str) -> None:
    assert "tool offered to the model: search_knowledge" in out
    assert "- archivist-docs: Archivist's own documentation" in out
    assert re.search(r"reply: Archivist runs offline.*" + CITATION, out)
    streamed = between(out, "streamed:")
    assert "[hint]" not in streamed
    assert "[tool call] search_knowledge({'query': 'How do tenants stay isolated?'})" in streamed
    assert re.search(r"\[tool result\].*\n\s+\[1\] archivist-guide.pdf, page 3, chunk", streamed)
    assert re.search(r"\[reply end\] Several tenants.*" + CITATION, streamed)


def check_agent_both(out: str) -> None:
    assert "[hint] searched ['archivist-docs'] with 'How can an agent use a knowledge base?'" in out
    assert out.index("[hint]") < out.index("[tool call] search_knowledge(")
    assert "cites: archivist-architecture.pptx, slide 2, chunk" in out
    [final] = [line for line in out.splitlines() if line.startswith("  [reply end]")]
    assert len(re.findall(CITATION, final)) == 2


def check_custom_components(out: str) -> None:
    assert "registry picks MyMarkdownParser for archivist-overview.md" in out
    assert "{'index': 1} 'Parsers'" in out
    assert re.search(r"FixedCharChunker\(chunk_size=300\): \d+ chunks", out)
    research = between(out, "research-kb (metadata_filter={'team': 'research'})", "list_documents:")
    assert "notes.txt" in research and "archivist-overview.md" not in research
    assert "list_chunks(limit=3): chunk indexes [0, 1, 2]" in out
    left = between(out, "after delete_document(")
    assert "research-note notes.txt chunks=1" in left and "archivist-overview.md" not in left


CHECKS = {
    "parse_and_chunk": check_parse_and_chunk,
    "knowledge_base": check_knowledge_base,
    "multi_tenant": check_multi_tenant,
    "multimodal": check_multimodal,
    "agent_static": check_agent_static,
    "agent_agentic": check_agent_agentic,
    "agent_both": check_agent_both,
    "custom_components": check_custom_components,
}


def test_every_example_is_checked() -> None:
    assert sorted(CHECKS) == EXAMPLES


# Known library bugs an example runs into; strict, so the mark goes once the bug is fixed.
@pytest.mark.parametrize(
    "name",
    EXAMPLES,
)
def test_example_runs_offline_and_prints_its_story(name: str, runs: dict[str, Run]) -> None:
    run = runs[name]
    assert run.returncode == 0, str(run)
    assert "Traceback" not in run.stderr, str(run)
    try:
        CHECKS[name](run.stdout)
    except (AssertionError, ValueError) as error:
        raise AssertionError(f"{name}: {error!r}\n{run}") from error


def test_each_example_says_what_it_shows_and_how_to_run_it() -> None:
    for name in EXAMPLES:
        source = (ROOT / "examples" / f"{name}.py").read_text()
        assert source.startswith('"""'), name
        docstring = source.split('"""')[1]
        assert f"python examples/{name}.py" in docstring, name
        assert "asyncio.run(main())" in source, name


# -- branches taken only with an API key ------------------------------------------------------


# Deterministic vectors for text and images, standing in for a multimodal provider.
FakeMultimodalModel = partial(HashEmbeddingModel, 16, model="fake-multimodal", multimodal=True)


async def test_multimodal_branch_indexes_and_finds_images(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import multimodal

    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-not-used")
    model = multimodal.dashscope_multimodal_model()
    assert isinstance(model, DashScopeEmbeddingModel)
    assert (model.model, model.dimensions, model.supports_multimodal) == (
        "multimodal-embedding-v1",
        1024,
        True,
    )

    [section] = await ImageParser().parse(file=str(multimodal.IMAGE), filename="pipeline.png")
    assert isinstance(section.content, DataBlock)
    async with QdrantStore(location=":memory:") as store:
        await multimodal.multimodal_knowledge_base(store, FakeMultimodalModel(), section.content)
    out = capsys.readouterr().out
    assert "indexed pipeline.png: 1 chunk(s), 1 of them image(s)" in out
    assert re.search(r"indexed archivist-architecture.pptx: \d+ chunk\(s\), 1 of them", out)
    by_image = between(out, "search by image:").splitlines()[1]
    assert by_image.startswith("  1.000 ") and "<image/png>" in by_image


def test_knowledge_base_uses_dashscope_when_a_key_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import knowledge_base

    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-not-used")
    model = knowledge_base.make_embedding_model()
    assert isinstance(model, DashScopeEmbeddingModel)
    assert (model.model, model.dimensions) == ("text-embedding-v4", 1024)
    monkeypatch.delenv("DASHSCOPE_API_KEY")
    assert model.model != knowledge_base.make_embedding_model().model


def test_agents_use_an_openai_compatible_model_when_a_key_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from _shared import chat_model_or

    offline = ScriptedChatModel([])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert chat_model_or(offline) is offline
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_MODEL", "qwen2.5:7b")
    model = chat_model_or(offline)
    assert isinstance(model, OpenAIChatModel)
    assert (model.model_name, model.base_url) == ("qwen2.5:7b", "http://localhost:11434/v1")
