"""Test-set leakage on a constructed case with known answers.

Training corpus: the standard benchmark's train split. Test corpus: its test split (built
from other source stories and days) plus planted copies of training documents: 50 exact
copies and 200 near-copies (seeded OCR noise at severity 0.02, or abridged to 70%).
Reports how many planted copies `find_leakage` recovers, and how many unplanted test
documents it flags.

    python -m experiments.leakage.leakage [--method minhash] [--threshold 0.5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import machine, results_saver
from neardup.datasets.noise import abridge, ocr_noise
from neardup.eval import load_labeled
from neardup.io.batch import DocumentBatch
from neardup.leakage import find_leakage
from neardup.methods import make_method

save = results_saver(Path(__file__).resolve().parent / "results")

ROOT = Path(__file__).resolve().parents[2] / "data" / "reuters-news"


def _batch(ids, texts, source):
    return [DocumentBatch(list(ids), list(texts), None, source, np.arange(len(texts)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="minhash")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="extra method parameter, e.g. similarity=containment")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    corpus = load_labeled([ROOT / "train.jsonl.gz", ROOT / "test.jsonl.gz"])
    train, test = corpus.select_split("train"), corpus.select_split("test")
    rng = np.random.default_rng(args.seed)
    picks = rng.choice(len(train), size=250, replace=False)
    exact_src, near_src = picks[:50], picks[50:]
    planted_texts, planted_ids, truth = [], [], {}
    for i in exact_src.tolist():
        planted_ids.append(f"planted-exact-{i}")
        planted_texts.append(train.texts[i])
        truth[planted_ids[-1]] = ("exact", train.ids[i])
    for k, i in enumerate(near_src.tolist()):
        text = train.texts[i]
        text = ocr_noise(text, rng, severity=0.02) if k % 2 else abridge(text, rng, keep=(0.7, 0.7))
        planted_ids.append(f"planted-near-{i}")
        planted_texts.append(text)
        truth[planted_ids[-1]] = ("near", train.ids[i])
    test_ids = list(test.ids) + planted_ids
    test_texts = list(test.texts) + planted_texts
    extra = dict(p.split("=", 1) for p in args.param)
    method = make_method(args.method, threshold=args.threshold, **extra)
    start = time.perf_counter()
    report = find_leakage(_batch(train.ids, train.texts, "train"), _batch(test_ids, test_texts, "test"), method)
    seconds = time.perf_counter() - start
    flagged = {}
    for row in report.pairs.to_pylist():
        flagged.setdefault(row["test_id"], set()).add(row["train_id"])
    # A planted copy is recovered when it is linked to its source or to a training
    # document with the same text (the train split has a few exact duplicates itself).
    text_of = dict(zip(train.ids, train.texts))
    recovered = {kind: 0 for kind in ("exact", "near")}
    for doc_id, (kind, source) in truth.items():
        if any(t == source or text_of[t] == text_of[source] for t in flagged.get(doc_id, ())):
            recovered[kind] += 1
    unplanted_flagged = sum(1 for doc_id in flagged if doc_id not in truth)
    summary = report.summary()
    print(f"train {len(train):,} docs, test {len(test_ids):,} docs ({len(test):,} from the test split + "
          f"250 planted); --method {args.method} --threshold {args.threshold} {' '.join(args.param)}; "
          f"{seconds:.1f} s; {machine()}\n")
    print("| planted | count | recovered |\n|---|---:|---:|")
    print(f"| exact copies | 50 | {recovered['exact']} |")
    print(f"| near-copies (OCR noise 2% or abridged to 70%) | 200 | {recovered['near']} |")
    print(f"\nflagged test documents that were not planted: {unplanted_flagged} "
          f"(of {len(test):,}); report: {summary}")
    save(f"leakage_{args.method}", {"recovered": recovered, "unplanted_flagged": unplanted_flagged,
                                     "summary": summary, "seconds": seconds, "machine": machine()})


if __name__ == "__main__":
    main()
