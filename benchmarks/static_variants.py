"""Static-model variants compared on the validation splits (no test split is read).

For each model directory given, on each labelled set's validation split: the threshold
sweep of ``neardup.eval.tune`` (the default grid for ``static``) and its best ARI. The
variants' tables are made from one raw distillation by ``--make``: PCA dimensions, SIF
coefficient and storage dtype, applied in model2vec's order (PCA, then SIF weights, then
the cast), so each variant equals what ``scripts/distill_static.py`` writes with those
parameters.

    python benchmarks/static_variants.py --make RAW_DIR OUT_DIR --pca 64,128,256 --dtype int8,float16
    python benchmarks/static_variants.py [--raw-text] --sets reuters-news,indep-noisocr MODEL_DIR [...]

Results: benchmarks/results/neural/static_variants.json (one row per model and set).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "neural"


def make_variants(raw: Path, out: Path, pcas: list[int], dtypes: list[str], sif: float) -> list[Path]:
    from model2vec.distill.inference import apply_pca, compute_weights
    from model2vec.quantization import DType, quantize_embeddings
    from safetensors.numpy import load_file, save_file

    table = load_file(str(raw / "model.safetensors"))["embeddings"].astype(np.float64)
    made = []
    for pca in pcas:
        reduced = apply_pca(table, pca or None) * compute_weights(len(table), sif or None)[:, None]
        for dtype in dtypes:
            target = out / f"{raw.name}-p{pca}-{dtype}"
            target.mkdir(parents=True, exist_ok=True)
            for name in ("tokenizer.json", "config.json"):
                shutil.copy(raw / name, target / name)
            save_file({"embeddings": quantize_embeddings(reduced.astype(np.float32), DType(dtype))},
                      str(target / "model.safetensors"))
            made.append(target)
    return made


def sweep(model: Path, sets: list[str], normalize: bool) -> list[dict]:
    from neardup.eval.labeled import load_labeled
    from neardup.eval.tuning import tune

    rows = []
    for name in sets:
        corpus = load_labeled(HERE / name / "validation.jsonl.gz")
        start = time.perf_counter()
        result = tune(corpus, "static", split="validation", base_params={"model": str(model),
                                                                        **({} if normalize else {"normalize": None})})
        rows.append({"model": model.name, "normalize": normalize, "set": name, "split": "validation",
                     "ari": round(result.best_score, 4), "threshold": result.params["threshold"],
                     "size_bytes": (model / "model.safetensors").stat().st_size,
                     "seconds": round(time.perf_counter() - start, 1)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--make", nargs=2, type=Path, metavar=("RAW", "OUT"))
    parser.add_argument("--pca", default="64,128,256")
    parser.add_argument("--dtype", default="int8,float16")
    parser.add_argument("--sif", type=float, default=1e-4)
    parser.add_argument("--sets", default="reuters-news,indep-noisocr,indep-nlpaug,multi-latin")
    parser.add_argument("--raw-text", action="store_true",
                        help="normalize=False: tokenize the raw text (default: normalized).")
    parser.add_argument("--out", type=Path, default=RESULTS / "static_variants.json")
    args = parser.parse_args()
    if args.make:
        made = make_variants(*args.make, [int(p) for p in args.pca.split(",")],
                             args.dtype.split(","), args.sif)
        print("\n".join(map(str, made)))
        return
    rows = [row for model in args.models
            for row in sweep(model, args.sets.split(","), not args.raw_text)]
    old = json.loads(args.out.read_text()) if args.out.is_file() else []
    key = lambda r: (r["model"], r.get("normalize", False), r["set"])  # noqa: E731
    keep = [r for r in old if key(r) not in {key(n) for n in rows}]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(keep + rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
