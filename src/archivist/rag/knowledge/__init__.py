"""Building and searching knowledge: the KnowledgeBase handle, ingestion and search context."""
