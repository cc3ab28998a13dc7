"""The indexing queue and the workers that run the library's ingest path on uploads."""
