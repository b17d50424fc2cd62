"""Do ONNX Runtime's fused BERT operators make the int8 bi-encoder faster on this CPU?

The shipped bi-encoders are exported by torch's dynamo exporter, whose graph ONNX
Runtime's BERT optimizer cannot fuse into ``Attention`` operators. The TorchScript
exporter's graph can. This exports all-MiniLM-L6-v2 (the base of ``biencoder-news``) with
TorchScript, fuses it (``onnxruntime.transformers.optimizer``, model type ``bert``), and
times four graphs, each also quantized as neardup ships (7-bit per-channel signed weights)
and with unsigned 8-bit weights:

    PYTHONPATH=. HF_HUB_OFFLINE=1 python -m experiments.biencoder_fusion.fusion \\
        --work /tmp/fusion --docs 150 --tokens 128 \\
        --out experiments/biencoder_fusion/results/fusion.json

Documents per CPU second with one thread, batches of 32 sorted by length, mean pooling
in numpy (the same for every graph), best of two interleaved runs; cosine of each
embedding to the unfused float32 graph's.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import time
from pathlib import Path

import numpy as np

INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


def export_torchscript(work: Path) -> Path:
    """all-MiniLM-L6-v2's last hidden state as a TorchScript-exported ONNX graph."""
    import torch
    from transformers import AutoModel

    from neardup.embed.biencoder import shipped_model_path

    source = shipped_model_path("all-MiniLM-L6-v2")
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    example = tuple(torch.ones(2, 16, dtype=torch.long) for _ in INPUTS)
    path = work / "float32.onnx"
    torch.onnx.export(Hidden(model), example, str(path), dynamo=False, opset_version=17,
                      input_names=INPUTS, output_names=["hidden"],
                      dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*INPUTS, "hidden"]})
    shutil.copyfile(source / "tokenizer.json", work / "tokenizer.json")
    return path


def fuse(source: Path, target: Path) -> dict:
    from onnxruntime.transformers.optimizer import optimize_model

    model = optimize_model(str(source), model_type="bert", num_heads=12, hidden_size=384,
                           opt_level=0)
    model.save_model_to_file(str(target))
    return {k: v for k, v in model.get_fused_operator_statistics().items() if v}


def quantize(source: Path, target: Path, unsigned: bool) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), per_channel=True,
                     weight_type=QuantType.QUInt8 if unsigned else QuantType.QInt8,
                     reduce_range=not unsigned,
                     op_types_to_quantize=["MatMul", "Gather", "Attention", "EmbedLayerNormalization"],
                     extra_options={"DefaultTensorType": 1})  # the fused operators' outputs


def operators(path: Path) -> dict:
    import onnx

    return dict(collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node).most_common())


def distinct_stories(n: int) -> list[str]:
    from neardup.io.reuters import find_reuters_dir, reuters_records

    texts, seen = [], set()
    for path in sorted(find_reuters_dir().glob("*.sgm")):
        for _, _, record in reuters_records(path):
            text = record["text"]
            if len(text) > 200 and text not in seen:
                seen.add(text)
                texts.append(text)
                if len(texts) == n:
                    return texts
    return texts


class Runner:
    def __init__(self, path: Path, tokens):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.tokens = tokens

    def embed(self) -> np.ndarray:
        ids_list, order = self.tokens
        out = np.zeros((len(ids_list), 384), np.float32)
        for start in range(0, len(order), 32):
            batch = order[start:start + 32]
            width = max(len(ids_list[j]) for j in batch)
            ids = np.zeros((len(batch), width), np.int64)
            mask = np.zeros_like(ids)
            for row, j in enumerate(batch):
                ids[row, :len(ids_list[j])] = ids_list[j]
                mask[row, :len(ids_list[j])] = 1
            hidden = self.session.run(None, dict(zip(INPUTS, [ids, mask, np.zeros_like(ids)])))[0]
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out[batch] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="scratch folder for the graphs")
    parser.add_argument("--docs", type=int, default=150)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    from tokenizers import Tokenizer

    unfused = export_torchscript(args.work)
    fused_ops = fuse(unfused, args.work / "fused.onnx")
    graphs = {"float32": unfused, "fused float32": args.work / "fused.onnx"}
    for name, source in [("", unfused), ("fused ", args.work / "fused.onnx")]:
        for unsigned in (False, True):
            label = f"{name}int8 {'u8 weights' if unsigned else 's8 7-bit weights'}"
            target = args.work / (label.replace(" ", "-") + ".onnx")
            quantize(source, target, unsigned)
            graphs[label] = target

    texts = distinct_stories(args.docs)
    tokenizer = Tokenizer.from_file(str(args.work / "tokenizer.json"))
    tokenizer.enable_truncation(args.tokens)
    ids = [e.ids for e in tokenizer.encode_batch(texts)]
    tokens = (ids, np.argsort([len(i) for i in ids], kind="stable"))
    runners = {label: Runner(path, tokens) for label, path in graphs.items()}
    seconds = {label: [] for label in graphs}
    embeddings = {}
    for _ in range(2):
        for label, runner in runners.items():
            start = time.process_time()
            embeddings[label] = runner.embed()
            seconds[label].append(time.process_time() - start)
    reference = embeddings["float32"]
    rows = []
    for label in graphs:
        cosine = (embeddings[label] * reference).sum(1)
        rows.append({"graph": label, "docs_per_cpu_s": round(len(texts) / min(seconds[label]), 1),
                     "cpu_s": [round(s, 2) for s in seconds[label]],
                     "cosine_mean": round(float(cosine.mean()), 4),
                     "cosine_min": round(float(cosine.min()), 4),
                     "operators": operators(graphs[label])})
        print(f"{label:32s} {rows[-1]['docs_per_cpu_s']:7.1f} docs/CPU s  cosine mean "
              f"{rows[-1]['cosine_mean']:.4f} min {rows[-1]['cosine_min']:.4f}")
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    flags = Path("/proc/cpuinfo").read_text()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "command": "python -m experiments.biencoder_fusion.fusion --work WORK "
                   f"--docs {args.docs} --tokens {args.tokens} --out {args.out}",
        "docs": len(texts), "tokens": args.tokens, "fused_operators": fused_ops,
        "cpu": cpu, "avx512_vnni": "avx512_vnni" in flags, "avx_vnni": "avx_vnni" in flags,
        "load_average": os.getloadavg(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
