"""Why `neardup dedup`'s noisy-text hint is silent on real OCR, and a sign that is not.

    python -m experiments.ocr_languages.noise_hint_probe   # results/noise_hint_probe.json

The hint counts *broken tokens* (a digit between letters, two scripts in one word:
neardup.text.noise_signal). Tesseract rarely makes those; it glues punctuation between
letters ("ta'opcja.jęst", "grof'utuchomi") and swaps letters. This probe measures, per
language, the broken-token share and the share of tokens with punctuation glued between
two letters (apostrophes and hyphens excluded: "l'ordre", "well-known") on clean text
(the set's own source chunks) and on multi-ocr's validation split, and on three labelled
sets' validation splits. A probe, not a shipped signal: its cut-off would have to be
chosen as decision 0021's was (clean text of every language against noisy validation
splits).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from neardup.datasets.ocr import OCR_LANGUAGES, source_documents
from neardup.text.noise_signal import broken_token_share

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "results" / "noise_hint_probe.json"
_TOKEN = re.compile(r"[^\W_]+")
_GLUED = re.compile(r"[^\W\d_][.,;:“”„‘\"|»«©®°•*][^\W\d_]")


def glued_share(texts: list[str]) -> float:
    joined = "\n".join(texts)
    tokens = sum(1 for _ in _TOKEN.finditer(joined))
    return sum(1 for _ in _GLUED.finditer(joined)) / max(1, tokens)


def _row(texts: list[str]) -> dict:
    return {"docs": len(texts), "glued": round(glued_share(texts), 5),
            "broken": round(broken_token_share(texts), 5)}


def main() -> None:
    ocr = [json.loads(line) for line in
           gzip.open(ROOT / "data" / "multi-ocr" / "validation.jsonl.gz", "rt", encoding="utf-8")]
    out: dict = {"clean": {}, "multi-ocr validation": {}, "labelled sets (validation)": {}}
    for lang in OCR_LANGUAGES:
        out["clean"][lang] = _row([d["text"] for d in source_documents(lang, Path("/usr/share/man"))])
        out["multi-ocr validation"][lang] = _row([r["text"] for r in ocr if r["lang"] == lang])
    for name in ("reuters-news", "indep-noisocr", "multi-latin"):
        path = ROOT / "data" / name / "validation.jsonl.gz"
        texts = [json.loads(line)["text"] for line in gzip.open(path, "rt", encoding="utf-8")]
        out["labelled sets (validation)"][name] = _row(texts)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
