"""Checks tool arguments against a JSON schema (Draft 2020-12) with the `jsonschema` library."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator


def schema_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Everything wrong with `value`, each message starting with the path of the argument."""
    return [
        f"{error.json_path.removeprefix('$').removeprefix('.') or 'arguments'}: {error.message}"
        for error in _validator(schema).iter_errors(value)
    ]


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator for `schema`, reused across calls when the schema is plain JSON."""
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return Draft202012Validator(schema)
    return _cached_validator(key)


@lru_cache(maxsize=256)
def _cached_validator(key: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(key))
