"""What fewer verified pairs would cost rerank in decisions (issues #41 item 3, #37).

rerank's verifier scores every candidate pair whose MinHash estimate of character 5-gram
Jaccard is at least 0.1. Two routes to fewer verifier calls read only that estimate,
already in memory with the signatures:

* ``prefilter``: pairs estimated below ``t`` are rejected without the verifier
  (a stricter candidate check; the LSH bands change nothing here, since the check, not
  the bucket, decides which pairs reach the verifier);
* ``near-certain``: pairs estimated at or above ``t`` are accepted without the verifier.

For each data set this runs rerank's default candidates and verifier in memory on every
candidate pair (every feature, the shipped threshold), and counts, per ``t``: the share
of pairs the route takes from the verifier, the verifier's decisions it overturns
(accepted pairs lost, rejected pairs accepted), and on labelled sets the true pairs
lost or false pairs gained (labels: the set's ``cluster`` field). Validation splits
only (``data/NAME/validation.jsonl.gz``); ``reuters`` (Reuters-21578, unlabelled: decisions
only) and ``scale:PATH`` (the seeded scale corpus; its ``cluster`` column as labels).

    python benchmarks/rerank_routes.py --data indep-nlpaug --data reuters-news --name routes-validation

Raw results: ``benchmarks/results/rerank/NAME.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "rerank"
PREFILTER = (0.12, 0.15, 0.2, 0.25, 0.3)
NEAR_CERTAIN = (0.5, 0.6, 0.7, 0.8, 0.9)


def _load(data: str) -> tuple[list[str], np.ndarray | None, np.ndarray | None]:
    """Texts, dates (or None) and cluster labels (or None) of a data set."""
    if data == "reuters":
        from benchmarks.harness import reuters_files
        from neardup.io import ReaderConfig, read_corpus

        texts, dates = [], []
        for batch in read_corpus(reuters_files(), ReaderConfig()):
            texts += batch.texts
            dates.append(batch.dates)
        return texts, np.concatenate(dates), None
    if data.startswith("scale:"):
        import pyarrow.parquet as pq

        path = Path(data[len("scale:"):])
        files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
        tables = [pq.read_table(f, columns=["text", "cluster"]) for f in files]
        texts = [t for table in tables for t in table.column("text").to_pylist()]
        labels = np.concatenate([table.column("cluster").to_numpy() for table in tables])
        return texts, None, labels
    with gzip.open(ROOT / "data" / data / "validation.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    dates = np.array([r.get("date") or "NaT" for r in rows], dtype="datetime64[s]")
    _, labels = np.unique([str(r["cluster"]) for r in rows], return_inverse=True)
    return [r["text"] for r in rows], dates, labels


def measure(data: str) -> dict:
    from neardup.methods.rerank import RerankMethod

    texts, dates, labels = _load(data)
    method = RerankMethod()
    start = time.process_time()
    sketch = method.sketch(texts)
    pairs = method.candidate.find_pairs(sketch).canonical()
    candidates_cpu = time.process_time() - start
    prob = method._get_scorer().score_positions(texts, pairs.left, pairs.right, dates)
    verify_cpu = time.process_time() - start - candidates_cpu
    estimate = pairs.score
    accepted = prob >= method.threshold
    true = None if labels is None else labels[pairs.left] == labels[pairs.right]

    def row(routed: np.ndarray, overturned: np.ndarray, wrong: np.ndarray | None) -> dict:
        out = {"pairs_routed": int(routed.sum()), "share_routed": float(routed.mean()),
               "decisions_overturned": int(overturned.sum())}
        if wrong is not None:
            out["label_errors_added"] = int(wrong.sum())
        return out

    prefilter = {}
    for t in PREFILTER:
        low = estimate < t
        prefilter[str(t)] = row(low, low & accepted,
                                None if true is None else low & accepted & true)
    near = {}
    for t in NEAR_CERTAIN:
        high = estimate >= t
        near[str(t)] = row(high, high & ~accepted,
                           None if true is None else high & ~accepted & ~true)
    result = {
        "documents": len(texts), "candidate_pairs": len(pairs),
        "pairs_per_document": len(pairs) / max(len(texts), 1),
        "accepted": int(accepted.sum()), "threshold": float(method.threshold),
        "cpu_s": {"candidates": candidates_cpu, "verifier_every_feature": verify_cpu},
        "prefilter_below": prefilter, "near_certain_at_or_above": near,
    }
    if true is not None:
        result["true_pairs"] = int(true.sum())
        result["accepted_true_pairs"] = int((accepted & true).sum())
    return result


def _print(data: str, r: dict) -> None:
    print(f"{data}: {r['documents']} docs, {r['candidate_pairs']} candidate pairs "
          f"({r['pairs_per_document']:.1f} a document), {r['accepted']} accepted")
    for name, key, what in (("prefilter", "prefilter_below", "accepted lost"),
                            ("near-certain", "near_certain_at_or_above", "rejected accepted")):
        for t, row in r[key].items():
            extra = f", label errors added {row['label_errors_added']}" if "label_errors_added" in row else ""
            print(f"  {name} {t}: {100 * row['share_routed']:5.1f}% of pairs, "
                  f"{what} {row['decisions_overturned']}{extra}")


def run_sets(data_sets: list[str], measure_one, show, name: str | None) -> dict:
    """``measure_one(data)`` for each data set, shown by ``show(data, result)``; saved as
    ``benchmarks/results/rerank/NAME.json`` (with the commit and arguments) when ``name``."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(ROOT))
    results = {}
    for data in data_sets:
        results[data] = measure_one(data)
        show(data, results[data])
    if name:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=ROOT).stdout.strip()
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{name}.json"
        path.write_text(json.dumps({"commit": commit, "argv": sys.argv[1:], "results": results},
                                   indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", action="append", required=True,
                        help="a data/ set name (its validation split), reuters, or scale:PATH")
    parser.add_argument("--name", default=None, help="results file name (no extension)")
    args = parser.parse_args()
    run_sets(args.data, measure, _print, args.name)


if __name__ == "__main__":
    main()
