"""Issue 17: does correcting the verifier to a user's labels beat fitting its threshold?

    python bench/calibrate_verifier.py --cache DIR [--sets ...] [--repeats 5]

Simulates ``neardup calibrate --method rerank`` on a set the verifier never saw, from the
pair-feature cache of ``bench/verifier_transfer.py features --cache DIR`` (no text is
read again). For each set S held out:

* **the user's verifier**: trained on the *full* train-split pairs of every other set
  (as verifier-news is on all of them), no labels; scored at the shipped default
  threshold 0.9 (``no labels``);
* **labels**: S's validation candidates are scored by it; ``n`` pairs are drawn over the
  score ranks of [0.02, 1] (``neardup calibrate``'s boundary sample, seeded per repeat),
  from the documents of one half of S's validation clusters (by a hash of the cluster
  label), and labelled from the truth;
* **threshold only**: the threshold with the best F1 among those labels
  (``fit_threshold``), the user's verifier at it;
* **corrected, l2**: :func:`neardup.train.verifier.refit_verifier` (what
  ``neardup calibrate --fit-verifier`` runs): the user's verifier with a linear
  correction of its log-odds fitted to the labels, pulled towards no change with
  strength ``l2``; threshold fitted to the labels' out-of-fold probabilities.

Every variant is scored by connected components of the re-scored candidates (ARI), on
the *other* half of S's validation documents (the whole split clustered; the labelled
half excluded from the score) and on S's test split. The ``l2`` that ``--fit-verifier``
uses is chosen on those validation halves only: the one with the best worst-case (over
sets and budgets) median gain over threshold-only. Test ARIs are only read for the
report. Raw results: bench/results/calibrate_verifier.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from verifier_transfer import SETS  # noqa: E402

from neardup.eval.calibrate import boundary_sample, fit_threshold  # noqa: E402
from neardup.graph import Pairs  # noqa: E402
from neardup.train.verifier import drop_dates, make_classifier, refit_verifier  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "calibrate_verifier.json"
BUDGETS = (20, 40, 80)
L2S = (1.0, 10.0, 100.0)
MARGINS = (0.05, 0.1, 0.2)
LOW = 0.02  # neardup.eval.calibrate's candidate threshold for rerank
DEFAULT_THRESHOLD = 0.9
DATE_DROPOUT = 0.25


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


def fit_full(data: dict, sets: list[str], names: list[str]):
    from threadpoolctl import threadpool_limits

    x = np.concatenate([data[s]["train_x"] for s in sets]).copy()
    y = np.concatenate([data[s]["train_y"] for s in sets]).astype(np.int64)
    drop_dates(x, names, DATE_DROPOUT, 0)
    model = make_classifier("hgb", seed=0)
    with threadpool_limits(limits=1):
        model.fit(x, y)
    return model


def prob(model, x: np.ndarray) -> np.ndarray:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return model.predict_proba(x)[:, 1].astype(np.float32) if len(x) else np.zeros(0, np.float32)


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


def simulate(data: dict, held: str, names: list[str], repeats: int) -> dict:
    trainable = [s for s in SETS if "train_x" in data[s] and s != held]
    cpu0 = time.process_time()
    user_model = fit_full(data, trainable, names)
    d = data[held]
    vx = d["validation_x"]
    vclusters = d["validation_clusters"]
    truth = vclusters[d["validation_left"]] == vclusters[d["validation_right"]]
    label_half = halves(vclusters)
    in_half = label_half[d["validation_left"]] & label_half[d["validation_right"]]
    score_docs = ~label_half
    v_prob = prob(user_model, vx)
    t_prob = prob(user_model, d["test_x"])
    # Only the labelling half's pairs can be drawn; positions mapped back to all pairs.
    eligible = np.flatnonzero(in_half)
    eligible_pairs = Pairs(d["validation_left"][eligible], d["validation_right"][eligible],
                           v_prob[eligible])
    row = {"set": held, "trained_on": trainable,
           "no_labels": {"threshold": DEFAULT_THRESHOLD,
                         "validation": ari_at(d, "validation", v_prob, DEFAULT_THRESHOLD, score_docs),
                         "test": ari_at(d, "test", t_prob, DEFAULT_THRESHOLD)},
           "budgets": {}}
    for n in BUDGETS:
        runs = []
        for repeat in range(repeats):
            picks = eligible[boundary_sample(eligible_pairs, n, low=LOW, seed=repeat)]
            y = truth[picks]
            if y.all() or not y.any():
                continue
            fit = fit_threshold(v_prob[picks], y)
            run = {"labels": int(len(picks)), "duplicates": int(y.sum()),
                   "threshold_only": {"threshold": fit.score,
                                      "validation": ari_at(d, "validation", v_prob, fit.score,
                                                           score_docs),
                                      "test": ari_at(d, "test", t_prob, fit.score)}}
            for margin in MARGINS:
                cut = fit.score if _beats_default(fit, v_prob[picks], y, margin) else DEFAULT_THRESHOLD
                run[f"threshold margin {margin:g}"] = {
                    "threshold": cut,
                    "validation": ari_at(d, "validation", v_prob, cut, score_docs),
                    "test": ari_at(d, "test", t_prob, cut)}
            for l2 in L2S:
                refit = refit_verifier(user_model, vx[picks], y, features=names, l2=l2)
                cut = fit_threshold(refit.out_of_fold, y).score
                v_corrected = refit.model.correct(v_prob, vx)
                t_corrected = refit.model.correct(t_prob, d["test_x"])
                run[f"corrected {l2:g}"] = {
                    "threshold": cut, "slope": refit.model.slope,
                    "validation": ari_at(d, "validation", v_corrected, cut, score_docs),
                    "test": ari_at(d, "test", t_corrected, cut)}
                oof = fit_threshold(refit.out_of_fold, y)
                cut = oof.score if _beats_default(oof, refit.out_of_fold, y, 0.1) else DEFAULT_THRESHOLD
                run[f"corrected {l2:g} margin 0.1"] = {
                    "threshold": cut, "slope": refit.model.slope,
                    "validation": ari_at(d, "validation", v_corrected, cut, score_docs),
                    "test": ari_at(d, "test", t_corrected, cut)}
                run[f"corrected {l2:g} at {DEFAULT_THRESHOLD}"] = {
                    "threshold": DEFAULT_THRESHOLD, "slope": refit.model.slope,
                    "validation": ari_at(d, "validation", v_corrected, DEFAULT_THRESHOLD,
                                         score_docs),
                    "test": ari_at(d, "test", t_corrected, DEFAULT_THRESHOLD)}
            runs.append(run)
        variants = ["threshold_only", *[f"threshold margin {m:g}" for m in MARGINS], *[f"corrected {v:g}{at}" for v in L2S
                                       for at in ("", f" at {DEFAULT_THRESHOLD}", " margin 0.1")]]
        row["budgets"][n] = {
            "runs": runs,
            "median": {v: {k: statistics.median(r[v][k] for r in runs) if runs else None
                           for k in ("validation", "test")} for v in variants}}
        med = row["budgets"][n]["median"]
        print(f"{held:20} n={n:3} " + "  ".join(
            f"{v}: val {med[v]['validation']:.3f} test {med[v]['test']:.3f}" for v in variants
            if med[v]["test"] is not None), flush=True)
    row["cpu_seconds"] = round(time.process_time() - cpu0, 1)
    return row


def _beats_default(fit, scores, y, margin: float) -> bool:
    """Whether the fitted cut's F1 among the labels beats the default threshold's by more
    than ``margin``."""
    accept = scores >= DEFAULT_THRESHOLD
    tp = int((accept & y).sum())
    precision = tp / max(int(accept.sum()), 1)
    recall = tp / max(int(y.sum()), 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return fit.f1 - f1 > margin


def choose_l2(rows: list[dict]) -> dict:
    """The l2 whose worst (over sets and budgets) median validation gain over
    threshold-only is highest; validation halves only."""
    by_l2 = {}
    for l2 in L2S:
        gains = [b["median"][f"corrected {l2:g}"]["validation"]
                 - b["median"]["threshold_only"]["validation"]
                 for r in rows for b in r["budgets"].values()
                 if b["median"]["threshold_only"]["validation"] is not None]
        by_l2[l2] = {"worst": min(gains), "mean": float(np.mean(gains))}
    best = max(L2S, key=lambda v: (by_l2[v]["worst"], by_l2[v]["mean"]))
    return {"by_l2": by_l2, "chosen": best}


def table(results: dict) -> str:
    key = f"corrected {results['choice']['chosen']:g}"
    lines = [f"| held-out set | no labels (0.9) | labels | threshold only | {key} |",
             "|---|---:|---:|---:|---:|"]
    for r in results["rows"]:
        for n, b in r["budgets"].items():
            med = b["median"]
            if med["threshold_only"]["test"] is None:
                continue
            lines.append(f"| {r['set']} | {r['no_labels']['test']:.3f} | {n} | "
                         f"{med['threshold_only']['test']:.3f} | "
                         f"{med[key]['test']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True,
                        help="pair-feature cache of bench/verifier_transfer.py features")
    parser.add_argument("--sets", nargs="*", default=SETS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    names = shipped_features()
    data = load(args.cache, names)
    rows = [simulate(data, s, names, args.repeats) for s in args.sets]
    results = {"budgets": list(BUDGETS), "l2": list(L2S), "repeats": args.repeats,
               "features": names, "rows": rows, "choice": choose_l2(rows)}
    args.out.write_text(json.dumps(results, indent=1, default=float) + "\n")
    print(json.dumps(results["choice"], indent=1))
    print(table(results))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
