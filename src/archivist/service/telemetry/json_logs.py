"""One JSON object per log line (`--log-format json`), with the stdlib `logging`.

A record gives its time, level, logger, message and request id, plus the access fields
`RequestTelemetry` sets; other `extra` attributes are left out, so nothing is logged that
its caller did not mean as a field. The formatter is a few lines of `json.dumps`, so no
logging library is needed for it.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from archivist.service.telemetry.request_id import RequestIdFilter

FIELDS = ("method", "route", "status", "duration_ms")
"""Record attributes written as fields of their own when present (the access record's)."""


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            line["request_id"] = request_id
        for name in FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def json_logging_config(debug: bool = False) -> dict[str, Any]:
    """The `logging.config.dictConfig` (and uvicorn `log_config`) of `--log-format json`.

    Every line goes to stderr as JSON: uvicorn's own, the `archivist` loggers' from INFO
    (one `archivist.access` record per request among them), other libraries' from WARNING,
    as their INFO lines may name outgoing URLs (`debug`: the `archivist` loggers from DEBUG).
    uvicorn's access log stays off: it would print raw paths and query strings.
    """
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {
            "json": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["request_id"],
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["json"], "level": "INFO", "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            # instead of the CLI's own plain-text handler
            "archivist": {
                "handlers": [],
                "level": "DEBUG" if debug else "INFO",
                "propagate": True,
            },
        },
        "root": {"handlers": ["json"], "level": "WARNING"},
    }
