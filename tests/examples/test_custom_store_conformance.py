"""The example's InMemoryVectorStore against the VectorStoreBase conformance suite.

A few cases of the suite check limits that come from Qdrant or the file system rather than
from the VectorStoreBase contract; an in-memory store has no reason to refuse those inputs,
so those cases are skipped here (with the reason) instead of being imitated.
"""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from conformance import VectorStoreConformance
from custom_components import InMemoryVectorStore

# test name -> (parameter, values for which the case does not apply, why)
QDRANT_ONLY: dict[str, tuple[str, list[Any], str]] = {
    "test_unsafe_collection_names_are_rejected": (
        "name",
        [".", "..", "a/b", "a b", "../up", "x" * 256],
        "QdrantStore keeps a collection in a directory named after it; "
        "an in-memory dict key can be any non-empty string",
    ),
    "test_unsupported_filter_keys_are_rejected": (
        "bad_key",
        ['say "hi"', "back\\slash"],
        "quotes and backslashes break Qdrant's JSON payload paths; "
        "a Python dict lookup takes any key",
    ),
    "test_unsupported_filter_values_are_rejected_naming_the_key": (
        "bad_filter",
        [{"k": 2**63}],
        "Qdrant's integer payload index is 64-bit; Python ints compare at any size",
    ),
}


@pytest.fixture
async def store() -> AsyncIterator[InMemoryVectorStore]:
    async with InMemoryVectorStore() as opened:
        yield opened


class TestInMemoryVectorStore(VectorStoreConformance):
    """Every conformance test against the store written in examples/custom_components.py."""

    @pytest.fixture(autouse=True)
    def _skip_qdrant_only_cases(self, request: pytest.FixtureRequest) -> None:
        callspec = getattr(request.node, "callspec", None)
        if callspec is None or request.node.originalname not in QDRANT_ONLY:
            return
        parameter, values, reason = QDRANT_ONLY[request.node.originalname]
        if callspec.params.get(parameter) in values:
            pytest.skip(f"Qdrant-specific: {reason}")


def test_the_skipped_cases_exist_in_the_suite() -> None:
    """A renamed suite test must not silently turn a skip into a no-op."""
    for name in QDRANT_ONLY:
        assert hasattr(VectorStoreConformance, name), name
