"""What every store engine shares: the stored chunk's layout and point ids, argument checks,
BM25 terms and statistics, generations (crash-safe replace and repair), and the ranking by
relevance. Engines (`qdrant/`, `pgvector/`) build on these and never on each other."""
