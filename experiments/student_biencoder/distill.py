"""Distil biencoder-news (128 tokens) into a pruned student that reads fewer tokens.

The student (a sentence-transformers directory, e.g. the MNRL fine-tune of a pruned
all-MiniLM-L6-v2) learns to reproduce biencoder-news's unit embeddings of the first 128
tokens from its own first ``--tokens`` tokens (loss: 1 - cosine), over the reuters-news
train split only; AdamW with linear warm-up and decay. The result is exported to int8
ONNX like the trainer's exports, and scored on the trainer's validation subset.

    PYTHONPATH=. HF_HUB_OFFLINE=1 python -m experiments.student_biencoder.distill \
        --student WORK/run-L35-t64/best --tokens 64 \
        --out WORK/distill-L35-t64
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--student", required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import get_linear_schedule_with_warmup

    from neardup.embed.biencoder import BiEncoder
    from neardup.embed.onnx_encoder import export_transformer
    from neardup.eval import load_labeled
    from neardup.train.data import default_benchmark_dir, load_training_corpus
    from neardup.train.validate import embedding_ari, whole_days

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.process_time()
    corpus, _ = load_training_corpus()  # the train split only
    texts = corpus.texts
    teacher_file = out / "teacher_train_embeddings.npy"
    if teacher_file.is_file():
        teacher = np.load(teacher_file)
    else:
        teacher = BiEncoder(model="biencoder-news", threads=args.threads).encode(texts)
        np.save(teacher_file, teacher)
    teacher_cpu = time.process_time() - started

    model = SentenceTransformer(args.student, device="cpu", local_files_only=True)
    model.max_seq_length = args.tokens
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    steps_per_epoch = -(-len(texts) // args.batch_size)
    total = steps_per_epoch * args.epochs
    schedule = get_linear_schedule_with_warmup(optimizer, -(-total // 10), total)
    rng = np.random.default_rng(args.seed)
    target_all = torch.from_numpy(np.asarray(teacher, np.float32))
    log = []
    for epoch in range(args.epochs):
        order = rng.permutation(len(texts))
        losses = []
        for i in range(0, len(order), args.batch_size):
            idx = order[i : i + args.batch_size]
            features = model.tokenize([texts[j] for j in idx])
            emb = model(dict(features))["sentence_embedding"]
            emb = torch.nn.functional.normalize(emb, dim=1)
            loss = (1 - (emb * target_all[idx]).sum(1)).mean()
            loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(float(loss))
        log.append({"epoch": epoch + 1, "train_loss": round(float(np.mean(losses)), 6),
                    "cpu_seconds": round(time.process_time() - started, 1)})
        print(json.dumps(log[-1]), flush=True)

    model.eval()
    model.save(str(out / "best"))
    onnx_dir = out / "onnx"
    export_transformer(model[0].auto_model, model.tokenizer, onnx_dir, task="embedding",
                       quantize=True, max_tokens=args.tokens)
    validation = load_labeled(str(default_benchmark_dir() / "validation.jsonl.gz"))
    subset = validation.select(whole_days(validation, 2000))
    exported = BiEncoder(model=str(onnx_dir), threads=args.threads).encode(subset.texts)
    score = embedding_ari(exported, subset.clusters)
    result = {"config": vars(args), "teacher": "biencoder-news, 128 tokens (int8 ONNX)",
              "train_docs": len(texts), "teacher_cpu_seconds": round(teacher_cpu, 1),
              "epochs": log, "onnx_dir": str(onnx_dir),
              "onnx_validation_subset": {"docs": len(subset), "ari": round(float(score.ari), 6),
                                         "threshold": score.threshold},
              "cpu_seconds": round(time.process_time() - started, 1)}
    (out / "distill.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
