"""Issue 17: does correcting the verifier to a user's labels beat fitting its threshold?

    python -m experiments.verifier_transfer.calibrate_verifier --cache DIR [--sets ...] [--repeats 5]

Simulates ``neardup calibrate --method rerank`` on a set the verifier never saw, from the
pair-feature cache of ``experiments/verifier_transfer/verifier_transfer.py features --cache DIR`` (no text is
read again). For each set S held out:

* **the user's verifier**: trained on the *full* train-split pairs of every other set
  (as verifier-news is on all of them), no labels; scored at the shipped default
  threshold 0.9 (``no labels``);
* **labels**: S's validation candidates are scored by it; ``n`` pairs are drawn over the
  score ranks of [0.02, 1] (``neardup calibrate``'s boundary sample, seeded per repeat),
  from the documents of one half of S's validation clusters (by a hash of the cluster
  label), and labelled from the truth;
* **threshold, min_gain g**: the threshold with the best F1 among those labels
  (``fit_threshold``), kept only if its F1 beats the default threshold's (0.9) by more
  than ``g`` (``neardup calibrate --min-gain``; 0: the best fit is taken unless the
  default ties it); the user's verifier at it;
* **corrected l2 v, min_gain g**: :func:`neardup.train.verifier.refit_verifier` (what
  ``neardup calibrate --fit-verifier`` runs): the user's verifier with a linear
  correction of its log-odds fitted to the labels, pulled towards no change with
  strength ``v``; the threshold fitted as above to the labels' out-of-fold
  probabilities.

Every variant is scored by connected components of the re-scored candidates (ARI), on
the *other* half of S's validation documents (the whole split clustered; the labelled
half excluded from the score) and on S's test split. ``--min-gain``'s default and the
correction's ``l2`` are chosen on those validation halves only (:func:`choose`). Test
ARIs are only read for the report. Raw results: experiments/verifier_transfer/results/calibrate_verifier.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
from experiments.verifier_transfer.verifier_transfer import SETS, fit_model, verifier_scores  # noqa: E402
from neardup.eval.calibrate import boundary_sample, fit_threshold  # noqa: E402
from neardup.graph import Pairs  # noqa: E402
from neardup.train.verifier import refit_verifier  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "calibrate_verifier.json"
BUDGETS = (20, 40, 80)
L2S = (1.0, 10.0, 100.0)
MIN_GAINS = (0.0, 0.05, 0.1, 0.2)
LOW = 0.02  # neardup.eval.calibrate's candidate threshold for rerank
DEFAULT_THRESHOLD = 0.9


def shipped_features() -> list[str]:
    from neardup.models import resolve_model

    meta = json.loads((resolve_model("verifier-news", "verifier") / "model.json").read_text())
    return list(meta["features"])


def load(cache: Path, names: list[str]) -> dict[str, dict]:
    data = {}
    for s in SETS:
        d = dict(np.load(cache / f"{s}-char5.npz", allow_pickle=False))
        columns = [str(f) for f in d["features"]]
        cols = [columns.index(f) for f in names]
        for key in [k for k in d if k.endswith("_x")]:
            d[key] = d[key][:, cols]
        data[s] = d
    return data


def ari_at(d: dict, split: str, p: np.ndarray, t: float, docs: np.ndarray | None = None) -> float:
    from sklearn.metrics import adjusted_rand_score

    from neardup.graph.cluster import connected_components

    clusters = d[f"{split}_clusters"]
    keep = p >= t
    labels = connected_components(Pairs(d[f"{split}_left"][keep], d[f"{split}_right"][keep],
                                        p[keep]), len(clusters))
    if docs is None:
        return float(adjusted_rand_score(clusters, labels))
    return float(adjusted_rand_score(clusters[docs], labels[docs]))


def halves(clusters: np.ndarray) -> np.ndarray:
    """True for documents of the labelling half (a stable hash of the cluster label)."""
    return np.array([zlib.crc32(c.encode()) % 2 == 0 for c in clusters.tolist()])


def simulate(data: dict, held: str, names: list[str], repeats: int,
             penalize_intercept: bool = False) -> dict:
    trainable = [s for s in SETS if "train_x" in data[s] and s != held]
    cpu0 = time.process_time()
    # As verifier_transfer's leave-one-set-out fits (dates dropped from a quarter).
    user_model = fit_model([data[s]["train_x"] for s in trainable],
                      [data[s]["train_y"] for s in trainable], list(range(len(names))), names)
    d = data[held]
    vx = d["validation_x"]
    vclusters = d["validation_clusters"]
    truth = vclusters[d["validation_left"]] == vclusters[d["validation_right"]]
    label_half = halves(vclusters)
    in_half = label_half[d["validation_left"]] & label_half[d["validation_right"]]
    score_docs = ~label_half
    v_prob = verifier_scores(user_model, vx)
    t_prob = verifier_scores(user_model, d["test_x"])
    # Only the labelling half's pairs can be drawn; positions mapped back to all pairs.
    eligible = np.flatnonzero(in_half)
    eligible_pairs = Pairs(d["validation_left"][eligible], d["validation_right"][eligible],
                           v_prob[eligible])
    row = {"set": held, "trained_on": trainable,
           "no_labels": {"threshold": DEFAULT_THRESHOLD,
                         "validation": ari_at(d, "validation", v_prob, DEFAULT_THRESHOLD, score_docs),
                         "test": ari_at(d, "test", t_prob, DEFAULT_THRESHOLD)},
           "budgets": {}}
    variants = [*[f"threshold, min_gain {g:g}" for g in MIN_GAINS],
                *[f"corrected l2 {v:g}, min_gain {g:g}" for v in L2S for g in MIN_GAINS]]
    for n in BUDGETS:
        runs = []
        for repeat in range(repeats):
            picks = eligible[boundary_sample(eligible_pairs, n, low=LOW, seed=repeat)]
            y = truth[picks]
            if y.all() or not y.any():
                continue
            run = {"labels": int(len(picks)), "duplicates": int(y.sum())}
            for gain in MIN_GAINS:
                cut = fit_threshold(v_prob[picks], y, default=DEFAULT_THRESHOLD,
                                    min_gain=gain).score
                run[f"threshold, min_gain {gain:g}"] = {
                    "threshold": cut,
                    "validation": ari_at(d, "validation", v_prob, cut, score_docs),
                    "test": ari_at(d, "test", t_prob, cut)}
            for l2 in L2S:
                refit = refit_verifier(user_model, vx[picks], y, features=names, l2=l2,
                                       penalize_intercept=penalize_intercept)
                v_corrected = refit.model.correct(v_prob, vx)
                t_corrected = refit.model.correct(t_prob, d["test_x"])
                for gain in MIN_GAINS:
                    cut = fit_threshold(refit.out_of_fold, y, default=DEFAULT_THRESHOLD,
                                        min_gain=gain).score
                    run[f"corrected l2 {l2:g}, min_gain {gain:g}"] = {
                        "threshold": cut, "slope": refit.model.slope,
                        "corrected": refit.corrected,
                        "validation": ari_at(d, "validation", v_corrected, cut, score_docs),
                        "test": ari_at(d, "test", t_corrected, cut)}
            runs.append(run)
        row["budgets"][n] = {
            "runs": runs,
            "median": {v: {k: statistics.median(r[v][k] for r in runs) if runs else None
                           for k in ("validation", "test")} for v in variants}}
        med = row["budgets"][n]["median"]
        print(f"{held:20} n={n:3} " + "  ".join(
            f"[{v}] val {med[v]['validation']:.3f} test {med[v]['test']:.3f}" for v in variants
            if med[v]["test"] is not None and v.endswith(("min_gain 0", "min_gain 0.1"))),
            flush=True)
    row["cpu_seconds"] = round(time.process_time() - cpu0, 1)
    return row


def _worst_and_mean(rows: list[dict], variant: str) -> dict:
    """Worst and mean (over sets and budgets) median validation ARI of ``variant``."""
    values = [b["median"][variant]["validation"] for r in rows for b in r["budgets"].values()
              if b["median"][variant]["validation"] is not None]
    return {"worst": min(values), "mean": float(np.mean(values))}


def choose(rows: list[dict]) -> dict:
    """Validation halves only: the ``min_gain`` of the threshold fit with the best worst
    (then mean) ARI, the smaller on ties; then the ``l2`` of the correction at that
    ``min_gain`` the same way; then whether the correction beats the threshold alone."""
    by_gain = {g: _worst_and_mean(rows, f"threshold, min_gain {g:g}") for g in MIN_GAINS}
    gain = max(MIN_GAINS, key=lambda g: (by_gain[g]["worst"], by_gain[g]["mean"], -g))
    by_l2 = {v: _worst_and_mean(rows, f"corrected l2 {v:g}, min_gain {gain:g}") for v in L2S}
    l2 = max(L2S, key=lambda v: (by_l2[v]["worst"], by_l2[v]["mean"], -v))
    better = (by_l2[l2]["worst"], by_l2[l2]["mean"]) > (by_gain[gain]["worst"],
                                                         by_gain[gain]["mean"])
    return {"by_min_gain": by_gain, "min_gain": gain, "by_l2": by_l2, "l2": l2,
            "correction_beats_threshold_on_validation": better}


def table(results: dict) -> str:
    choice = results["choice"]
    gain, l2 = choice["min_gain"], choice["l2"]
    columns = {"fit (min_gain 0)": "threshold, min_gain 0",
               f"fit, default kept (min_gain {gain:g})": f"threshold, min_gain {gain:g}",
               f"corrected (l2 {l2:g}, min_gain {gain:g})": f"corrected l2 {l2:g}, min_gain {gain:g}"}
    lines = ["| held-out set | no labels (0.9) | labels | " + " | ".join(columns) + " |",
             "|---|---:|---:|" + "---:|" * len(columns)]
    for r in results["rows"]:
        for n, b in r["budgets"].items():
            med = b["median"]
            if med["threshold, min_gain 0"]["test"] is None:
                continue
            lines.append(f"| {r['set']} | {r['no_labels']['test']:.3f} | {n} | "
                         + " | ".join(f"{med[v]['test']:.3f}" for v in columns.values()) + " |")
    for label, pick in (("mean", np.mean), ("worst", min)):
        cells = [f"{pick([b['median'][v]['test'] for r in results['rows'] for b in r['budgets'].values() if b['median'][v]['test'] is not None]):.3f}"
                 for v in columns.values()]
        none = pick([r["no_labels"]["test"] for r in results["rows"]])
        lines.append(f"| **{label}** | {none:.3f} | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True,
                        help="pair-feature cache of experiments/verifier_transfer/verifier_transfer.py features")
    parser.add_argument("--sets", nargs="*", default=SETS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--penalize-intercept", action="store_true",
                        help="the correction's intercept pulled to 0 too (a variant)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    names = shipped_features()
    data = load(args.cache, names)
    rows = [simulate(data, s, names, args.repeats, args.penalize_intercept) for s in args.sets]
    results = {"budgets": list(BUDGETS), "l2": list(L2S), "repeats": args.repeats,
               "min_gains": list(MIN_GAINS), "features": names, "rows": rows,
               "penalize_intercept": args.penalize_intercept,
               "choice": choose(rows)}
    args.out.write_text(json.dumps(results, indent=1, default=float) + "\n")
    print(json.dumps(results["choice"], indent=1))
    print(table(results))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
