"""semhash against ``--method static``, side by side in one run on the same data and the
same static model, and static embeddings as rerank's candidate generator.

``peers`` mode. Both tools get the same model2vec model (neardup's shipped
``static-minilm``, distilled offline from all-MiniLM-L6-v2; semhash's default model would
be downloaded, which is not allowed here). For each labelled set: each tool's threshold is
swept on the validation split and the best one (ARI) is run on the test split in a fresh
child process: its CPU seconds (user + system) from ``os.wait4``, its peak RSS from its
own ``VmHWM``.
semhash: ``SemHash.from_records`` then ``self_deduplicate(threshold)``; a filtered record
joins the cluster of the record it duplicates. neardup: ``neardup.dedup(texts, "static",
threshold=...)``, memory engine. Docs per CPU second count everything in the child after
the texts are read (model load included, for both).

``rerank`` mode. ``--method rerank`` (verifier) on each set's validation split with its
default candidates (MinHash, character 5-grams, Jaccard 0.1) against static candidates
(``candidates="static"``, cosine >= ``--candidate-threshold``, ``k`` nearest): candidate
pairs per document, the share of true pairs found among them (recall of the candidate
stage), and the rerank threshold tuned on validation with its ARI, then test ARI at
that threshold.

    python benchmarks/peers_static.py peers --sets indep-noisocr,reuters-news
    python benchmarks/peers_static.py rerank --sets reuters-news,indep-noisocr
    python benchmarks/peers_static.py rerank --candidates-only --sets reuters-news

Results: benchmarks/results/neural/peers_static_<mode>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "neural"
MODEL = "static-minilm"
SEMHASH_GRID = [0.8, 0.85, 0.9, 0.92, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99]


def _corpus(name: str, split: str):
    from neardup.eval.labeled import load_labeled

    return load_labeled(HERE / name / f"{split}.jsonl.gz")


def semhash_labels(texts: list[str], threshold: float, model) -> np.ndarray:
    from semhash import SemHash

    records = [{"id": str(i), "text": t} for i, t in enumerate(texts)]
    result = SemHash.from_records(records, columns=["text"], model=model).self_deduplicate(
        threshold=threshold)
    labels = np.arange(len(texts))
    for dup in result.filtered:
        labels[int(dup.record["id"])] = int(dup.duplicate_of["id"])
    return labels


def _static_model():
    from model2vec import StaticModel

    from neardup.embed.static import static_model_dir

    return StaticModel.from_pretrained(str(static_model_dir(MODEL)))


def run_one(tool: str, name: str, split: str, threshold: float) -> dict:
    """One tool on one split (the child process's work)."""
    from neardup.eval.metrics import cluster_metrics

    corpus = _corpus(name, split)
    texts = list(corpus.texts)
    start = time.process_time()
    if tool == "semhash":
        labels = semhash_labels(texts, threshold, _static_model())
    else:
        import neardup

        labels = neardup.dedup(texts, "static", engine="memory", pair_types=False,
                               model=MODEL, threshold=threshold).clusters
    cpu = time.process_time() - start
    return {"ari": round(cluster_metrics(corpus.clusters, labels)["ari"], 4), "docs": len(texts),
            "cpu_seconds_in_process": round(cpu, 2), "peak_rss_mb": _vm_hwm_mb()}


def _vm_hwm_mb() -> float:
    """This process's peak resident memory (VmHWM). Not ru_maxrss: on Linux a child's
    ru_maxrss starts at its parent's resident size when it forked, exec or not."""
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmHWM:"))
    return round(int(line.split()[1]) / 1024, 1)


def tune_semhash(name: str) -> tuple[float, float]:
    from neardup.eval.metrics import cluster_metrics

    corpus = _corpus(name, "validation")
    model = _static_model()
    scores = {t: cluster_metrics(corpus.clusters, semhash_labels(list(corpus.texts), t, model))["ari"]
              for t in SEMHASH_GRID}
    best = max(scores, key=scores.get)
    return best, scores[best]


def tune_static(name: str) -> tuple[float, float]:
    from neardup.eval.tuning import tune

    result = tune(_corpus(name, "validation"), "static", split="validation",
                  base_params={"model": MODEL})
    return result.params["threshold"], result.best_score


def measured_child(args: list[str]) -> dict:
    """Run this script's ``child`` mode; its JSON plus CPU seconds and peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, __file__, "child", *args], stdout=subprocess.PIPE,
                            env=env, cwd=ROOT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"child {args} failed with status {status}")
    row = json.loads(out.decode().strip().splitlines()[-1])
    row["child_cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 2)
    row["docs_per_cpu_second"] = round(row["docs"] / row["cpu_seconds_in_process"], 1)
    return row


def peers_mode(args: argparse.Namespace) -> dict:
    rows = []
    for name in args.sets.split(","):
        for tool, tuner in (("semhash", tune_semhash), ("neardup static", tune_static)):
            threshold, val_ari = tuner(name)
            test = measured_child([tool, name, "test", str(threshold)])
            rows.append({"tool": tool, "set": name, "threshold": threshold,
                         "validation_ari": round(val_ari, 4), **{f"test_{k}" if k == "ari" else k: v
                                                                 for k, v in test.items()}})
            print(json.dumps(rows[-1]), flush=True)
    return {"model": MODEL, "rows": rows}


def _true_pair_recall(pairs, clusters) -> float:
    clusters = np.asarray(clusters)
    _, inverse, counts = np.unique(clusters, return_inverse=True, return_counts=True)
    total = int((counts * (counts - 1) // 2).sum())
    same = clusters[pairs.left] == clusters[pairs.right]
    return float(same.sum() / total) if total else 1.0


def rerank_mode(args: argparse.Namespace) -> dict:
    from neardup.eval.tuning import tune
    from neardup.eval.evaluate import evaluate
    from neardup.methods.rerank import candidate_method

    rows = []
    settings = {"minhash (char-5, Jaccard 0.1; default)": {"candidates": "minhash"},
                f"static ({MODEL}, cosine {args.candidate_threshold}, k {args.k})": {
                    "candidates": "static",
                    "candidate_params": {"model": MODEL, "threshold": args.candidate_threshold,
                                         "k": args.k}}}
    for name in args.sets.split(","):
        validation = _corpus(name, "validation")
        for label, params in settings.items():
            cand = candidate_method(params["candidates"], params.get("candidate_params"))
            start = time.process_time()
            pairs = cand.find_pairs(cand.sketch(list(validation.texts)))
            cand_cpu = time.process_time() - start
            row = {"set": name, "candidates": label,
                   "candidate_pairs_per_doc": round(len(pairs) / len(validation), 2),
                   "true_pairs_among_candidates": round(_true_pair_recall(pairs, validation.clusters), 4),
                   "candidate_cpu_seconds": round(cand_cpu, 2)}
            if not args.candidates_only:
                tuned = tune(validation, "rerank", split="validation", base_params=params)
                test = evaluate(_corpus(name, "test"), "rerank", params=tuned.params)
                row.update({"threshold": tuned.params["threshold"],
                            "validation_ari": round(tuned.best_score, 4),
                            "test_ari": round(test["ari"], 4), "test_seconds": round(test["seconds"], 1)})
            rows.append(row)
            print(json.dumps(rows[-1]), flush=True)
    return {"rows": rows}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        tool, name, split, threshold = sys.argv[2:6]
        print(json.dumps(run_one(tool, name, split, float(threshold))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("peers", "rerank"))
    parser.add_argument("--sets", default="indep-noisocr,reuters-news")
    parser.add_argument("--candidate-threshold", type=float, default=0.8)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--candidates-only", action="store_true",
                        help="rerank mode: the candidate stage only (no tuning, no test split).")
    args = parser.parse_args()
    payload = peers_mode(args) if args.mode == "peers" else rerank_mode(args)
    payload["command"] = "python benchmarks/peers_static.py " + " ".join(sys.argv[1:])
    payload["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()}"
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "_candidates" if args.mode == "rerank" and args.candidates_only else ""
    (RESULTS / f"peers_static_{args.mode}{suffix}.json").write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
