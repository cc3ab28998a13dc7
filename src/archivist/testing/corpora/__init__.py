"""Small corpora with questions, for checking retrieval in tests and benchmarks.

Each holds documents (id -> text) and questions (text -> the id of the one document that
answers it):

- `numbers`: English notes that differ only by their numbers (ports, status codes, RFCs,
  years, part numbers, versions, dates, amounts);
- `identifiers`: notes naming flags, API names, error codes and environment variables, each
  beside a look-alike;
- `zh_topics`: Chinese documents on distinct topics, asked in other words than the text's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Literal

CorpusName = Literal["numbers", "identifiers", "zh_topics"]
CORPORA: tuple[CorpusName, ...] = ("numbers", "identifiers", "zh_topics")


@dataclass(frozen=True)
class Corpus:
    """Documents by id, and each question with the id of the document that answers it."""

    name: str
    documents: dict[str, str]
    questions: dict[str, str]


def load_corpus(name: CorpusName) -> Corpus:
    """The corpus `name` (one of `CORPORA`)."""
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; known: {', '.join(CORPORA)}")
    raw = json.loads(resources.files(__name__).joinpath(f"{name}.json").read_text("utf-8"))
    questions = raw["questions"]
    if name == "zh_topics":  # stored as document id -> question
        questions = {question: document for document, question in questions.items()}
    return Corpus(name, dict(raw["documents"]), dict(questions))
