"""Which characters are CJK: the one definition behind the chunker's token estimate and the
BM25 encoder's character bigrams, so both treat the same text as Chinese, Japanese or Korean."""

CJK_CHARACTERS = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0002fa1f"  # Extensions B-F and the compatibility supplement
)
"""The CJK ranges as the body of a regular-expression character class (`[...]`)."""
