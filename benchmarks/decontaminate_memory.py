"""Does ``find_contamination`` (n-gram rule plus the evaluation index) hold more memory per
training document as it streams? Synthetic texts (random words of a 20,000-word
vocabulary), 10,000 items of 50 words, training batches of 1,000 documents of 100-300
words; resident memory sampled every 10 batches, in this process.

    python -m benchmarks.decontaminate_memory --batches 80

Raw results: benchmarks/results/decontaminate/memory-<batches>.json.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

from benchmarks.harness import machine, results_saver

save = results_saver(Path(__file__).resolve().parent / "results" / "decontaminate")


def _rss_mib() -> int:
    with open("/proc/self/status") as handle:
        return int(handle.read().split("VmRSS:")[1].split()[0]) // 1024


def main() -> None:
    from neardup.decontaminate import DecontaminationConfig, EvalSets, find_contamination
    from neardup.io.batch import DocumentBatch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    words = [f"w{i}" for i in range(20_000)]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    items = [text(50) for _ in range(10_000)]
    evals = EvalSets.from_batches([("eval.jsonl", iter([DocumentBatch(
        [f"e{i}" for i in range(len(items))], items, None, "eval", np.arange(len(items)))]))])
    samples = []

    def train():
        for b in range(args.batches):
            if b % 10 == 0:
                samples.append({"documents": b * 1000, "rss_mib": _rss_mib()})
                print(samples[-1], flush=True)
            yield DocumentBatch([f"t{b}-{i}" for i in range(1000)],
                                [text(rng.randint(100, 300)) for _ in range(1000)], None, "train",
                                np.arange(b * 1000, (b + 1) * 1000))

    result = find_contamination(train(), evals, DecontaminationConfig(), progress=False)
    samples.append({"documents": args.batches * 1000, "rss_mib": _rss_mib()})
    first, last = samples[1], samples[-1]  # after the first batch: libraries and index loaded
    per_doc = (last["rss_mib"] - first["rss_mib"]) * 1024 / max(last["documents"] - first["documents"], 1)
    print(f"growth after the first 10,000 documents: {per_doc:.3f} KiB per document")
    print(save(f"memory-{args.batches}", {"machine": machine(), "samples": samples,
                                          "kib_per_document": round(per_doc, 4),
                                          "summary": result.summary(),
                                          "command": f"python -m benchmarks.decontaminate_memory --batches {args.batches}"}))


if __name__ == "__main__":
    main()
