"""Issue 17: does refitting the verifier to a user's labels beat fitting its threshold?

    python bench/calibrate_verifier.py --cache DIR [--sets ...] [--repeats 3]
    python bench/calibrate_verifier.py --ship-pairs neardup/models/verifier-news --cache DIR

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
* **refit, share w**: :func:`neardup.train.verifier.refit_verifier` on a per-set sample
  of at most ``--pairs-per-set`` base pairs of the other sets (what ``--ship-pairs``
  ships beside the model) plus the labels carrying share ``w`` of the weight; threshold
  fitted to the labels' out-of-fold probabilities.

Every variant is scored by connected components of the re-scored candidates (ARI), on
the *other* half of S's validation documents (the whole split clustered; the labelled
half excluded from the score) and on S's test split. The label share ``--fit-verifier``
uses is chosen on those validation halves only: the share with the best worst-case
(over sets and budgets) median gain over threshold-only. Test ARIs are only read for
the report. Raw results: bench/results/calibrate_verifier.json.

``--ship-pairs DIR`` writes DIR/training_pairs.npz: the same per-set sample of every
train split's pairs (float16, the model's feature columns).
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
from neardup.train.verifier import (  # noqa: E402
    drop_dates,
    make_classifier,
    refit_verifier,
)

RESULTS = ROOT / "bench" / "results" / "calibrate_verifier.json"
BUDGETS = (20, 40, 80)
SHARES = (0.05, 0.2)
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


def sample_pairs(data: dict, sets: list[str], per_set: int, seed: int = 0):
    """At most ``per_set`` train pairs of each set (seeded, in set order)."""
    xs, ys = [], []
    for s in sets:
        x, y = data[s]["train_x"], data[s]["train_y"]
        keep = np.sort(np.random.default_rng(seed).permutation(len(x))[:per_set])
        xs.append(x[keep])
        ys.append(y[keep])
    return np.concatenate(xs), np.concatenate(ys).astype(np.int64)


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


def simulate(data: dict, held: str, names: list[str], per_set: int, repeats: int) -> dict:
    trainable = [s for s in SETS if "train_x" in data[s] and s != held]
    cpu0 = time.process_time()
    user_model = fit_full(data, trainable, names)
    base_x, base_y = sample_pairs(data, trainable, per_set)
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
    row = {"set": held, "trained_on": trainable, "base_pairs": int(len(base_y)),
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
            for share in SHARES:
                refit = refit_verifier(base_x, base_y, vx[picks], y, features=names,
                                       label_share=share, threads=1)
                cut = fit_threshold(refit.out_of_fold, y).score
                run[f"refit {share}"] = {
                    "threshold": cut,
                    "validation": ari_at(d, "validation", prob(refit.model, vx), cut, score_docs),
                    "test": ari_at(d, "test", prob(refit.model, d["test_x"]), cut)}
            runs.append(run)
        variants = ["threshold_only", *[f"refit {s}" for s in SHARES]]
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


def choose_share(rows: list[dict]) -> dict:
    """The share whose worst (over sets and budgets) median validation gain over
    threshold-only is highest; validation halves only."""
    worst = {}
    for share in SHARES:
        gains = [b["median"][f"refit {share}"]["validation"] - b["median"]["threshold_only"]["validation"]
                 for r in rows for b in r["budgets"].values()
                 if b["median"]["threshold_only"]["validation"] is not None]
        worst[share] = {"worst": min(gains), "mean": float(np.mean(gains))}
    best = max(SHARES, key=lambda s: (worst[s]["worst"], worst[s]["mean"]))
    return {"by_share": worst, "chosen": best}


def table(results: dict) -> str:
    share = results["choice"]["chosen"]
    lines = [f"| held-out set | no labels (0.9) | labels | threshold only | refit (share {share}) |",
             "|---|---:|---:|---:|---:|"]
    for r in results["rows"]:
        for n, b in r["budgets"].items():
            med = b["median"]
            if med["threshold_only"]["test"] is None:
                continue
            lines.append(f"| {r['set']} | {r['no_labels']['test']:.3f} | {n} | "
                         f"{med['threshold_only']['test']:.3f} | "
                         f"{med[f'refit {share}']['test']:.3f} |")
    return "\n".join(lines)


def ship_pairs(data: dict, names: list[str], out: Path, per_set: int) -> None:
    trainable = [s for s in SETS if "train_x" in data[s]]
    x, y = sample_pairs(data, trainable, per_set)
    np.savez_compressed(out / "training_pairs.npz", x=x.astype(np.float16), y=y.astype(np.int8),
                        features=np.array(names),
                        sets=np.array([s for s in trainable for _ in range(min(per_set, len(data[s]["train_y"])))]))
    print(f"wrote {out / 'training_pairs.npz'}: {len(y)} pairs of {trainable}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True,
                        help="pair-feature cache of bench/verifier_transfer.py features")
    parser.add_argument("--sets", nargs="*", default=SETS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs-per-set", type=int, default=2700)
    parser.add_argument("--ship-pairs", type=Path, default=None, metavar="MODEL_DIR",
                        help="only write MODEL_DIR/training_pairs.npz and exit")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    names = shipped_features()
    data = load(args.cache, names)
    if args.ship_pairs is not None:
        ship_pairs(data, names, args.ship_pairs, args.pairs_per_set)
        return
    rows = [simulate(data, s, names, args.pairs_per_set, args.repeats) for s in args.sets]
    results = {"budgets": list(BUDGETS), "shares": list(SHARES), "repeats": args.repeats,
               "pairs_per_set": args.pairs_per_set, "features": names, "rows": rows,
               "choice": choose_share(rows)}
    args.out.write_text(json.dumps(results, indent=1, default=float) + "\n")
    print(json.dumps(results["choice"], indent=1))
    print(table(results))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
