"""How a store keeps the dense vectors of the collections it creates: float16 halves their
memory and disk and keeps cosine similarities to about 1e-3 of float32's."""

from __future__ import annotations

from typing import Literal, get_args

from archivist.errors import InvalidArgumentError

VectorDatatype = Literal["float16", "float32"]
VECTOR_DATATYPES: tuple[VectorDatatype, ...] = get_args(VectorDatatype)

DEFAULT_VECTOR_DATATYPE: VectorDatatype = "float16"
"""New collections store their dense vectors as float16 unless told otherwise: half the memory
and disk of float32, and cosine similarities that differ by about 1e-3."""


def check_vector_datatype(value: object) -> VectorDatatype:
    """`value` if it names a vector datatype; an error naming `vector_datatype` otherwise."""
    for datatype in VECTOR_DATATYPES:
        if value == datatype:
            return datatype
    raise InvalidArgumentError(
        f"vector_datatype must be one of {', '.join(map(repr, VECTOR_DATATYPES))}; got {value!r}",
        argument="vector_datatype",
    )
