"""A Qdrant server (or qdrant-client's local mode) through qdrant-client's async API."""
