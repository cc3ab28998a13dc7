"""Old import path, kept working: the objects live in `archivist.rag.knowledge.knowledge_base`."""

from archivist.rag.knowledge.knowledge_base import (
    DocumentNotFoundError as DocumentNotFoundError,
)
from archivist.rag.knowledge.knowledge_base import (
    IncompleteDocument as IncompleteDocument,
)
from archivist.rag.knowledge.knowledge_base import (
    KnowledgeBase as KnowledgeBase,
)
from archivist.rag.knowledge.knowledge_base import (
    NewDocument as NewDocument,
)
from archivist.rag.knowledge.knowledge_base import (
    RepairReport as RepairReport,
)
from archivist.rag.knowledge.knowledge_base import (
    VerifyReport as VerifyReport,
)
