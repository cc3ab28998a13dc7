"""Archivist: retrieval-augmented generation for AI agents."""

__version__ = "0.1.0"
