"""Train the shipped ``biencoder-news`` model (see neardup/models/biencoder-news/README.md).

Fine-tunes all-MiniLM-L6-v2 with the multiple-negatives ranking loss and hard negatives
(the best loss on validation; see neardup/models/biencoder-news/README.md) on the standard benchmark's train
split (data/reuters-news/train.jsonl.gz), selects the epoch on a validation
subset, exports the best model to int8 ONNX and, with ``--ship``, copies that export into
``neardup/models/biencoder-news/`` with its ``model.json``. The test split is never read.

Usage (about 15 minutes on two CPU cores; re-running resumes)::

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/train_biencoder_news.py --ship

Then tune the threshold on validation, record it as the shipped model's default
(``tuned_thresholds`` in its model.json) and score on test::

    .venv/bin/neardup tune data/reuters-news/validation.jsonl.gz --method biencoder \\
        --model biencoder-news --grid threshold=0.60,0.62,...,0.80 \\
        --out out/biencoder-news/tuning.json
    .venv/bin/python scripts/train_biencoder_news.py --record-threshold out/biencoder-news/tuning.json
    .venv/bin/neardup eval data/reuters-news/test.jsonl.gz --split test \\
        --from-tuning out/biencoder-news/tuning.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded

ROOT = Path(__file__).resolve().parents[1]
SHIP_DIR = ROOT / "neardup" / "models" / "biencoder-news"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=str(ROOT / "out" / "biencoder-news"))
    parser.add_argument("--loss", default="mnrl")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-pairs", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--warmup", type=float, default=0.1)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--max-validation-docs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ship", action="store_true",
                        help=f"copy the int8 ONNX export into {SHIP_DIR.relative_to(ROOT)}")
    parser.add_argument("--record-threshold", metavar="TUNING_JSON",
                        help="only write the threshold `neardup tune` chose on validation "
                             "into the shipped model.json (tuned_thresholds) and exit")
    args = parser.parse_args(argv)
    if args.record_threshold:
        record_threshold(Path(args.record_threshold))
        return 0

    from neardup.eval import load_labeled
    from neardup.train.biencoder import train_biencoder
    from neardup.train.data import default_benchmark_dir, load_training_corpus

    corpus, negative_of = load_training_corpus()
    validation = load_labeled(str(default_benchmark_dir() / "validation.jsonl.gz"))
    result = train_biencoder(
        corpus, validation, output_dir=args.output_dir, negative_of=negative_of,
        loss=args.loss, epochs=args.epochs, max_pairs=args.max_pairs,
        batch_size=args.batch_size, lr=args.lr, warmup=args.warmup, max_tokens=args.max_tokens,
        max_validation_docs=args.max_validation_docs, seed=args.seed, threads=args.threads,
        export="int8", progress=None,
    )
    print(json.dumps({k: v for k, v in result.items() if k != "config"}, indent=2))
    if args.ship:
        ship(result)
    return 0


def ship(result: dict) -> None:
    """Copy the ONNX export into the package and write its model.json (the README model
    card is written by hand from training.json and the tune/eval results)."""
    source = Path(result["onnx_dir"])
    SHIP_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "tokenizer.json", "onnx.json"):
        shutil.copyfile(source / name, SHIP_DIR / name)
    onnx_meta = json.loads((source / "onnx.json").read_text())
    meta = {
        "kind": "biencoder",
        "format": "onnx",
        "files": ["model.onnx", "tokenizer.json", "onnx.json"],
        "base": "sentence-transformers/all-MiniLM-L6-v2",
        "loss": result["config"]["loss"],
        "max_tokens": result["config"]["max_tokens"],
        "dim": onnx_meta["hidden_size"],
        "quantization": onnx_meta["quantization"],
        "validation_ari_subset": result["best_validation_ari"],
        "threshold_subset": result["best_threshold"],
    }
    (SHIP_DIR / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"shipped to {SHIP_DIR}", file=sys.stderr)


def record_threshold(tuning_path: Path) -> None:
    """Make the validation-tuned threshold of ``neardup tune`` the shipped model's default."""
    tuning = json.loads(tuning_path.read_text())
    if tuning.get("split") != "validation" or tuning.get("method") != "biencoder":
        raise SystemExit(f"{tuning_path}: not a biencoder tuning on the validation split")
    meta = json.loads((SHIP_DIR / "model.json").read_text())
    meta["tuned_thresholds"] = {"biencoder": tuning["params"]["threshold"]}
    meta["tuned_thresholds_source"] = (
        "neardup tune on the full reuters-news validation split, connected components (README.md)")
    (SHIP_DIR / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{SHIP_DIR / 'model.json'}: tuned_thresholds {meta['tuned_thresholds']}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
