"""The time window as a tuned parameter: threshold and window chosen together on validation.

For each method below, ``neardup tune`` sweeps its threshold grid and
``cluster.time_window_hours`` in {none, 6, 12, 24, 48, 96} on the validation split of the
standard benchmark; the best point by ARI is then scored once on test (connected
components). Prints a markdown table and writes experiments/time_window/results/time_window_tuning.json.

    python -m experiments.time_window.tune_time_window [--cache-dir /tmp/neardup-embedding-cache]

Embeddings of the neural methods are cached in --cache-dir, shared with
experiments/method_comparison/compare_methods.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.harness import machine, results_saver
from neardup.eval import evaluate, load_labeled, tune

save = results_saver(Path(__file__).resolve().parent / "results")

ROOT = Path(__file__).resolve().parents[2]
WINDOWS = [None, 6, 12, 24, 48, 96]
CONFIGS = [
    # (label, method, fixed parameters, threshold grid)
    ("ngram, word 3-gram Jaccard", "ngram", {}, [0.2, 0.25, 0.3, 0.35, 0.4]),
    ("minhash, 128 perms, word 3-grams", "minhash", {}, [0.2, 0.25, 0.3, 0.35, 0.4]),
    ("minhash, char 10-grams", "minhash", {"shingle": {"unit": "char", "n": 10}},
     [0.2, 0.25, 0.3, 0.35, 0.4]),
    ("biencoder off the shelf", "biencoder", {}, [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]),
    ("retsim fine-tuned (retsim-news)", "retsim", {"model": "retsim-news"},
     [0.6, 0.65, 0.7, 0.75, 0.8, 0.85]),
    ("biencoder fine-tuned (biencoder-news)", "biencoder", {"model": "biencoder-news"},
     [0.62, 0.64, 0.66, 0.68, 0.7]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", type=Path, default=ROOT / "data" / "reuters-news")
    parser.add_argument("--cache-dir", default="/tmp/neardup-embedding-cache",
                        help="embedding cache of the neural methods")
    args = parser.parse_args()
    corpus = load_labeled([str(args.benchmark / f"{s}.jsonl.gz") for s in ("validation", "test")])
    test = corpus.select_split("test")
    rows = []
    print("| method | chosen on validation | validation ARI | test ARI |")
    print("|---|---|---:|---:|")
    for label, method, params, thresholds in CONFIGS:
        if method in ("biencoder", "retsim"):
            params = {**params, "cache_dir": args.cache_dir}
        tuned = tune(corpus, method, split="validation", base_params=params,
                     grid={"threshold": thresholds, "cluster.time_window_hours": WINDOWS})
        report = evaluate(test, method, params=tuned.params, cluster=tuned.cluster)
        window = tuned.cluster["time_window_hours"]
        chosen = f"threshold {tuned.params['threshold']}, window " + (
            "none" if window is None else f"{window:g} h")
        rows.append({"label": label, "method": method, "chosen": chosen,
                     "validation_ari": tuned.best_score, "test_ari": report["ari"],
                     "points": [[p["values"], p["ari"]] for p in tuned.points]})
        print(f"| {label} | {chosen} | {tuned.best_score:.3f} | {report['ari']:.3f} |", flush=True)
    print(f"wrote {save('time_window_tuning', {'machine': machine(), 'rows': rows})}")


if __name__ == "__main__":
    main()
