"""Train the shipped ``verifier-news`` model (``--method rerank``, the default scorer).

Fits the light verifier (a scikit-learn classifier over pair features) on the
reuters-news benchmark's train split: every RETSim candidate pair of the train split,
labelled by the true clusters, plus positives and hard negatives from ``make_pairs``.
The validation split gives the reported ARI and threshold; the test split is never read.

Run from the repository root::

    .venv/bin/python scripts/train_verifier_news.py            # writes neardup/models/verifier-news
    .venv/bin/python scripts/train_verifier_news.py --classifier logistic --out /tmp/v-logistic
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "neardup" / "models" / "verifier-news")
    parser.add_argument("--classifier", choices=["hgb", "logistic"], default="hgb")
    parser.add_argument("--features", choices=["lexical", "all"], default="lexical",
                        help="lexical: n-gram, alignment, length and date features (no "
                             "onnxruntime needed at inference); all: plus RETSim cosines.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache-dir", default=None,
                        help="RETSim embedding cache for the candidate search (optional).")
    args = parser.parse_args()

    from neardup.eval import load_labeled
    from neardup.methods.pair_features import FEATURES, LEXICAL_FEATURES
    from neardup.train.data import load_training_corpus
    from neardup.train.verifier import train_verifier

    train, negative_of = load_training_corpus()
    validation = load_labeled(str(ROOT / "data/reuters-news/validation.jsonl.gz"))
    validation = validation.select_split("validation")
    report = train_verifier(
        train, validation, output_dir=args.out, negative_of=negative_of,
        classifier=args.classifier,
        features=LEXICAL_FEATURES if args.features == "lexical" else FEATURES,
        candidates="retsim",
        candidate_params={"cache_dir": args.cache_dir} if args.cache_dir else None,
        threads=args.threads, seed=0,
    )
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2, default=str))


if __name__ == "__main__":
    main()
