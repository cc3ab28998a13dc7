"""OCR of generated scans: PDFParser with Tesseract or RapidOCR vs the engine's own command line.

Run: .venv/bin/python -m benchmarks ocr [--pages 24] [--engines tesseract,rapidocr]

Pages: A4 at 200 dpi, English (DejaVu Sans) and Simplified Chinese (WenQuanYi Micro Hei) at
40 px, clean or noisy (rotated 1.5°, Gaussian blur 1.2), and clean pages with a ruled table;
the text is drawn from templates with seeded numbers, dates and identifiers. "Ours" parses one
image-only PDF of them with `PDFParser(ocr=Ocr(ENGINE))` (no cache); "cli" reads the same pages
as PNG files with the engine's command, once per page. Character accuracy: 1 - edit distance /
length of the truth, whitespace removed from both. Speeds are the best of 2, ours and cli
alternating; peak RSS is a child process parsing the PDF once.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pypdfium2 as pdfium
from _common import write_result
from PIL import Image, ImageDraw, ImageFilter, ImageFont, features

from archivist.message import TextBlock
from archivist.rag import PDFParser
from archivist.rag.parser.ocr import Ocr
from archivist.rag.parser.ocr.reader import EngineChoice

LATIN_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
CJK_FONT = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
SIZE, FONT_PX, LEFT = (1654, 2339), 40, 150
PLAIN = ["-liga"] if features.check("raqm") else None  # "fi", not the ligature "ﬁ"
GROUPS = ("en clean", "en noisy", "zh clean", "zh noisy", "tables")
EN = (
    "Invoice {ref} dated {date} lists {qty} units of the Model {model} at {amount} EUR.",
    "Payment is due within {days} days; late payments accrue interest of {pct}% per month.",
    "The warranty for the {model} pump covers parts and labour for {n} months.",
    "Notice: the {city} office will be closed on {date} while the heating is replaced.",
    "Policy {ref} applies to all staff hired after {date}; the allowance is {amount} a year.",
    "Please quote reference {ref} when you call the service desk on extension {ext}.",
    "Shipment {ref} left the warehouse in {city} on {date} with {qty} pallets.",
    "Claims must be filed within {days} days of a failure, quoting the serial number {model}.",
    "From {date} the parking permit {ref} is valid for {n} vehicles at the {city} site.",
)
ZH = (
    "发票编号{ref}，开票日期{zdate}，共计{qty}件，金额{amount}元。",
    "本公司自{zdate}起实行新的考勤制度，请各部门在{days}天内提交名单。",
    "年度体检安排在{zdate}，地点为{zcity}总部{n}楼会议室。",
    "型号{model}水泵的保修期为{n}个月，故障须在{days}天内报修。",
    "请在联系客服时提供参考号{ref}，服务热线分机{ext}。",
    "根据第{ext}号规定，员工每年享有{n}天带薪年假，逾期作废。",
    "{zcity}仓库将于{zdate}进行盘点，当天暂停发货。",
    "本月水电费合计{amount}元，已于{zdate}从账户中扣除。",
    "自{zdate}起，停车证{ref}可在{zcity}园区停放{n}辆车。",
)
TABLE_HEAD = {"en": ("Item", "Code", "Qty", "Due date"), "zh": ("项目", "编号", "数量", "日期")}
ITEMS = {
    "en": "Office chair,Printer paper,Monitor,Router,Desk lamp,Cable set",
    "zh": "办公椅,打印纸,显示器,路由器,台灯,文件柜",
}
COLUMNS = (480, 320, 200, 354)
TESSERACT = ["tesseract", "PAGE.png", "stdout", "-l", "eng+chi_sim"]
RAPIDOCR = ["python", "-m", "rapidocr_onnxruntime.main", "-img", "PAGE.png"]
CHILD = """import asyncio, json, resource, sys
from archivist.rag import PDFParser
from archivist.rag.parser.ocr import Ocr
data = open(sys.argv[2], "rb").read()
sections = asyncio.run(PDFParser(ocr=Ocr(sys.argv[1])).parse(data, "bench.pdf"))
use = lambda who: resource.getrusage(who).ru_maxrss / 1024
print(json.dumps([use(resource.RUSAGE_SELF), use(resource.RUSAGE_CHILDREN), len(sections)]))
"""
RAPID_API = "import sys, rapidocr_onnxruntime as r; e = r.RapidOCR(); [e(p) for p in sys.argv[1:]]"


def fields(rng: random.Random) -> dict[str, object]:
    y, m, d = rng.randint(2019, 2026), rng.randint(1, 12), rng.randint(1, 28)
    return {
        "date": f"{y}-{m:02d}-{d:02d}",
        "zdate": f"{y}年{m}月{d}日",
        "model": f"{rng.choice('XKMRT')}-{rng.randrange(100, 990, 10)}",
        "ref": f"{rng.choice(('INV', 'PO', 'REF', 'TCK'))}-{y}-{rng.randint(1, 9999):04d}",
        "qty": rng.randint(2, 480),
        "amount": f"{rng.randint(100, 99999):,}.{rng.randint(0, 99):02d}",
        "days": rng.choice((7, 10, 14, 30, 45, 60)),
        "pct": rng.choice(("0.5", "1.5", "2", "3.25")),
        "ext": rng.randint(2000, 8999),
        "n": rng.randint(2, 12),
        "city": rng.choice(("Rotterdam", "Leeds", "Lyon", "Gdansk", "Porto")),
        "zcity": rng.choice(("上海", "杭州", "成都", "深圳", "武汉")),
    }


def text(rng: random.Random, lang: str, count: int) -> str:
    chosen = rng.sample(EN if lang == "en" else ZH, count)
    return ("" if lang == "zh" else " ").join(t.format(**fields(rng)) for t in chosen)


def wrap(text: str, lang: str, font: ImageFont.FreeTypeFont) -> list[str]:
    """Lines within the margins: words (Chinese: characters and Latin runs, with the
    punctuation after them, so no line starts with it) as far as they fit."""
    tokens = re.findall(r"[!-~]+[，。]?|\S[，。]?", text) if lang == "zh" else text.split()
    space = "" if lang == "zh" else " "
    lines: list[str] = []
    for token in tokens:
        if lines and font.getlength(lines[-1] + space + token) <= SIZE[0] - 2 * LEFT:
            lines[-1] += space + token
        else:
            lines.append(token)
    return lines


def make_page(index: int, rng: random.Random) -> tuple[str, Image.Image, str]:
    """Page `index`: its group, its picture and the text on it."""
    group = GROUPS[index % len(GROUPS)]
    lang = "zh" if group.startswith("zh") or (group == "tables" and index % 2) else "en"
    font = ImageFont.truetype(CJK_FONT if lang == "zh" else LATIN_FONT, FONT_PX)
    image = Image.new("L", SIZE, 255)
    draw = ImageDraw.Draw(image)
    truth: list[str] = []
    y = 150

    def paragraph(text: str) -> None:
        nonlocal y
        for line in wrap(text, lang, font):
            draw.text((LEFT, y), line, fill=0, font=font, features=PLAIN)
            y += int(FONT_PX * 1.6)
        truth.append(text)
        y += FONT_PX

    if group == "tables":
        paragraph(text(rng, lang, 2))
        rows: list[tuple[str, ...]] = [TABLE_HEAD[lang]]
        for item in rng.sample(ITEMS[lang].split(","), 5):
            rows.append((item, *"{model} {qty} {date}".format(**fields(rng)).split()))
        edges = [LEFT + sum(COLUMNS[:i]) for i in range(len(COLUMNS) + 1)]
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                draw.text((edges[c] + 16, y + r * 80 + 18), cell, fill=0, font=font, features=PLAIN)
            truth.append(" ".join(row))
        for r in range(len(rows) + 1):  # the rules
            draw.line([(edges[0], y + r * 80), (edges[-1], y + r * 80)], fill=0, width=2)
        for x in edges:
            draw.line([(x, y), (x, y + len(rows) * 80)], fill=0, width=2)
        y += len(rows) * 80 + FONT_PX
        paragraph(text(rng, lang, 2))
    else:
        for _ in range(3):
            paragraph(text(rng, lang, 4))
    if group.endswith("noisy"):
        image = image.rotate(1.5, fillcolor=255, resample=Image.Resampling.BICUBIC)
        image = image.filter(ImageFilter.GaussianBlur(1.2))
    return group, image, "\n".join(truth)


def distance(a: str, b: str) -> int:
    """Levenshtein edit distance (no such library in the venv)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[-1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def accuracy(truth: str, text: str) -> float:
    expected, found = re.sub(r"\s+", "", truth), re.sub(r"\s+", "", text)
    return max(0.0, 1 - distance(expected, found) / len(expected))


def ours(engine: str, pdf: bytes, pages: int) -> list[str]:
    sections = asyncio.run(PDFParser(ocr=Ocr(cast(EngineChoice, engine))).parse(pdf, "bench.pdf"))
    texts = [""] * pages
    for section in sections:
        assert isinstance(section.content, TextBlock)
        texts[int(section.metadata["page"]) - 1] = section.content.text
    return texts


def cli(engine: str, paths: list[str]) -> list[str]:
    texts = []
    for path in paths:
        command = TESSERACT if engine == "tesseract" else [sys.executable, *RAPIDOCR[1:]]
        command = [path if arg == "PAGE.png" else arg for arg in command]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        if engine == "tesseract":
            texts.append(done.stdout)
        else:  # it logs the list of [box, text, score] (or None) on stderr
            logged = done.stderr.split("RapidOCR - INFO: ", 1)[1].splitlines()[0]
            texts.append("\n".join(text for _, text, _ in ast.literal_eval(logged) or []))
    return texts


def scores(groups: list[str], truths: list[str], texts: list[str]) -> dict[str, Any]:
    each = [accuracy(t, o) for t, o in zip(truths, texts, strict=True)]
    by = {g: [a for a, h in zip(each, groups, strict=True) if h == g] for g in GROUPS}
    means = {g: round(sum(v) / len(v), 4) for g, v in by.items() if v}
    pages = [round(a, 3) for a in each]
    return {"overall": round(sum(each) / len(each), 4), **means, "pages": pages}


def measure(
    engine: str, pdf_path: str, pngs: list[str], groups: list[str], truths: list[str]
) -> dict[str, Any]:
    pdf, n = Path(pdf_path).read_bytes(), len(pngs)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, engine, pdf_path], capture_output=True, text=True, check=True
    )
    self_rss, engine_rss, _ = json.loads(child.stdout)
    best: dict[str, float] = {}
    texts: dict[str, list[str]] = {}
    runs: dict[str, Callable[[], Any]] = {
        "ours": lambda: ours(engine, pdf, n),
        "cli": lambda: cli(engine, pngs),
    }
    if engine == "rapidocr":  # its command loads the models for every page; the API once
        api = [sys.executable, "-c", RAPID_API, *pngs]
        runs["api"] = lambda: subprocess.run(api, capture_output=True, check=True)
    for _ in range(2):
        for name, run in runs.items():
            start = time.perf_counter()
            texts[name] = run()
            seconds = time.perf_counter() - start
            best[name] = min(seconds, best.get(name, seconds))
            print(f"  {engine} {name}: {seconds:.1f} s", flush=True)
    result = {
        "cli": " ".join(TESSERACT if engine == "tesseract" else RAPIDOCR),
        "accuracy": {name: scores(groups, truths, texts[name]) for name in ("ours", "cli")},
        "ours_pages_per_s": round(n / best["ours"], 3),
        "cli_pages_per_s": round(n / best["cli"], 3),
        "ratio": round(best["cli"] / best["ours"], 3),
        "peak_rss_mib": round(self_rss, 1),
        "engine_peak_rss_mib": round(engine_rss, 1) if engine_rss else None,
    }
    if "api" in best:
        result["api_pages_per_s"] = round(n / best["api"], 3)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--engines", default="tesseract,rapidocr")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    rng = random.Random(args.seed)
    made = [make_page(i, rng) for i in range(args.pages)]
    groups, images, truths = [m[0] for m in made], [m[1] for m in made], [m[2] for m in made]
    command = ["python -m benchmarks ocr", *(sys.argv[1:] if argv is None else argv)]
    result: dict[str, Any] = {
        "command": " ".join(command),
        "pages": args.pages,
        "groups": {g: groups.count(g) for g in GROUPS},
        "cores": os.cpu_count(),
        "engines": {},
    }
    with tempfile.TemporaryDirectory() as folder:
        buffer = io.BytesIO()
        images[0].save(
            buffer, format="PDF", save_all=True, append_images=images[1:], resolution=200
        )
        pdf_path = f"{folder}/bench.pdf"
        Path(pdf_path).write_bytes(buffer.getvalue())
        # Pillow stores the pages as JPEG: the PNGs are the PDF's pages as PDFParser renders
        # them (200 dpi, grayscale), so both paths read the same pixels.
        pngs = [f"{folder}/page-{i:02d}.png" for i in range(args.pages)]
        document = pdfium.PdfDocument(buffer.getvalue())
        for page, path in zip(document, pngs, strict=True):
            page.render(scale=200 / 72, grayscale=True).to_pil().save(path, dpi=(200, 200))
        for engine in engines:
            print(f"[{engine}] {args.pages} pages", flush=True)
            result["engines"][engine] = measure(engine, pdf_path, pngs, groups, truths)
    print(f"\n{'engine':<10} path  overall " + " ".join(f"{g:>8}" for g in GROUPS) + " pages/s")
    for engine, r in result["engines"].items():
        for name in ("ours", "cli"):
            a, speed = r["accuracy"][name], r[f"{name}_pages_per_s"]
            cells = " ".join(f"{a.get(g, 0):>8.3f}" for g in GROUPS)
            print(f"{engine:<10} {name:<5} {a['overall']:>7.3f} {cells} {speed:>7.2f}")
        rss = f"{r['peak_rss_mib']} MiB, engine processes {r['engine_peak_rss_mib']} MiB"
        print(f"{engine}: ours/cli {r['ratio']}; parse peak RSS {rss}")
    write_result("ocr", result)


if __name__ == "__main__":
    main()
