"""Archivist: retrieval-augmented generation for AI agents."""

from pathlib import Path

__version__ = "0.1.0"

SAMPLES = Path(__file__).resolve().parent / "samples"
"""The folder of sample files shipped with the package (a PDF, a deck, Markdown, a picture)."""
