"""Old import path, kept working: the same objects now live in `archivist.rag.store.tenant`."""

from archivist.rag.store.tenant import (
    TENANT_KEY as TENANT_KEY,
)
from archivist.rag.store.tenant import (
    tenant_scope as tenant_scope,
)
