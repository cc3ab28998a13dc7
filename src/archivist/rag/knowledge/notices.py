"""The knowledge base's log and the attributes of its per-document warnings.

Every module of the knowledge stage logs here, and the two per-document warnings carry their
document id as record attributes, so a caller such as `archivist index` can hold them back
and report them once (`archivist.cli.notices`).
"""

from __future__ import annotations

import logging

logger = logging.getLogger("archivist.rag.knowledge")

UNREADABLE_DOCUMENT, UNKNOWN_SHARE = "unreadable_document", "unknown_share"
"""Attributes of the record warning of an unreadable document: its id, the unknown share."""
SKIPPED_DATA_DOCUMENT, SKIPPED_DATA_BLOCKS = "skipped_data_document", "skipped_data_blocks"
"""Attributes of the record warning that a text-only model skipped a document's DataBlocks."""
