"""The vector side of the service: stores, embedding models and per-knowledge-base profiles."""
