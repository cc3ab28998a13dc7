"""The vector side of the service: stores, embedding models, chunking off the event loop and
per-knowledge-base profiles."""
