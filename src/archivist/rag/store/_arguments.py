"""Checks of the arguments a vector store receives, each failing with a ValueError that names it."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_COLLECTION_NAME = re.compile(r"[A-Za-z0-9_.-]{1,255}")


def check_collection_name(name: object) -> str:
    """`name` if it is safe as a directory name (and as a Qdrant collection name)."""
    if not isinstance(name, str) or not _COLLECTION_NAME.fullmatch(name) or name in {".", ".."}:
        raise ValueError(
            f"collection name {name!r} is invalid: use 1-255 letters, digits, '_', '.' or '-', "
            "and not '.' or '..'"
        )
    return name


def check_positive_int(value: object, argument: str) -> int:
    """`value` if it is an int (not a bool) above zero."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{argument} must be a positive int, got {value!r}")
    return value


def check_non_negative_int(value: object, argument: str) -> int:
    """`value` if it is an int (not a bool) of zero or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{argument} must be an int >= 0, got {value!r}")
    return value


def check_document_id(document_id: object) -> str:
    """`document_id` if it is a non-empty string."""
    if not isinstance(document_id, str) or not document_id:
        raise ValueError(f"document_id must be a non-empty str, got {document_id!r}")
    return document_id


def vector_problem(vector: Sequence[float], dimensions: int) -> str | None:
    """Why `vector` cannot be stored in a collection of `dimensions`, or None when it can."""
    if len(vector) != dimensions:
        return f"has {len(vector)} dimensions, the collection has {dimensions}"
    try:
        if all(map(math.isfinite, vector)):
            return None
    except TypeError:
        pass
    for value in vector:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"holds {value!r}, not a number"
        if not math.isfinite(value):
            return f"holds {value!r}; every value must be finite"
    return None


def check_query_vector(vector: Sequence[float], dimensions: int) -> list[float]:
    """`vector` as a list of floats if it fits a collection of `dimensions`."""
    problem = vector_problem(vector, dimensions)
    if problem is not None:
        raise ValueError(f"query_vector {problem}")
    return [float(value) for value in vector]
