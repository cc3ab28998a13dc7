"""Which errors mean a dependency (the database, the object store) is unreachable, and one
log line per outage rather than a traceback per request.

A request that meets one is answered 503 with `Retry-After`: the client cannot tell a bug
from "try again later" by a 500. Only connection-level failures count: an error the
database or object store answered with (a constraint, a missing key) is not an outage.
"""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import exc as sql

RETRY_AFTER_SECONDS = 5
"""What a 503 of an outage asks clients to wait before trying again."""
LOG_EVERY_SECONDS = 60.0
"""At most one log line per dependency in this long."""

logger = logging.getLogger(__name__)

_SQL_OUTAGES = (sql.OperationalError, sql.InterfaceError, sql.TimeoutError, sql.DisconnectionError)


def outage_of(error: BaseException) -> str | None:
    """ "the database", "the vector store" or "the file store" when `error` says that
    dependency could not be reached (connection refused or lost, timed out, a 5xx answer),
    else None."""
    if isinstance(error, _SQL_OUTAGES):
        return "the database"
    try:  # the pgvector store's own driver (the postgres extra's)
        import psycopg
        import psycopg_pool
    except ImportError:
        pass
    else:
        if isinstance(error, psycopg.OperationalError | psycopg_pool.PoolTimeout):
            return "the database"
    vectors = _qdrant_outage(error)
    if vectors is not None:
        return vectors
    return _s3_outage(error)


def _s3_outage(error: BaseException) -> str | None:
    """ "the file store" when S3 could not be reached (no connection, one lost or timed out,
    also while a body is read), answered 5xx, or lacks the bucket itself (a server restarted
    empty, being refilled); also through boto3's transfer errors, which wrap what they met."""
    try:
        from boto3 import exceptions as transfer  # the s3 extra's
        from botocore import exceptions as boto
    except ImportError:
        return None
    if isinstance(error, boto.ConnectionError | boto.HTTPClientError | boto.IncompleteReadError):
        return "the file store"
    if isinstance(error, boto.ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        code = error.response.get("Error", {}).get("Code")
        return "the file store" if status >= 500 or code == "NoSuchBucket" else None
    if isinstance(error, transfer.RetriesExceededError):  # a download's last error
        return _s3_outage(error.last_exception)
    if isinstance(error, transfer.S3UploadFailedError) and error.__context__ is not None:
        return _s3_outage(error.__context__)  # raised while handling the ClientError
    return None


def _qdrant_outage(error: BaseException) -> str | None:
    """ "the vector store" when a Qdrant server could not be reached (no answer, or a 5xx
    answer); its 4xx answers are not outages."""
    try:
        from qdrant_client.http import exceptions as qdrant  # the server extra's
    except ImportError:
        return None
    if isinstance(error, qdrant.ResponseHandlingException):  # no usable answer at all
        return "the vector store"
    if isinstance(error, qdrant.UnexpectedResponse) and (error.status_code or 0) >= 500:
        return "the vector store"
    return None


class OutageLog:
    """Logs an outage of each dependency once per LOG_EVERY_SECONDS, with how often it was
    met since the last line (`met`: what each time counts, "request(s) answered 503");
    thread-safe."""

    def __init__(self, met: str = "request(s) answered 503") -> None:
        self._met = met
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._refused: dict[str, int] = {}

    def refused(self, dependency: str, error: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self._refused[dependency] = self._refused.get(dependency, 0) + 1
            last = self._last.get(dependency)
            if last is not None and now - last < LOG_EVERY_SECONDS:
                return
            self._last[dependency] = now
            count, self._refused[dependency] = self._refused[dependency], 0
        logger.warning(
            "%s is unreachable (%s); %d %s since the last report",
            dependency,
            type(error).__name__,
            count,
            self._met,
        )
