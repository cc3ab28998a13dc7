"""`KnowledgeProfile`, `StoreSpec` and the factories: the one road to an open knowledge base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from archivist.cli.home import KBS_FILE, load_kbs, save_kb
from archivist.embedding import CachedEmbeddingModel
from archivist.errors import ConfigurationError, InvalidArgumentError, StoreLockedError
from archivist.message import TextBlock
from archivist.rag import Section
from archivist.rag.knowledge import factories
from archivist.rag.knowledge.profile import KnowledgeProfile, StoreSpec
from archivist.rag.store.process import ProcessStore
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.tenant import tenant_scope
from archivist.testing.embedding import HashEmbeddingModel


def test_a_profile_checks_its_chunk_rule_and_fills_its_defaults() -> None:
    profile = KnowledgeProfile(name="docs")
    assert profile.collection_name == "docs"
    assert profile.overlap == 32 and profile.chunk_size is None and profile.tenant is None
    with pytest.raises(InvalidArgumentError) as refused:
        KnowledgeProfile.of(name="docs", chunk_size=64, overlap=64)
    assert refused.value.argument == "overlap"
    with pytest.raises(ValidationError, match="smaller than chunk_size"):
        KnowledgeProfile(name="docs", chunk_size=64, overlap=64)
    with pytest.raises(ValidationError):
        KnowledgeProfile(name="")


def test_a_profile_is_recorded_without_its_tenant() -> None:
    profile = KnowledgeProfile(name="docs", collection="kb_1", tenant="acme")
    recorded = profile.recorded()
    assert "tenant" not in recorded and recorded["collection"] == "kb_1"
    assert KnowledgeProfile.model_validate(recorded) == profile.model_copy(update={"tenant": None})


def test_the_home_reads_records_of_the_first_shape_and_writes_the_profile(
    tmp_path: Path,
) -> None:
    """A home written before profiles (overlap None, no collection) still opens; the next write
    keeps every key the first shape had, so that version can read it back."""
    first_shape = {
        "old": {
            "name": "old",
            "description": "Files indexed into old",
            "embedding_model": "all-MiniLM-L6-v2-int8",
            "dimensions": 384,
            "chunk_size": None,
            "overlap": None,
        },
        "new": {
            "name": "new",
            "description": "d",
            "embedding_model": "all-MiniLM-L6-v2-int8",
            "dimensions": 384,
            "chunk_size": 200,
            "overlap": 20,
            "written_by_a_later_version": True,
        },
    }
    (tmp_path / KBS_FILE).write_text(json.dumps(first_shape), encoding="utf-8")
    kbs = load_kbs(tmp_path)
    assert kbs["old"].overlap == 32 and kbs["old"].chunk_size is None
    assert kbs["new"].chunk_size == 200 and kbs["new"].overlap == 20
    assert kbs["new"].collection_name == "new"
    save_kb(tmp_path, kbs["new"].model_copy(update={"description": "changed"}))
    written = json.loads((tmp_path / KBS_FILE).read_text(encoding="utf-8"))
    for name, record in first_shape.items():
        kept = {key: written[name][key] for key in record if key != "written_by_a_later_version"}
        assert set(kept) <= set(written[name])
    assert written["new"]["description"] == "changed"
    assert written["old"]["overlap"] == 32
    assert "tenant" not in written["new"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kind": "edge", "url": "http://x"}, "takes a path"),
        ({"kind": "qdrant"}, "takes a url"),
        ({"kind": "pgvector", "url": "postgresql://x", "path": "/tmp"}, "takes a url"),
        ({"kind": "qdrant", "url": "http://x", "in_child_process": True}, "child process"),
    ],
)
def test_a_store_spec_refuses_what_its_kind_does_not_take(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        StoreSpec.model_validate(values)


def test_open_store_builds_the_store_a_spec_names(tmp_path: Path) -> None:
    assert isinstance(factories.open_store(StoreSpec()), QdrantStore)
    assert isinstance(factories.open_store(StoreSpec(path=tmp_path)), QdrantStore)
    child = factories.open_store(StoreSpec(path=tmp_path, in_child_process=True))
    assert isinstance(child, ProcessStore)
    remote = factories.open_store(StoreSpec(kind="qdrant", url="http://127.0.0.1:1"))
    assert isinstance(remote, QdrantStore)


def test_embedding_model_wraps_the_cache_only_when_asked(tmp_path: Path) -> None:
    plain = factories.embedding_model("all-MiniLM-L6-v2-int8")
    assert not isinstance(plain, CachedEmbeddingModel)
    cached = factories.embedding_model("all-MiniLM-L6-v2-int8", cache_dir=tmp_path)
    assert isinstance(cached, CachedEmbeddingModel)
    assert cached.cache_identity == plain.cache_identity


@pytest.mark.parametrize("spec", ["openai:text-embedding-3-small", "openai:m:0", "dashscope:m:x"])
def test_a_remote_spec_without_a_vector_size_names_the_setting(spec: str) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        factories.embedding_model(spec)
    assert refused.value.argument == "embedding_model"
    assert spec in str(refused.value)


def test_an_unknown_ocr_engine_is_a_configuration_error() -> None:
    assert factories.ocr("off", ("eng",), cache_dir=None) is None
    with pytest.raises(ConfigurationError, match="--ocr nothing"):
        factories.ocr("nothing", ("eng",), cache_dir=None)


def test_the_chunker_follows_the_profile() -> None:
    model = HashEmbeddingModel(dimensions=8)
    chunker = factories.chunker(
        KnowledgeProfile(name="docs", chunk_size=40, overlap=4, context_header=True), model
    )
    assert chunker.chunk_size == 40 and chunker.overlap == 4 and chunker.context_header


async def test_a_handle_is_confined_to_the_profiles_tenant() -> None:
    model = HashEmbeddingModel(dimensions=8)
    async with QdrantStore(location=":memory:") as store:
        acme = factories.knowledge_base(KnowledgeProfile(name="docs", tenant="acme"), store, model)
        nobody = factories.knowledge_base(KnowledgeProfile(name="docs"), store, model)
        everyone = factories.knowledge_base(
            KnowledgeProfile(name="docs"), store, model, scoped=False
        )
        assert acme.metadata_filter == tenant_scope("acme")
        assert nobody.metadata_filter == tenant_scope(None)
        assert everyone.metadata_filter is None
        chunker = factories.chunker(KnowledgeProfile(name="docs", chunk_size=50), model)
        section = Section(content=TextBlock(text="acme keeps its invoices here"), source="i")
        chunks = await chunker.chunk([section])
        await acme.insert_document(chunks, "invoices")
        assert [d.document_id for d in await acme.list_documents()] == ["invoices"]
        assert await nobody.list_documents() == []
        assert [d.document_id for d in await everyone.list_documents()] == ["invoices"]


async def test_open_knowledge_base_enters_and_closes_the_store(tmp_path: Path) -> None:
    spec = StoreSpec(path=tmp_path / "kb")
    model = HashEmbeddingModel(dimensions=8)
    profile = KnowledgeProfile(name="docs", collection="c1")
    async with factories.open_knowledge_base(profile, spec, model=model) as kb:
        assert kb.collection == "c1"
        await kb.ensure_collection()
        told: list[str] = []
        with pytest.raises(StoreLockedError):  # the directory admits one opener
            await factories.enter_store(spec, wait=0.3, on_wait=told.append)
        assert len(told) == 1
    async with factories.open_knowledge_base(profile, spec, model=model) as again:
        assert await again.has_collection()


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("{not json", "is not a knowledge-base registry"),
        ('["docs"]', "is not a knowledge-base registry"),
        ('{"docs": {"chunk_size": 0}}', "knowledge base 'docs': chunk_size"),
        ('{"docs": {"chunk_size": 10, "overlap": 10}}', "knowledge base 'docs'"),
    ],
)
def test_a_damaged_registry_is_one_error_naming_the_file(
    tmp_path: Path, content: str, named: str
) -> None:
    (tmp_path / KBS_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(ConfigurationError) as refused:
        load_kbs(tmp_path)
    assert str(tmp_path / KBS_FILE) in str(refused.value) and named in str(refused.value)
    assert "\n" not in str(refused.value)
    assert (tmp_path / KBS_FILE).read_text(encoding="utf-8") == content  # nothing rewritten
