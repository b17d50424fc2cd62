"""How many labels `neardup calibrate` needs: simulated on the sets' validation splits.

    python -m experiments.calibrate_labels.calibrate_labels [--methods minhash ngram] [--sets ...] [--repeats 5]

For each set, method and label budget n: score the validation split's candidate pairs
as `neardup calibrate` does (low threshold), draw n pairs over the score ranks of the
uncertain region (boundary_sample, seeded per repeat), label them from the ground truth
(same cluster = duplicate), fit the threshold (best F1 among the labels), and run the
method once on the test split with it. Reports the median test pairwise precision,
recall and ARI over the repeats; beside it (``rule``), the threshold ``neardup calibrate``
keeps by default: the method's default unless the fit beats its F1 among the labels by
more than ``--min-gain``, and the default's own test scores. Writes
experiments/calibrate_labels/results/calibrate_labels.json.

``--model PATH`` gives the method a model (``{set}`` in PATH is replaced by the set's
name), e.g. the leave-one-set-out verifiers of ``experiments/verifier_transfer/verifier_transfer.py evaluate
--save-held-out DIR``: ``--methods rerank --model DIR/{set}`` asks how many labels make
a verifier that never saw the set's generator good on it.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

from neardup.eval import evaluate, load_labeled
from neardup.eval.calibrate import (
    MIN_GAIN,
    boundary_sample,
    candidate_params,
    fit_threshold,
    score_to_threshold,
    threshold_to_score,
)
from neardup.eval.evaluate import _batches, build_method
from neardup.pipeline import ClusterConfig, run

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = (10, 20, 40, 80)
# As measured (rerank's verifier defaults to Leiden now: --cluster auto).
COMPONENTS = ClusterConfig(algorithm="components")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", default=["minhash", "ngram"])
    parser.add_argument("--sets", nargs="*", default=["reuters-news", "indep-nlpaug", "indep-augly",
                                                     "indep-noisocr", "multi-latin", "multi-cjk"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--beta", type=float, default=1.0, help="F-beta of the fit")
    parser.add_argument("--model", help="model name or folder for the methods; {set}: the set")
    parser.add_argument("--min-precision", type=float, default=None,
                        help="fit as `neardup calibrate --min-precision` (the highest recall "
                             "at this precision among the labels)")
    parser.add_argument("--min-gain", type=float, default=MIN_GAIN,
                        help="neardup calibrate's rule, reported beside the plain fit")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "calibrate_labels.json")
    parser.add_argument("--table", nargs="+", type=Path, metavar="RESULTS",
                        help="only print the markdown table of these results files")
    args = parser.parse_args()
    if args.table:
        print(table([r for path in args.table for r in json.loads(path.read_text())]))
        return
    rows = []
    for name in args.sets:
        corpus = load_labeled([ROOT / "data" / name / f"{s}.jsonl.gz"
                               for s in ("validation", "test")])
        validation, test = corpus.select_split("validation"), corpus.select_split("test")
        labels = validation.clusters
        base = {} if args.model is None else {"model": args.model.replace("{set}", name)}
        for method in args.methods:
            wide = candidate_params(method, base)
            result = run(_batches(validation), build_method(method, wide), progress=False,
                         cluster=COMPONENTS)
            pairs = result.pairs
            truth = labels[pairs.left] == labels[pairs.right]
            low = threshold_to_score(method, wide["threshold"])
            sketches: dict = {}
            tested: dict = {}
            default_threshold = build_method(method, base).get_params()["threshold"]
            default = threshold_to_score(method, default_threshold)

            def scores(threshold, base=base, method=method, sketches=sketches, tested=tested):
                if threshold not in tested:
                    report = evaluate(test, method, params={**base, "threshold": threshold},
                                      sketch_cache=sketches, cluster=COMPONENTS)
                    tested[threshold] = {k: report[k] for k in ("precision", "recall", "ari")}
                return tested[threshold]

            for n in BUDGETS:
                runs = []
                for repeat in range(args.repeats):
                    picks = boundary_sample(pairs, n, low=low, seed=repeat)
                    y = truth[picks]
                    if y.all() or not y.any():
                        continue
                    fit = fit_threshold(pairs.score[picks], y, beta=args.beta, min_gain=0.0,
                                        min_precision=args.min_precision)
                    threshold = score_to_threshold(method, fit.score)
                    entry = {"threshold": threshold, **scores(threshold)}
                    # neardup calibrate's rule: the default kept unless beaten by > min_gain
                    kept = fit_threshold(pairs.score[picks], y, beta=args.beta,
                                         min_precision=args.min_precision,
                                         default=default, min_gain=args.min_gain)
                    rule = score_to_threshold(method, kept.score)
                    entry["rule"] = {"threshold": rule, "kept_default": kept.kept_default,
                                     **scores(rule)}
                    runs.append(entry)
                row = {"set": name, "method": method, "labels": n, "runs": runs, **base,
                       **{k: statistics.median(r[k] for r in runs) if runs else None
                          for k in ("threshold", "precision", "recall", "ari")},
                       "rule": {k: statistics.median(r["rule"][k] for r in runs) if runs
                                else None for k in ("threshold", "precision", "recall", "ari")},
                       "default": {"threshold": default_threshold, **scores(default_threshold)}}
                rows.append(row)
                print(f"{name:20} {method:8} n={n:3} median test precision {row['precision']} "
                      f"recall {row['recall']} ARI {row['ari']}; with --min-gain "
                      f"{args.min_gain}: ARI {row['rule']['ari']}; default "
                      f"{row['default']['ari']}", flush=True)
    out = args.out
    out.write_text(json.dumps(rows, indent=1, default=float) + "\n")
    print(f"wrote {out}")
    print(table(rows))


def table(rows: list[dict]) -> str:
    """Markdown: per set and method, the default's test ARI, then per label budget the
    test ARI of calibrate's rule (the plain best fit in brackets where it differs)."""
    budgets = sorted({r["labels"] for r in rows})
    lines = ["| set | method | default (no labels) | "
             + " | ".join(f"{n} labels" for n in budgets) + " |",
             "|---|---|---:|" + "---:|" * len(budgets)]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["set"], r["method"]), {})[r["labels"]] = r

    def fmt(x):
        return "—" if x is None else f"{x:.3f}"

    for (name, method), by_n in groups.items():
        first = next(iter(by_n.values()))
        cells = []
        for n in budgets:
            r = by_n.get(n)
            if r is None or r["ari"] is None:
                cells.append("—")
                continue
            rule, plain = r["rule"]["ari"], r["ari"]
            cells.append(fmt(rule) + ("" if abs(rule - plain) < 5e-4 else f" ({fmt(plain)})"))
        lines.append(f"| {name} | {method} | {fmt(first['default']['ari'])} "
                     f"({first['default']['threshold']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
