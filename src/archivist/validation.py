"""The one set of input rules for ids, metadata filters, vectors and counts.

The knowledge base, the vector stores and the embedding models all check with these functions,
so a value one accepts the others accept too. Each failure is an `InvalidArgumentError` (a
ValueError; a TypeError for a value of the wrong kind) whose `argument` names the argument.
This module is public: authors of their own stores or models use it (and
`archivist.rag.store.core.arguments`, which groups these checks per store method) to accept
exactly what archivist's own accept.

Rules:
- document id: a str with at least one non-space character, used exactly as given (not stripped).
- metadata filter: a dict of `{key: value}` equality tests on top-level metadata keys; a key is
  a non-empty str without '"' or '\\' (a '.' is part of the key, not a path into nested
  values); a value is a str, a bool, a 64-bit int, or None for "the key is absent".
- vector: exactly the collection's number of dimensions, every value a finite int or float.
- page size (`limit`): an int from 0 (an empty page) up to the caller's maximum, if it has one.
- knowledge base name: 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit
  (`KB_NAME_PATTERN`; the CLI and the service both name knowledge bases by it).
- collection name: 1-255 letters, digits, '_', '.' or '-', and not '.' or '..' (it names a
  directory).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from archivist.errors import InvalidArgumentError

FilterValue = str | int | bool
MetadataFilter = dict[str, Any]
"""`{key: value}` equality on chunk metadata (str, bool, int, or None for "the key is absent")."""

KB_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""A knowledge base name, anchored for JSON Schema (whose patterns search) and matched whole."""
_KB_NAME = re.compile(KB_NAME_PATTERN)
_COLLECTION_NAME = re.compile(r"[A-Za-z0-9_.-]{1,255}")
_INT64 = range(-(2**63), 2**63)
_KEY_FORBIDDEN = ('"', "\\")


def check_collection_name(name: object) -> str:
    """`name` if it is safe as a directory name (and as a Qdrant collection name)."""
    if not isinstance(name, str) or not _COLLECTION_NAME.fullmatch(name) or name in {".", ".."}:
        raise InvalidArgumentError(
            f"collection name {name!r} is invalid: use 1-255 letters, digits, '_', '.' or '-', "
            "and not '.' or '..'",
            argument="collection",
        )
    return name


def check_kb_name(name: object) -> str:
    """`name` if it is a valid knowledge base name (`KB_NAME_PATTERN`, matched whole)."""
    if not isinstance(name, str) or not _KB_NAME.fullmatch(name):
        raise ValueError(
            f"invalid knowledge base name {name!r} (1-64 letters, digits, _ . -; "
            "starting with a letter or digit)"
        )
    return name


def check_positive_int(value: object, argument: str) -> int:
    """`value` if it is an int (not a bool) above zero."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(
            f"{argument} must be a positive int, got {value!r}", argument=argument
        )
    return value


def check_optional_positive_int(value: object, argument: str) -> int | None:
    """`value` if it is None (not set) or a positive int (`check_positive_int`)."""
    return None if value is None else check_positive_int(value, argument)


def check_non_negative_int(value: object, argument: str) -> int:
    """`value` if it is an int (not a bool) of zero or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f"{argument} must be an int >= 0, got {value!r}", argument=argument
        )
    return value


def check_limit(value: object, argument: str = "limit", maximum: int | None = None) -> int:
    """`value` if it is an int (not a bool) from 0 (an empty page) to `maximum` (unbounded when
    None): the one page-size rule of the knowledge base, the stores and the service."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < 0
        or (maximum is not None and value > maximum)
    ):
        bound = ">= 0" if maximum is None else f"from 0 to {maximum}"
        raise ValueError(f"{argument} must be an int {bound}, got {value!r}")
    return value


def check_document_id(document_id: object) -> str:
    """`document_id`, unchanged, if it is a str with a non-space character."""
    if not isinstance(document_id, str) or not document_id.strip():
        raise InvalidArgumentError(
            f"document_id must be a non-empty str, got {document_id!r}", argument="document_id"
        )
    return document_id


def check_metadata_filter(metadata_filter: Mapping[str, Any] | None) -> MetadataFilter | None:
    """A copy of `metadata_filter` if every key and value follows the filter rule, else an
    error naming the key."""
    if metadata_filter is None:
        return None
    if not isinstance(metadata_filter, Mapping):
        raise TypeError(f"metadata_filter must be a dict, got {type(metadata_filter).__name__}")
    for key, value in metadata_filter.items():
        if not isinstance(key, str) or not key or any(c in key for c in _KEY_FORBIDDEN):
            raise InvalidArgumentError(
                f"metadata_filter key {key!r} is invalid: use a non-empty str without '\"' or '\\'",
                argument="metadata_filter",
            )
        if value is not None and (
            not isinstance(value, str | int)
            or (isinstance(value, int) and not isinstance(value, bool) and value not in _INT64)
        ):
            raise InvalidArgumentError(
                f"metadata_filter[{key!r}] = {value!r} is not supported: "
                "values must be str, bool, a 64-bit int or None (key absent)",
                argument="metadata_filter",
            )
    return dict(metadata_filter)


def vector_problem(vector: Sequence[float], dimensions: int) -> str | None:
    """Why `vector` does not fit `dimensions` finite numbers, or None when it does."""
    if len(vector) != dimensions:
        return f"has {len(vector)} dimensions, expected {dimensions}"
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
        raise InvalidArgumentError(f"query_vector {problem}", argument="query_vector")
    return [float(value) for value in vector]
