"""How close int8 exports of all-MiniLM-L6-v2 stay to float32, with 8-bit and 7-bit weights.

    python -m experiments.int8_export_cosine.int8_export_cosine   # raw: experiments/int8_export_cosine/results/int8-export-cosine-<cpu>.json

Exports the shipped all-MiniLM-L6-v2 (64 tokens) to float32 ONNX once, quantizes it with
8-bit and with 7-bit weights (``quantize_model_dir(reduce_range=...)``), and prints the
cosine of each int8 embedding to sentence-transformers' float32 one on the texts of
``tests/embed/test_onnx_encoder.py``. On x86 CPUs without VNNI, ONNX Runtime's u8 x s8
products saturate with 8-bit weights; the CPU's flags are recorded with the result.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _cpu() -> dict:
    info = {"model": "", "vnni": False, "avx2": False}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    for line in text.splitlines():
        if line.startswith("model name") and not info["model"]:
            info["model"] = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags = line.split(":", 1)[1].split()
            info["vnni"] = any("vnni" in f for f in flags)
            info["avx2"] = "avx2" in flags
            break
    return info


def main() -> None:
    from sentence_transformers import SentenceTransformer

    from neardup.embed.biencoder import shipped_model_path
    from neardup.embed.onnx_encoder import OnnxTransformer, export_transformer, quantize_model_dir

    sys.path.insert(0, str(ROOT / "tests" / "embed"))
    from test_onnx_encoder import TEXTS  # the test's texts, so the figures match the test

    model = SentenceTransformer(str(shipped_model_path("all-MiniLM-L6-v2")), device="cpu",
                                local_files_only=True)
    model.max_seq_length = 64
    reference = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    out = {"cpu": _cpu(), "texts": len(TEXTS)}
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = export_transformer(model[0].auto_model, model.tokenizer, Path(tmp) / "fp32",
                                  task="embedding", quantize=False, max_tokens=64)
        for bits, reduce_range in ((8, False), (7, True)):
            int8 = quantize_model_dir(fp32, Path(tmp) / f"int8-{bits}", reduce_range=reduce_range)
            emb = OnnxTransformer(int8, threads=1).embed(TEXTS, max_tokens=64)
            cosine = np.sum(emb * reference, axis=1)
            out[f"{bits}-bit weights"] = {"min_cosine": round(float(cosine.min()), 4),
                                          "mean_cosine": round(float(cosine.mean()), 4)}
            print(f"{bits}-bit weights: cosine to float32 min {cosine.min():.4f} "
                  f"mean {cosine.mean():.4f}", flush=True)
    name = "vnni" if out["cpu"]["vnni"] else ("avx2" if out["cpu"]["avx2"] else "other")
    path = Path(__file__).resolve().parent / "results" / f"int8-export-cosine-{name}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
