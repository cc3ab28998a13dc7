"""Old import path, kept working: the same objects now live in `archivist.rag.knowledge.ingest`."""

from archivist.rag.knowledge.ingest import (
    FileResult as FileResult,
)
from archivist.rag.knowledge.ingest import (
    IngestReport as IngestReport,
)
from archivist.rag.knowledge.ingest import (
    Outcome as Outcome,
)
from archivist.rag.knowledge.ingest import (
    document_id_for as document_id_for,
)
from archivist.rag.knowledge.ingest import (
    file_sha256 as file_sha256,
)
from archivist.rag.knowledge.ingest import (
    ingest_files as ingest_files,
)
from archivist.rag.knowledge.ingest import (
    pipeline_fingerprint as pipeline_fingerprint,
)
from archivist.rag.knowledge.ingest import (
    scoped_handle as scoped_handle,
)
