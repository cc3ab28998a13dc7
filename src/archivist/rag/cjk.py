"""Which characters are CJK: the one definition behind the chunker's token estimate, the BM25
encoder's character bigrams and OCR's spacing, so all treat the same text as Chinese,
Japanese or Korean."""

import re

_KANA = "\u3040-\u30ff"  # Hiragana, Katakana
_HAN = (
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
)
_HANGUL = "\uac00-\ud7af"  # Hangul syllables
_HAN_SUPPLEMENT = "\U00020000-\U0002fa1f"  # Extensions B-F and the compatibility supplement

CJK_CHARACTERS = _KANA + _HAN + _HANGUL + _HAN_SUPPLEMENT
"""The CJK ranges as the body of a regular-expression character class (`[...]`)."""

UNSPACED_CHARACTERS = (
    _KANA + _HAN + _HAN_SUPPLEMENT + "\u3000-\u303f"  # CJK punctuation
    "\uff00-\uffef"  # full-width forms
)
"""Chinese and Japanese characters and their punctuation, written without spaces between
them (Korean, written with spaces, is not among them), as a character class's body."""


_CJK_CHARACTER = re.compile(f"[{CJK_CHARACTERS}]")


def mostly_cjk(text: str) -> bool:
    """Whether at least half of `text`'s letters and digits are CJK characters."""
    letters = sum(character.isalnum() for character in text)
    return letters > 0 and 2 * len(_CJK_CHARACTER.findall(text)) >= letters
