"""Which documents a method wrongly links, by the benchmark's document kinds.

Runs one method at one setting on the validation and test splits of the standard
benchmark and counts its false-positive pairs (linked, different true clusters) by the
``kind`` of their two documents (``reprint``, ``template``, ``hard_negative:update``, ...),
next to how many documents of each kind the split holds. It shows why a threshold chosen
on validation can over-link on test: a kind of hard negative that validation barely holds
is never penalised there.

    python -m experiments.false_positive_kinds.false_positive_kinds --method biencoder --param model=biencoder-news \\
        --param threshold=0.68 [--time-window 48] [--cache-dir /tmp/neardup-embedding-cache]

``--time-window H`` drops pairs dated more than H hours apart first, as
``--time-window`` does before clustering.

Prints a table per split and writes experiments/false_positive_kinds/results/false_positive_kinds.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.harness import machine, results_saver
from neardup.eval import load_labeled
from neardup.graph.edges import outside_time_window
from neardup.methods import make_method

save = results_saver(Path(__file__).resolve().parent / "results")

ROOT = Path(__file__).resolve().parents[2]


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _kinds(path: Path) -> np.ndarray:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return np.array([json.loads(line).get("kind") or "unknown" for line in f])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", type=Path, default=ROOT / "data" / "reuters-news")
    parser.add_argument("--method", default="biencoder")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a method parameter (repeatable), e.g. threshold=0.68")
    parser.add_argument("--cache-dir", default=None, help="embedding cache (neural methods)")
    parser.add_argument("--time-window", type=float, default=None, metavar="HOURS",
                        help="drop pairs dated more than HOURS apart")
    args = parser.parse_args()
    params = dict(p.split("=", 1) for p in args.param)
    params = {k: _value(v) for k, v in params.items()}
    if args.cache_dir:
        params["cache_dir"] = args.cache_dir
    report = {"machine": machine(), "method": args.method,
              "params": {k: v for k, v in params.items() if k != "cache_dir"},
              "time_window_hours": args.time_window, "splits": {}}
    for split in ("validation", "test"):
        path = args.benchmark / f"{split}.jsonl.gz"
        corpus = load_labeled(str(path))
        kinds = _kinds(path)
        method = make_method(args.method, **params)
        pairs = method.find_pairs(method.sketch(list(corpus.texts)))
        pairs = pairs.select(~outside_time_window(pairs, corpus.dates, args.time_window))
        labels = np.asarray(corpus.clusters).astype(str)
        wrong = labels[pairs.left] != labels[pairs.right]
        by_kinds = Counter(" + ".join(sorted((kinds[a], kinds[b])))
                           for a, b in zip(pairs.left[wrong].tolist(), pairs.right[wrong].tolist()))
        docs = Counter(kinds.tolist())
        report["splits"][split] = {
            "pairs": len(pairs), "false_positive_pairs": int(wrong.sum()),
            "false_positives_by_kinds": dict(by_kinds.most_common()),
            "documents_by_kind": dict(docs.most_common()),
        }
        print(f"\n{split}: {len(pairs):,} linked pairs, {int(wrong.sum()):,} false positives")
        print("  documents by kind: " + ", ".join(f"{k} {v:,}" for k, v in docs.most_common()))
        for pair_kinds, count in by_kinds.most_common(6):
            print(f"  {count:8,}  {pair_kinds}")
    name = "false_positive_kinds" + (f"_window{args.time_window:g}h" if args.time_window else "")
    print(f"wrote {save(name, report)}")


if __name__ == "__main__":
    main()
