"""`ModelTokenizer`: a local model's own tokenizer, for chunking and for coverage checks."""

from __future__ import annotations

import os
from typing import Any

from tokenizers import Encoding, Tokenizer

from archivist.errors import InvalidArgumentError


class ModelTokenizer:
    """Token spans and unknown-token share of texts, as the embedding model will see them.

    `max_tokens` is the model's input length minus its special tokens and document prefix: a
    text of at most that many tokens is embedded whole.

    One made `from_file` pickles as that file's path, so sending it to a child process costs
    a few bytes rather than its whole vocabulary (hundreds of KB, serialised while holding
    the GIL); the pickle loads where that file is.
    """

    def __init__(self, tokenizer: Tokenizer, max_length: int, document_prefix: str = "") -> None:
        _unpadded(tokenizer)
        self._tokenizer = tokenizer
        self._path: str | None = None
        overhead = len(tokenizer.encode(document_prefix, add_special_tokens=True).ids)
        if overhead >= max_length:
            raise InvalidArgumentError(
                f"the document prefix fills the model's {max_length} input tokens",
                argument="document_prefix",
            )
        self._max_tokens = max_length - overhead
        unknown = getattr(tokenizer.model, "unk_token", None)
        self._unknown_id = tokenizer.token_to_id(unknown) if isinstance(unknown, str) else None

    @classmethod
    def from_file(cls, path: str, max_length: int, document_prefix: str = "") -> ModelTokenizer:
        """The tokenizer in `tokenizer.json` at `path`."""
        made = cls(Tokenizer.from_file(path), max_length, document_prefix)
        made._path = os.path.abspath(path)  # a pickle may load under another working directory
        return made

    def __getstate__(self) -> dict[str, Any]:
        if self._path is None:
            return dict(self.__dict__)
        return {
            "_path": self._path,
            "_max_tokens": self._max_tokens,
            "_unknown_id": self._unknown_id,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "_tokenizer" not in state:
            state = {**state, "_tokenizer": _unpadded(Tokenizer.from_file(state["_path"]))}
        self.__dict__.update(state)

    @property
    def max_tokens(self) -> int:
        """The most tokens of text one input may hold."""
        return self._max_tokens

    def spans(self, text: str) -> list[tuple[int, int]]:
        """`(start, end)` character offsets of each token of `text`, without special tokens."""
        return list(self._encode(text).offsets)

    def unknown_words(self, text: str) -> tuple[int, int]:
        """`(unknown, words)`: of `text`'s word tokens (those holding a letter or a digit), how
        many the vocabulary does not know, and how many there are. Symbols, emoji and box
        drawing the vocabulary lacks are not text the model fails to read, so they count in
        neither."""
        if self._unknown_id is None:
            return 0, 0
        encoding = self._encode(text)
        unknown = words = 0
        for token, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
            if any(character.isalnum() for character in text[start:end]):
                words += 1
                unknown += token == self._unknown_id
        return unknown, words

    def unknown_share(self, text: str) -> float:
        """The share of `text`'s words the vocabulary does not know (`unknown_words`; 0 for
        text without a word)."""
        unknown, words = self.unknown_words(text)
        return unknown / words if words else 0.0

    def _encode(self, text: str) -> Encoding:
        # A batch of one: the library's `encode` holds the GIL for the whole text, its batch
        # call releases it, so a thread chunking a large file leaves the event loop running.
        return self._tokenizer.encode_batch([text], add_special_tokens=False)[0]


def _unpadded(tokenizer: Tokenizer) -> Tokenizer:
    """`tokenizer` set to encode each text whole: no padding, no truncation."""
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer
