"""Throughput of each neural encoder on CPU: documents/s and model inputs (chunks)/s.

Encodes the first ``--docs`` Reuters-21578 stories (title + body) with each encoder, model
loading excluded (a warm-up call on a few texts runs first), and reports documents per
second, model inputs per second (RETSim: 512-character chunks; bi-encoder: token windows
of ``max_tokens``) and the process's peak RSS. Encoders run one after another in the same
process; compare rows of one run (the load average is printed).

    python -m benchmarks one embedders [--docs 2000] [--encoders retsim retsim-chunks biencoder biencoder-chunk]
                                     [--model NAME_OR_DIR ...]

``--model`` adds a bi-encoder row per shipped model name or directory (e.g. a fine-tuned
model). Results go to benchmarks/results/archive/embedders.json.
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks.harness import machine, peak_rss_mb, reuters_texts


def _encoders(names: list[str], models: list[str]) -> dict:
    from neardup.embed import BiEncoder, RETSim

    table = {
        "retsim": (RETSim(), "encode"),
        "retsim-chunks": (RETSim(), "encode_chunks"),
        "biencoder": (BiEncoder(), "encode"),
        "biencoder-chunk": (BiEncoder(long_documents="chunk"), "encode"),
    }
    chosen = {name: table[name] for name in names}
    for model in models:
        chosen[f"biencoder:{model}"] = (BiEncoder(model=model), "encode")
    return chosen


def _model_inputs(name: str, encoder, texts: list[str]) -> int:
    """Number of model inputs the encoder runs for ``texts``."""
    if name.startswith("retsim"):
        chunks = encoder._chunk("bench", texts)
        if name == "retsim-chunks":
            return int((chunks.lengths > 0).sum())
        return len(chunks)
    if encoder.long_documents == "truncate":
        return len(texts)
    from neardup.embed.biencoder import _windows

    tokenizer = encoder._loaded().tokenizer
    content = encoder.max_tokens - tokenizer.num_special_tokens_to_add(pair=False)
    inputs, _, _ = _windows(texts, tokenizer, max(content, 1))
    return len(inputs)


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000, help="stories to encode (default 2000)")
    parser.add_argument(
        "--encoders",
        nargs="+",
        default=["retsim", "retsim-chunks", "biencoder", "biencoder-chunk"],
        choices=["retsim", "retsim-chunks", "biencoder", "biencoder-chunk"],
    )
    parser.add_argument("--model", nargs="*", default=[], help="extra bi-encoder models")
    args = parser.parse_args(argv)

    texts = reuters_texts(args.docs)
    print(f"{machine()}; load average {os.getloadavg()[0]:.2f}; {len(texts)} stories")
    rows = []
    for name, (encoder, method) in _encoders(args.encoders, args.model).items():
        run = getattr(encoder, method)
        run(texts[:8], progress=False)  # load the model; warm up
        inputs = _model_inputs(name, encoder, texts)
        t0 = time.perf_counter()
        run(texts, progress=False)
        seconds = time.perf_counter() - t0
        row = {
            "encoder": name,
            "docs": len(texts),
            "model_inputs": inputs,
            "seconds": round(seconds, 2),
            "docs_per_s": round(len(texts) / seconds, 1),
            "inputs_per_s": round(inputs / seconds, 1),
            "peak_rss_mb": round(peak_rss_mb()),
        }
        rows.append(row)
        print(
            f"{name:24s} {row['docs_per_s']:8.1f} docs/s {row['inputs_per_s']:8.1f} inputs/s "
            f"({inputs} inputs, {seconds:.1f} s, peak RSS {row['peak_rss_mb']} MB)"
        )
    return {"machine": machine(), "load_average": os.getloadavg()[0], "rows": rows}

