"""Small helpers the rest of the package builds on (lazy exports, work off the event loop,
atomic files, file digests, thread priority, optional extras); none is public API."""
