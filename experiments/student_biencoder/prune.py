"""Prune all-MiniLM-L6-v2 to a few of its transformer layers (a student base to fine-tune).

Writes a local sentence-transformers directory that ``train_biencoder(base=...)`` accepts.
With ``--score``, also embeds the reuters-news validation subset the trainer selects on
(whole days, 2,000 documents) with each pruned base, untrained, and reports the best
threshold's ARI: the layer choice is made on validation only.

    PYTHONPATH=. HF_HUB_OFFLINE=1 python -m experiments.student_biencoder.prune \
        --layers 0,2,4 --out WORK/base-L024 [--score --tokens 64]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def prune(layers: list[int], out: Path) -> Path:
    """Save all-MiniLM-L6-v2 with only ``layers`` (0-based, in order) to ``out``."""
    import torch
    from sentence_transformers import SentenceTransformer

    from neardup.embed.biencoder import shipped_model_path

    model = SentenceTransformer(str(shipped_model_path("all-MiniLM-L6-v2")), device="cpu",
                                local_files_only=True)
    bert = model[0].auto_model
    bert.encoder.layer = torch.nn.ModuleList([bert.encoder.layer[i] for i in layers])
    bert.config.num_hidden_layers = len(layers)
    model.save(str(out))
    return out


def score(base: Path, tokens: int, threads: int) -> dict:
    """Untrained base's best-threshold ARI on the trainer's validation subset."""
    import torch
    from sentence_transformers import SentenceTransformer

    from neardup.eval import load_labeled
    from neardup.train.data import default_benchmark_dir
    from neardup.train.validate import embedding_ari, whole_days

    torch.set_num_threads(threads)
    validation = load_labeled(str(default_benchmark_dir() / "validation.jsonl.gz"))
    subset = validation.select(whole_days(validation, 2000))
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    model.max_seq_length = tokens
    started = time.process_time()
    with torch.no_grad():
        emb = model.encode(subset.texts, batch_size=64, convert_to_numpy=True,
                           normalize_embeddings=True, show_progress_bar=False)
    result = embedding_ari(emb, subset.clusters)
    return {"docs": len(subset), "tokens": tokens, "ari": round(float(result.ari), 6),
            "threshold": result.threshold, "cpu_seconds": round(time.process_time() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", required=True, help="comma-separated 0-based layers to keep")
    parser.add_argument("--out", required=True)
    parser.add_argument("--score", action="store_true")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    layers = [int(x) for x in args.layers.split(",")]
    out = prune(layers, Path(args.out))
    report = {"layers": layers, "base_dir": str(out)}
    if args.score:
        report["validation_subset"] = score(out, args.tokens, args.threads)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
