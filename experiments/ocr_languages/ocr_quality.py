"""How well Tesseract read each language: character error rate of the unedited copies.

    python -m experiments.ocr_languages.ocr_quality --set data/multi-ocr-es-bg --tag=-es-bg

For every copy without a reprint edit (``kind`` reprint, no abridge / drop_lead /
change_first_line), the Levenshtein distance between its OCR text and its source chunk
(:func:`neardup.datasets.ocr.source_documents` on this machine), both with whitespace
collapsed, over the source's length. The source chunks are rebuilt from the installed
packages, whose chunk list (and so the ``source`` numbering) can differ from the build
machine's (data/multi-ocr: pl, de, cs, fr here): a copy is matched to the chunk its
``source`` names when their error rate is at most 0.6, else to the language's closest
chunk when that is at most 0.6, else counted as unmatched and left out (a page read too
badly to recognise, or a chunk not on this machine). The same rule for every language,
so the figures are comparable, but they leave out the worst readings: see ``unmatched``.
Results: results/ocr-quality<tag>.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

from experiments.ocr_languages.per_language import _EDITS, RESULTS, ROOT


def _norm(text: str) -> str:
    return " ".join(text.split())


MATCH = 0.6


def _rate(text: str, source: str | None) -> float | None:
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance(text, source) / len(source) if source else None


def ocr_quality(set_dir: Path, splits=("validation", "test")) -> dict:
    from neardup.datasets.ocr import source_documents

    records = [json.loads(line) for split in splits
               for line in gzip.open(set_dir / f"{split}.jsonl.gz", "rt", encoding="utf-8")]
    out = {}
    for lang in dict.fromkeys(r["lang"] for r in records):
        sources = {d["source"]: d["text"] for d in source_documents(lang, Path("/usr/share/man"))}
        sources = {k: _norm(v) for k, v in sources.items()}
        rates, unmatched, rescanned, by_id = [], 0, 0, 0
        for r in records:
            if r["lang"] != lang or r["kind"] != "reprint" or any(
                    n.split("(")[0] in _EDITS for n in r["noise"]):
                continue
            text = _norm(r["text"])
            rate = _rate(text, sources.get(r["source"]))
            if rate is None or rate > MATCH:
                rate = min(_rate(text, chunk) for chunk in sources.values())
            if rate > MATCH:
                unmatched += 1
                continue
            by_id += r["source"] in sources and _rate(text, sources[r["source"]]) == rate
            rates.append(rate)
            rescanned += any(n.startswith("rescans") for n in r["noise"])
        q = np.quantile(rates, [0.25, 0.5, 0.75, 0.9]).round(3).tolist() if rates else None
        out[lang] = {"copies": len(rates), "matched_by_source_id": int(by_id),
                     "unmatched": unmatched, "rescanned": rescanned,
                     "cer_mean": round(float(np.mean(rates)), 3) if rates else None,
                     "cer_quartiles_and_p90": q,
                     "share_cer_over_0.3": round(float(np.mean(np.array(rates) > 0.3)), 3)
                     if rates else None}
        print(lang, out[lang], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=ROOT / "data" / "multi-ocr")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    result = {"set": str(args.set.resolve().relative_to(ROOT)), **ocr_quality(args.set)}
    (RESULTS / f"ocr-quality{args.tag}.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
