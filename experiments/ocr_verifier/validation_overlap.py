"""Drop from an OCR train split every page that data/multi-ocr/validation.jsonl.gz uses.

    python -m experiments.ocr_verifier.validation_overlap TRAIN.jsonl.gz OUT.jsonl.gz

Why: the train split's builder avoids the pages of the validation and test splits *it
would build* on this machine. For nl and en that is the shipped validation split's plan, but
for pl, de, cs and fr the man-page chunks found here differ from those the shipped set was
built from (a different set of installed translated man pages), so the pages it avoids
are not necessarily the shipped split's. This script maps every shipped validation
document to the source chunk (and so page) it was read from, by character 4-gram
containment of the chunk in the OCR text, and removes all train records of those pages.
The test split is not read (its pages cannot be checked this way; see the README).
"""

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def grams(text: str, n: int = 4) -> set[str]:
    t = " ".join(text.lower().split())
    return {t[i:i + n] for i in range(max(0, len(t) - n + 1))}


def main() -> None:
    from neardup.datasets.ocr import source_documents

    train_path, out_path = Path(sys.argv[1]), Path(sys.argv[2])
    read = lambda p: [json.loads(line) for line in gzip.open(p, "rt", encoding="utf-8")]  # noqa: E731
    train = read(train_path)
    validation = read(ROOT / "data" / "multi-ocr" / "validation.jsonl.gz")
    report = {}
    keep = []
    for lang in sorted({r["lang"] for r in train}):
        docs = source_documents(lang, Path("/usr/share/man"))
        page_of = {d["source"]: d["page"] for d in docs}
        doc_grams = [grams(d["text"]) for d in docs]
        used_pages, scores = set(), []
        for v in (r for r in validation if r["lang"] == lang):
            g = grams(v["text"])
            # containment of the chunk in the OCR text (copies may be abridged; updates
            # share half: their anchor's page is still found)
            best, k = max((len(g & dg) / max(1, len(dg)), k) for k, dg in enumerate(doc_grams))
            scores.append(round(best, 2))
            if best >= 0.3:
                used_pages.add(docs[k]["page"])
        tr = [r for r in train if r["lang"] == lang]
        kept = [r for r in tr if page_of[r["source"]] not in used_pages]
        keep += kept
        report[lang] = {"validation_docs": len(scores),
                        "validation_docs_matched_(>=0.3)": sum(s >= 0.3 for s in scores),
                        "validation_pages_found": len(used_pages),
                        "train_docs": len(tr), "train_docs_kept": len(kept),
                        "train_clusters_kept": len({r["cluster"] for r in kept}),
                        "match_score_quartiles": [sorted(scores)[len(scores) * q // 4] for q in (1, 2, 3)]}
        print(lang, report[lang], flush=True)
    # drop a hard negative whose anchor went (its cluster label still names it)
    with gzip.open(out_path, "wt", encoding="utf-8") as f:
        for r in keep:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    report["kinds_kept"] = dict(Counter(r["kind"] for r in keep))
    print(json.dumps(report, indent=1))
    (ROOT / "experiments" / "ocr_verifier" / "results" / "validation_overlap.json").write_text(
        json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
