"""Document attributes: small key/value pairs a caller attaches to a file, stamped on every
chunk of its document so searches filter on them in the store.

Each attribute is kept in chunk metadata under `attr_` + its key, apart from the metadata the
service writes itself (path, tenant, hashes), so no attribute can stand in for those.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from archivist.service.errors import InvalidRequest

PREFIX = "attr_"
MAX_ATTRIBUTES = 16
MAX_VALUE_CHARS = 512
KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""An attribute key: letters, digits, '_' and '-', as a store filter can name it."""

AttributeValue = str | int | float | bool


def check_attributes(
    attributes: Mapping[str, Any] | None, param: str = "attributes"
) -> dict[str, AttributeValue]:
    """`attributes` if they follow the rules (at most 16 keys of `KEY`, values strings of at
    most 512 characters, finite numbers or booleans), else InvalidRequest naming the key."""
    if attributes is None:
        return {}
    if not isinstance(attributes, Mapping):
        raise InvalidRequest(f"{param} must be an object", argument=param)
    if len(attributes) > MAX_ATTRIBUTES:
        raise InvalidRequest(
            f"{param} has {len(attributes)} keys; at most {MAX_ATTRIBUTES}", argument=param
        )
    checked: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise InvalidRequest(
                f"{param} key {key!r}: use 1 to 64 letters, digits, '_' or '-'", argument=param
            )
        if isinstance(value, str):
            if len(value) > MAX_VALUE_CHARS:
                raise InvalidRequest(
                    f"{param}[{key!r}] is longer than {MAX_VALUE_CHARS} characters", argument=param
                )
        elif isinstance(value, bool):
            pass
        elif isinstance(value, int | float):
            if not math.isfinite(value) or (isinstance(value, int) and abs(value) >= 2**63):
                raise InvalidRequest(f"{param}[{key!r}] is not a finite number", argument=param)
        else:
            raise InvalidRequest(
                f"{param}[{key!r}] must be a string, a number or a boolean", argument=param
            )
        checked[key] = value
    return checked


def chunk_metadata(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """`attributes` as the chunk metadata they are stamped as."""
    return {PREFIX + key: value for key, value in attributes.items()}


def metadata_key(key: str) -> str:
    """The chunk metadata key attribute `key` is kept under."""
    return PREFIX + key


def attributes_of(metadata: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The attributes among a chunk's `metadata`."""
    return {
        key.removeprefix(PREFIX): value for key, value in metadata.items() if key.startswith(PREFIX)
    }
