"""`SearchFilter`: what a search is narrowed to, as a store-neutral value.

Each store translates it into its native filter (Qdrant: payload conditions on indexed fields;
path globs are resolved against the distinct paths stored, then matched by value), so the
engine filters before ranking and `top_k` hits still come back. Its `match` is a boolean tree
of comparisons on chunk metadata (`Compare` in `AllOf` / `AnyOf` groups), bounded in depth and
size so any filter stays cheap to run. The parsers here read the command-line and request forms
(`KEY=VALUE`, `KEY>=VALUE`, dates) with errors naming the argument.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime
from fnmatch import fnmatchcase
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from archivist.errors import InvalidArgumentError
from archivist.validation import check_metadata_filter

MODIFIED_KEY = "modified"
"""Chunk metadata key holding the file's modification time (ISO 8601), written at indexing."""
INDEXED_AT_KEY = "indexed_at"
"""Chunk metadata key holding when the file was indexed (ISO 8601)."""
PATH_KEY = "path"
"""Chunk metadata key holding the indexed file's path."""

Bound = float | datetime
_EXTENSION = re.compile(r"[A-Za-z0-9_+-]{1,16}")


class Range(BaseModel):
    """Bounds on a number or a date (ISO 8601; a date without time zone is UTC)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gte: Bound | None = None
    gt: Bound | None = None
    lte: Bound | None = None
    lt: Bound | None = None

    @field_validator("gte", "gt", "lte", "lt", mode="before")
    @classmethod
    def _bound(cls, value: object) -> object:
        if value is None or isinstance(value, datetime):
            return _aware(value) if isinstance(value, datetime) else None
        if isinstance(value, bool):
            raise ValueError(f"a range bound must be a number or a date, not {value!r}")
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        if isinstance(value, str):
            return parse_bound(value)
        raise ValueError(f"a range bound must be a number or a date, not {value!r}")

    @model_validator(mode="after")
    def _consistent(self) -> Range:
        bounds = [b for b in (self.gte, self.gt, self.lte, self.lt) if b is not None]
        if not bounds:
            raise ValueError("a range needs at least one of gte, gt, lte, lt")
        if len({isinstance(b, datetime) for b in bounds}) > 1:
            raise ValueError("a range's bounds must be all numbers or all dates")
        return self

    @property
    def is_dates(self) -> bool:
        """Whether the bounds are dates (else numbers)."""
        return any(isinstance(b, datetime) for b in (self.gte, self.gt, self.lte, self.lt))


Scalar = str | int | float | bool
"""A value a comparison tests against (bool is not a number)."""
Operator = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"]
RANGE_OPERATORS = frozenset({"gt", "gte", "lt", "lte"})
"""The operators that compare numbers by size."""
MAX_MATCH_DEPTH = 8
"""The most groups a `match` condition nests (a lone comparison has depth 0)."""
MAX_MATCH_COMPARISONS = 64
"""The most comparisons one `match` condition holds."""
_UNFILTERABLE = re.compile(r"[.\[\]\s]")
_INT64 = range(-(2**63), 2**63)


class Compare(BaseModel):
    """Chunk metadata at `key` compared with `value` by `op`.

    - eq / ne: the stored value has the same JSON type and value (bool is not a number; numbers
      compare as numbers, so 1 equals 1.0); a list-valued field equals `value` when one of its
      items does. ne is "not eq": true also when the key is absent (or null).
    - in: eq with one of the values of the (non-empty) list, whose types may mix; nin is
      "not in", true also when the key is absent.
    - gt / gte / lt / lte: the stored value (or, for a list, one of its items) is a number in
      that relation to `value` (a number, not a bool); other values and absent keys never match.
      (Qdrant compares numbers as 64-bit floats, so ints beyond 2**53 compare as the float
      nearest them there.)

    `key` is a top-level metadata key: a non-empty str without '"', '\\', '.', '[', ']' or
    whitespace.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    op: Operator
    value: Scalar | tuple[Scalar, ...]

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, key: object) -> object:
        if not isinstance(key, str) or _UNFILTERABLE.search(key) or not _plain_key(key):
            raise ValueError(
                f"match key {key!r} is invalid: use a non-empty str without '\"', '\\', '.', "
                "'[', ']' or whitespace"
            )
        return key

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, value: object) -> object:
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if not _is_scalar(item):
                raise ValueError(
                    f"match value {item!r} is not supported: use a str, a finite number, "
                    "a bool, or a list of them"
                )
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _fits_the_operator(self) -> Compare:
        listed = isinstance(self.value, tuple)
        if self.op in RANGE_OPERATORS and (listed or isinstance(self.value, bool | str)):
            problem = "needs a number"
        elif self.op in ("in", "nin") and not (listed and self.value):
            problem = "needs a non-empty list"
        elif self.op in ("eq", "ne") and listed:
            problem = "needs a single value, not a list (use in / nin)"
        else:
            return self
        raise ValueError(f"match on {self.key!r}: {self.op} {problem}, got {self.value!r}")

    @property
    def values(self) -> tuple[Scalar, ...]:
        """`value` as a tuple (one item unless the operator is in / nin)."""
        return self.value if isinstance(self.value, tuple) else (self.value,)


def _plain_key(key: str) -> bool:
    """Whether `key` passes the rule of metadata filter keys."""
    try:
        check_metadata_filter({key: None})
    except InvalidArgumentError:
        return False
    return True


def _is_scalar(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value in _INT64
    return isinstance(value, str | bool)


class AllOf(BaseModel):
    """Every condition of `all` holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    all: tuple[Condition, ...] = Field(min_length=1, max_length=MAX_MATCH_COMPARISONS)

    @model_validator(mode="after")
    def _bounded(self) -> AllOf:
        check_bounds(self)
        return self

    @property
    def parts(self) -> tuple[Condition, ...]:
        """The conditions grouped."""
        return self.all


class AnyOf(BaseModel):
    """At least one condition of `any` holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    any: tuple[Condition, ...] = Field(min_length=1, max_length=MAX_MATCH_COMPARISONS)

    @model_validator(mode="after")
    def _bounded(self) -> AnyOf:
        check_bounds(self)
        return self

    @property
    def parts(self) -> tuple[Condition, ...]:
        """The conditions grouped."""
        return self.any


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "all" if "all" in value else "any" if "any" in value else "compare"
    return "all" if isinstance(value, AllOf) else "any" if isinstance(value, AnyOf) else "compare"


Condition = Annotated[
    Annotated[Compare, Tag("compare")]
    | Annotated[AllOf, Tag("all")]
    | Annotated[AnyOf, Tag("any")],
    Discriminator(_kind),
]
"""A boolean condition on chunk metadata: a comparison, or a group of conditions (`{"all":
[...]}`, `{"any": [...]}`) nested at most MAX_MATCH_DEPTH deep, with at most
MAX_MATCH_COMPARISONS comparisons in all."""

AllOf.model_rebuild()
AnyOf.model_rebuild()


def check_bounds(condition: Compare | AllOf | AnyOf) -> None:
    """Raise a ValueError when `condition` nests too deep or holds too many comparisons."""
    depth, comparisons = _size(condition)
    if depth > MAX_MATCH_DEPTH:
        raise ValueError(f"match nests {depth} groups deep; at most {MAX_MATCH_DEPTH} are allowed")
    if comparisons > MAX_MATCH_COMPARISONS:
        raise ValueError(
            f"match holds {comparisons} comparisons; at most {MAX_MATCH_COMPARISONS} are allowed"
        )


def _size(condition: Compare | AllOf | AnyOf) -> tuple[int, int]:
    """(groups nested, comparisons) of `condition`."""
    if isinstance(condition, Compare):
        return 0, 1
    sizes = [_size(part) for part in condition.parts]
    return 1 + max(depth for depth, _ in sizes), sum(count for _, count in sizes)


class SearchFilter(BaseModel):
    """What to search within; every part given must hold (none given: everything).

    - `paths`: globs, any of which the document's `path` metadata or its `source` matches
      (a glob without "/" is matched against the file name: "*.md", "tar*"; with "/" against
      the whole path, "*" crossing "/": "/usr/share/doc/*", "*/man1/*").
    - `types`: file extensions ("md", ".PDF"), any of which the file name ends with.
    - `since`: the file was modified (`modified` metadata; `indexed_at` for chunks indexed
      without it) at or after this time.
    - `where`: metadata `{key: value}` equality (str, bool, 64-bit int, or None for "absent")
      or `{key: Range}` bounds on numbers or dates.
    - `match`: a `Condition` tree (comparisons in all / any groups) on chunk metadata.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    since: datetime | None = None
    where: dict[str, str | int | bool | Range | None] = {}
    match: Condition | None = None

    @field_validator("paths", mode="before")
    @classmethod
    def _paths(cls, value: object) -> object:
        values = [value] if isinstance(value, str) else value
        if isinstance(values, list | tuple):
            for glob in values:
                if not isinstance(glob, str) or not glob.strip() or "\x00" in glob:
                    raise ValueError(f"path glob {glob!r} must be a non-empty string")
        return values

    @field_validator("types", mode="before")
    @classmethod
    def _types(cls, value: object) -> object:
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list | tuple):
            return values
        checked = []
        for extension in values:
            text = extension.removeprefix(".") if isinstance(extension, str) else ""
            if not _EXTENSION.fullmatch(text):
                raise ValueError(
                    f"type {extension!r} is not a file extension (letters and digits, e.g. md)"
                )
            checked.append(text.lower())
        return checked

    @field_validator("since", mode="before")
    @classmethod
    def _since(cls, value: object) -> object:
        if isinstance(value, str):
            bound = parse_bound(value)
            if not isinstance(bound, datetime):
                raise ValueError(f"since must be a date like 2024-05-01, got {value!r}")
            return bound
        if isinstance(value, datetime):
            return _aware(value)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        return value

    @field_validator("where", mode="before")
    @classmethod
    def _where(cls, value: object) -> object:
        if not isinstance(value, dict):
            return value
        equal = {k: v for k, v in value.items() if not isinstance(v, Range | dict)}
        check_metadata_filter(equal)
        check_metadata_filter({k: "" for k in value})
        return value

    @property
    def is_empty(self) -> bool:
        """Whether it lets everything through."""
        return not (self.paths or self.types or self.since or self.where or self.match)

    def path_matches(self, value: str) -> bool:
        """Whether a stored `path` or `source` value satisfies `paths` and `types`."""
        name = value.replace("\\", "/").rsplit("/", 1)[-1]
        if self.types and not any(name.lower().endswith(f".{t}") for t in self.types):
            return False
        return not self.paths or any(_glob_matches(glob, value, name) for glob in self.paths)


def _glob_matches(glob: str, value: str, name: str) -> bool:
    if "/" not in glob:
        return fnmatchcase(name, glob)
    if glob.endswith("/"):
        glob += "*"
    if not glob.startswith(("/", "*")):
        return fnmatchcase(value, glob) or fnmatchcase(value, f"*/{glob}")
    return fnmatchcase(value, glob)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_bound(text: str) -> Bound:
    """A number, or an ISO 8601 date or date-time (UTC unless it says otherwise)."""
    stripped = text.strip()
    try:
        number = float(stripped)
    except ValueError:
        pass
    else:
        if not math.isfinite(number):
            raise ValueError(f"{text!r} is not a usable number")
        return number
    try:
        return _aware(datetime.fromisoformat(stripped))
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a number nor a date (use e.g. 2024-05-01 or "
            "2024-05-01T12:00:00+02:00)"
        ) from None


_COMPARISON = re.compile(r"^([^<>=!]+?)\s*(>=|<=|>|<|=)\s*(.*)$", re.DOTALL)
_RANGE_OF = {">=": "gte", ">": "gt", "<=": "lte", "<": "lt"}


def parse_where(expressions: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` (VALUE as JSON when it parses: 3, true, "2020"; else the text) and
    `KEY>=VALUE`, `KEY<VALUE`, ... (numbers or dates), combined per key, as `where`."""
    where: dict[str, Any] = {}
    for expression in expressions:
        found = _COMPARISON.match(expression)
        if found is None or not found.group(3):
            raise ValueError(
                f"--where {expression!r}: use KEY=VALUE, or KEY>=VALUE / KEY<VALUE ... "
                "for numbers and dates"
            )
        key, operator, raw = found.group(1).strip(), found.group(2), found.group(3).strip()
        if operator == "=":
            if key in where:
                raise ValueError(f"--where {expression!r}: {key!r} is already given")
            where[key] = _equality_value(raw)
            continue
        try:
            bound = parse_bound(raw)
        except ValueError as error:
            raise ValueError(f"--where {expression!r}: {error}") from None
        existing = where.setdefault(key, {})
        if not isinstance(existing, dict):
            raise ValueError(f"--where {expression!r}: {key!r} is already given with '='")
        existing[_RANGE_OF[operator]] = bound
    return where


def _equality_value(raw: str) -> str | int | bool:
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(value, str | bool) or (isinstance(value, int) and -(2**63) <= value < 2**63):
        return value
    return raw
