"""Qdrant Edge, in-process: shards on disk or in memory, their metadata, optimizer and the
translation of our filters and schema into Edge's types."""
