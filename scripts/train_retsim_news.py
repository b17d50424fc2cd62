"""Train the shipped ``retsim-news`` model (see neardup/models/retsim-news/README.md).

Fine-tunes RETSim v1 (the ONNX model of the unisim package, ported to PyTorch) with the
multi-similarity loss on the standard benchmark's train split
(data/reuters-news/train.jsonl.gz) with on-the-fly noisy copies, selects the epoch
on whole days of the validation split, exports the best epoch to ONNX and, with
``--ship``, copies it into ``neardup/models/retsim-news/`` with its ``model.json``. The test
split is never read.

Usage (about 15 minutes, 620 CPU seconds, on one busy CPU core; re-running resumes)::

    .venv/bin/python scripts/train_retsim_news.py --ship

Then tune the threshold on validation and score on test::

    .venv/bin/neardup tune data/reuters-news/validation.jsonl.gz --method retsim \\
        --model retsim-news --param threads=1 --grid threshold=0.40,0.42,...,0.96 \\
        --out out/retsim-news/tuning.json
    .venv/bin/neardup eval data/reuters-news/test.jsonl.gz --split test \\
        --from-tuning out/retsim-news/tuning.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIP_DIR = ROOT / "neardup" / "models" / "retsim-news"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=str(ROOT / "out" / "retsim-news"))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--per-cluster", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--no-augment", action="store_true")
    parser.add_argument("--max-validation-docs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ship", action="store_true",
                        help=f"copy model.onnx into {SHIP_DIR.relative_to(ROOT)}")
    args = parser.parse_args(argv)

    from neardup.eval import load_labeled
    from neardup.train.data import default_benchmark_dir, load_training_corpus
    from neardup.train.retsim_trainer import train_retsim

    corpus, negative_of = load_training_corpus()
    validation = load_labeled(str(default_benchmark_dir() / "validation.jsonl.gz"))
    result = train_retsim(
        corpus, validation, output_dir=args.output_dir, negative_of=negative_of,
        epochs=args.epochs, batch_size=args.batch_size, per_cluster=args.per_cluster,
        lr=args.lr, seed=args.seed, augment=not args.no_augment,
        max_validation_docs=args.max_validation_docs, threads=args.threads, progress=None,
    )
    print(json.dumps(result, indent=2))
    if args.ship:
        ship(result)
    return 0


def ship(result: dict) -> None:
    """Copy model.onnx into the package and write its model.json (the README model card
    is written by hand from training.json and the tune/eval results)."""
    SHIP_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result["model"], SHIP_DIR / "model.onnx")
    log = json.loads(Path(result["log"]).read_text(encoding="utf-8"))
    config = log["config"]
    meta = {
        "kind": "retsim",
        "format": "onnx",
        "files": ["model.onnx"],
        "base": "RETSim v1 (unisim 1.0.1)",
        "input": "input_1 float32 (batch, 512, 24)",
        "output": "embedding_model float32 (batch, 256), L2-normalised",
        "loss": config["loss"],
        "miner": config["miner"],
        "epochs_run": len(log["epochs"]),
        "best_epoch": result["best_epoch"],
        "validation_ari_subset": result["best_validation_ari"],
        "threshold_subset": result["best_threshold"],
        "validation_docs_subset": result["validation_docs"],
    }
    (SHIP_DIR / "model.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"shipped to {SHIP_DIR}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
