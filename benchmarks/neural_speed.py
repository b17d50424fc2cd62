"""Neural encoders' speed, side by side in one run on the same texts: unisim against our
RETSim (float32 and int8), our bi-encoder before against after, and the accuracy each
bi-encoder token limit costs.

Speed is counted in CPU seconds (user + system of this process, ``time.process_time``)
with one ONNX Runtime / torch thread, so the figure is documents per second per core and
does not move with the load other processes put on a shared machine (wall time does; it
is recorded too). Model loading and a warm-up batch are excluded. Each encoder runs
``--repeat`` times, interleaved with the others, and its best run counts.

Modes
-----
``retsim``
    unisim's ``TextSim.embed`` (its defaults: batch 128, float32 ONNX), our RETSim float32
    (the model unisim ships, identical embeddings) and our RETSim int8 (dense weights
    quantized, :func:`neardup.embed.retsim.int8_model_file`), plus the int8 variant that
    also quantizes the attention products (``MatMulConstBOnly=False``), on distinct
    Reuters-21578 stories; cosine of each to unisim's embedding.
``retsim-profile``
    ONNX Runtime's kernel time by operator for float32 and int8 (one batch of 32 chunks),
    and int8's cosine to float32 on the tests' varied texts (emoji, control characters,
    mixed scripts) in one batch, batches of 16 and one chunk at a time.
``biencoder``
    ``biencoder-news`` as the base commit runs it (``BiEncoder(model="biencoder-news")``:
    128 tokens) against the token limits ``--tokens``, and each ``--model`` at the token
    limit it was trained with; docs per CPU second.
``static``
    ``StaticEmbedder`` with the shipped ``static-minilm`` on the same stories, on raw and
    on normalized text (what ``--method static`` embeds).
``biencoder-accuracy``
    For each token limit of ``biencoder-news`` and each ``--model``: the threshold tuned
    on each set's validation split (``neardup tune``'s default grid) and its ARI. No test
    split is read.

    python benchmarks/neural_speed.py retsim --docs 300
    python benchmarks/neural_speed.py retsim-profile
    python benchmarks/neural_speed.py biencoder --docs 300 --tokens 32,64,128
    python benchmarks/neural_speed.py static --docs 3000
    python benchmarks/neural_speed.py biencoder-accuracy --tokens 32,64,128 --sets reuters-news,indep-noisocr

Results: benchmarks/results/neural/neural_speed_<mode>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "neural"


def reuters_stories(n: int, skip: int = 0) -> list[str]:
    """``n`` distinct Reuters-21578 stories (title + body), after the first ``skip``."""
    from neardup.io import ReaderConfig, find_reuters_dir, iter_records

    root = find_reuters_dir()
    if root is None:
        raise SystemExit("Reuters-21578 not found (../shared/data/reuters21578 or $NEARDUP_REUTERS_DIR)")
    files = sorted(str(p) for p in root.glob("reut2-*.sgm"))
    seen: set[str] = set()
    out: list[str] = []
    for record in iter_records(files, ReaderConfig(limit=skip + 4 * n)):
        text = record["text"]
        if text.strip() and text not in seen:
            seen.add(text)
            out.append(text)
    return out[skip : skip + n]


def timed(encoders: dict, texts: list[str], repeat: int) -> dict[str, dict]:
    """Best CPU and wall seconds of each encoder over ``repeat`` interleaved runs."""
    best: dict[str, dict] = {}
    for name, fn in encoders.items():
        fn(texts[:8])  # load and warm up
    for _ in range(repeat):
        for name, fn in encoders.items():
            wall, cpu = time.perf_counter(), time.process_time()
            emb = np.asarray(fn(texts), np.float32)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            if name not in best or cpu < best[name]["cpu_seconds"]:
                best[name] = {"cpu_seconds": round(cpu, 3), "wall_seconds": round(wall, 3),
                              "docs_per_cpu_second": round(len(texts) / cpu, 1),
                              "embeddings": emb}
    return best


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


def retsim_mode(args: argparse.Namespace) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from neardup.embed.retsim import RETSim, default_model_path

    texts = reuters_stories(args.docs, skip=args.skip)
    import tempfile

    attention_int8 = Path(tempfile.mkdtemp()) / "retsim-int8-attention.onnx"
    quantize_dynamic(str(default_model_path()), str(attention_int8), per_channel=True, reduce_range=True,
                     weight_type=QuantType.QInt8, extra_options={"MatMulConstBOnly": False})
    from unisim import TextSim

    unisim = TextSim()
    # unisim's session takes every core; one thread, as ours, for a per-core figure
    # (the same model file: unisim's backend keeps its session in model["sess"]).
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    unisim.embedder.model["sess"] = ort.InferenceSession(
        str(default_model_path()), options, providers=["CPUExecutionProvider"])
    encoders = {
        "unisim": lambda t: unisim.embed(t),
        "neardup float32": RETSim(threads=1).encode,
        "neardup int8": RETSim(threads=1, precision="int8").encode,
        "neardup int8 + attention int8": RETSim(threads=1, model_path=attention_int8).encode,
    }
    best = timed(encoders, texts, args.repeat)
    attention_int8.unlink()
    reference = _unit(best["unisim"]["embeddings"])
    rows = {}
    for name, row in best.items():
        cos = (_unit(row.pop("embeddings")) * reference).sum(1)
        rows[name] = {**row, "speedup_vs_unisim": round(best["unisim"]["cpu_seconds"] / row["cpu_seconds"], 2),
                      "cosine_to_unisim_mean": round(float(cos.mean()), 4),
                      "cosine_to_unisim_min": round(float(cos.min()), 4),
                      "cosine_to_unisim_p1": round(float(np.percentile(cos, 1)), 4)}
    return {"docs": len(texts), "mean_chars": round(float(np.mean([len(t) for t in texts])), 1),
            "rows": rows}


def _model_name(model: str) -> str:
    """A ``--model`` value as the results name it: a shipped name, or a directory's
    name (a trainer's ``onnx/`` export is named by its run directory)."""
    path = Path(model)
    if not path.is_dir():
        return model
    path = path.resolve()
    return path.parent.name if path.name == "onnx" else path.name


def biencoder_mode(args: argparse.Namespace) -> dict:
    from neardup.embed.biencoder import BiEncoder, trained_max_tokens

    texts = reuters_stories(args.docs, skip=args.skip)
    encoders = {"before: biencoder-news, 128 tokens (base commit's default)":
                BiEncoder(model="biencoder-news", threads=1).encode}
    for tokens in (int(t) for t in args.tokens.split(",")):
        encoders[f"biencoder-news, {tokens} tokens"] = BiEncoder(
            model="biencoder-news", max_tokens=tokens, threads=1).encode
    encoders["all-MiniLM-L6-v2 (torch), 256 tokens"] = BiEncoder(threads=1).encode
    for model in args.model:
        name, tokens = _model_name(model), trained_max_tokens(model)
        encoders[f"{name}, {tokens} tokens"] = BiEncoder(model=model, max_tokens=tokens, threads=1).encode
    best = timed(encoders, texts, args.repeat)
    for row in best.values():
        row.pop("embeddings")
    return {"docs": len(texts), "mean_chars": round(float(np.mean([len(t) for t in texts])), 1),
            "rows": best}


def retsim_profile_mode(args: argparse.Namespace) -> dict:
    """Kernel time by operator (ONNX Runtime's profiler, one thread, one batch of 32
    Reuters chunks) for float32 and int8, and int8's cosine to float32 on the tests'
    varied texts by batch size."""
    import collections
    import sys
    import tempfile

    import onnxruntime as ort

    from neardup.embed.binarizer import binarize_codes, chunk_texts
    from neardup.embed.retsim import default_model_path, int8_model_file

    sys.path.insert(0, str(HERE.parent))
    from tests.conftest import _VARIED_TEXTS

    def sessions(path: Path, profile: bool) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.enable_profiling = profile
        options.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "retsim")
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def inputs(texts: list[str]) -> np.ndarray:
        chunks = chunk_texts(texts)
        return binarize_codes(chunks.codes(np.arange(len(chunks))))

    float32, int8 = default_model_path(), int8_model_file(default_model_path())
    batch = inputs(reuters_stories(40, skip=args.skip))[:32]
    shares = {}
    for name, path in (("float32", float32), ("int8", int8)):
        session = sessions(path, True)
        feed = {session.get_inputs()[0].name: batch}
        for _ in range(3):
            session.run(None, feed)
        trace_file = Path(session.end_profiling())
        trace = json.loads(trace_file.read_text())
        trace_file.unlink()
        by_op: collections.Counter = collections.Counter()
        for event in trace:
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
                by_op[event["args"]["op_name"]] += event["dur"]
        total = sum(by_op.values())
        shares[name] = {op: round(t / total, 3) for op, t in by_op.most_common(8)}
    varied = inputs(list(_VARIED_TEXTS))
    s32, s8 = sessions(float32, False), sessions(int8, False)
    name = s32.get_inputs()[0].name
    ref = s32.run(None, {name: varied})[0]
    cosines = {}
    for size in (len(varied), 16, 1):
        got = np.concatenate([s8.run(None, {name: varied[i : i + size]})[0]
                              for i in range(0, len(varied), size)])
        cos = (_unit(got) * _unit(ref)).sum(1)
        cosines[f"batch {size}"] = {"mean": round(float(cos.mean()), 4), "min": round(float(cos.min()), 4)}
    return {"kernel_time_share_by_op": shares, "int8_cosine_to_float32_varied_texts": cosines,
            "varied_chunks": len(varied)}


def static_mode(args: argparse.Namespace) -> dict:
    from neardup.embed.static import StaticEmbedder
    from neardup.text import normalize_batch

    texts = reuters_stories(args.docs, skip=args.skip)
    embedder = StaticEmbedder()
    best = timed({"static-minilm, raw text": embedder.encode,
                  "static-minilm, normalized text (the method's default)":
                  lambda t: embedder.encode(normalize_batch(t))}, texts, args.repeat)
    for row in best.values():
        row.pop("embeddings")
    return {"docs": len(texts), "mean_chars": round(float(np.mean([len(t) for t in texts])), 1),
            "rows": best}


def biencoder_accuracy_mode(args: argparse.Namespace) -> dict:
    from neardup.eval.labeled import load_labeled
    from neardup.eval.tuning import tune

    from neardup.embed.biencoder import trained_max_tokens

    runs = [("biencoder-news", int(t)) for t in args.tokens.split(",")]
    runs += [(model, trained_max_tokens(model)) for model in args.model]
    rows = []
    for name in args.sets.split(","):
        corpus = load_labeled(HERE.parent / "data" / name / "validation.jsonl.gz")
        for model, tokens in runs:
            start = time.process_time()
            result = tune(corpus, "biencoder", split="validation",
                          base_params={"model": model, "max_tokens": tokens})
            rows.append({"set": name, "split": "validation", "model": _model_name(model),
                         "max_tokens": tokens, "ari": round(result.best_score, 4),
                         "threshold": result.params["threshold"],
                         "cpu_seconds": round(time.process_time() - start, 1)})
            print(json.dumps(rows[-1]), flush=True)
    return {"rows": rows}


MODES = {"retsim": retsim_mode, "retsim-profile": retsim_profile_mode, "biencoder": biencoder_mode, "static": static_mode,
         "biencoder-accuracy": biencoder_accuracy_mode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--skip", type=int, default=1000, help="Stories skipped first.")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tokens", default="32,64,128")
    parser.add_argument("--sets", default="reuters-news,indep-noisocr")
    parser.add_argument("--model", action="append", default=[],
                        help="biencoder, biencoder-accuracy: another bi-encoder (shipped name or "
                             "directory) beside biencoder-news, at the token limit it was trained "
                             "with; repeatable")
    args = parser.parse_args()
    payload = MODES[args.mode](args)
    payload["command"] = "python benchmarks/neural_speed.py " + " ".join(
        a for a in os.sys.argv[1:])
    payload["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()}"
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"neural_speed_{args.mode}.json"
    out.write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
