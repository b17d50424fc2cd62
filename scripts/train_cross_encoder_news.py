"""Train the shipped ``cross-encoder-news`` model (``--method rerank --param scorer=cross-encoder``).

Fine-tunes all-MiniLM-L6-v2 as a pair classifier on the reuters-news benchmark's train
split (validation split for model selection; the test split is never read), then exports
the best epoch to int8 ONNX in ``neardup/models/cross-encoder-news/`` and checks that the
int8 model's validation ARI matches the fp32 one.

Run from the repository root (resumable: re-run the same command after an interruption)::

    .venv/bin/python scripts/train_cross_encoder_news.py --work runs/cross-encoder-news

Sized for a 2-core CPU shared with several other training jobs: one torch thread, 2,400
pairs, 64 tokens per text, 2 epochs at learning rate 8e-5 (about 16 CPU minutes; wall time
depends on the load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "neardup" / "models" / "cross-encoder-news"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "cross-encoder-news",
                        help="Training folder (checkpoints, log, fp32 model).")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-pairs", type=int, default=2400)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--candidate-share", type=float, default=0.5,
                        help="Share of the pairs from RETSim candidates of the train split.")
    parser.add_argument("--linked-share", type=float, default=0.0,
                        help="Share of the pairs from the train split's hard-negative links "
                             "(templates, updates, same-topic stories, shared quotes).")
    parser.add_argument("--linked-anchor", action="store_true",
                        help="Half the linked share are copies of the same linked story.")
    parser.add_argument("--shipped-dir", type=Path, default=SHIPPED,
                        help="Where the int8 ONNX model goes (default: the shipped folder).")
    parser.add_argument("--lr", type=float, default=8e-5,
                        help="Peak learning rate (the paper's 2e-5 suits 5 epochs of a large "
                             "set; with a few hundred steps the new head needs more).")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache-dir", default=None,
                        help="RETSim embedding cache for the candidate search (optional).")
    parser.add_argument("--skip-export", action="store_true")
    args = parser.parse_args()

    import numpy as np

    from neardup.eval import load_labeled
    from neardup.graph.edges import Pairs
    from neardup.methods.rerank import CrossEncoderScorer
    from neardup.train.cross_encoder import PROBABILITY_THRESHOLDS, candidate_pairs, export_onnx, train_cross_encoder
    from neardup.train.data import load_training_corpus
    from neardup.train.validate import pairs_ari, whole_days

    train, negative_of = load_training_corpus()
    validation = load_labeled(str(ROOT / "data/reuters-news/validation.jsonl.gz"))
    validation = validation.select_split("validation")
    candidate_params = {"cache_dir": args.cache_dir} if args.cache_dir else None
    report = train_cross_encoder(
        train, validation, output_dir=args.work, negative_of=negative_of,
        epochs=args.epochs, max_pairs=args.max_pairs, max_tokens=args.max_tokens, lr=args.lr,
        candidate_share=args.candidate_share, linked_share=args.linked_share,
        linked_anchor=args.linked_anchor, candidate_params=candidate_params,
        threads=args.threads, seed=0,
    )
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    if args.skip_export:
        return

    # int8 ONNX for shipping, checked against fp32 on the same validation subset.
    shipped = args.shipped_dir
    shipped.mkdir(parents=True, exist_ok=True)
    exported = export_onnx(args.work, shipped)
    subset = validation.select(whole_days(validation, 300, at_least=True))
    pairs = candidate_pairs(subset, "retsim", candidate_params, args.threads)
    labels = np.asarray(subset.clusters).astype(str)
    a = [subset.texts[i] for i in pairs.left.tolist()]
    b = [subset.texts[i] for i in pairs.right.tolist()]
    check = {}
    for name, folder in (("fp32", args.work), ("int8", shipped)):
        scorer = CrossEncoderScorer(folder, threads=args.threads)
        start = time.perf_counter()
        prob = scorer.score(a, b)
        seconds = time.perf_counter() - start
        score = pairs_ari(Pairs(pairs.left, pairs.right, prob), labels,
                          thresholds=PROBABILITY_THRESHOLDS)
        check[name] = {"ari": round(score.ari, 4), "threshold": score.threshold,
                       "pairs_per_second": round(len(a) / seconds, 1), "prob": prob}
    diff = float(np.max(np.abs(check["fp32"].pop("prob") - check["int8"].pop("prob"))))
    check["max_abs_probability_difference"] = round(diff, 4)
    check["onnx_bytes"] = exported["bytes"]
    print(json.dumps(check, indent=2))
    shutil.copy(args.work / "training.json", shipped / "training.json")
    (shipped / "onnx_check.json").write_text(json.dumps(check, indent=2) + "\n")


if __name__ == "__main__":
    main()
