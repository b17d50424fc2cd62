"""RETSim embedding throughput: neardup.embed.RETSim vs unisim's TextSim.embed.

Same texts, same ONNX model file, same machine, in one run, from raw text to (n_docs, 256)
embeddings, model loading excluded. Each scenario's texts are cut into ``--slices`` slices
(one ``encode`` call each, as a pipeline calls it per batch); on each slice the two
encoders alternate ``--repeat`` times and the best time of each counts; times are summed
over slices. So a burst of load from other processes spoils one run of one slice, not the
total. The speed-up column is what to compare across machines; absolute numbers depend on
the cores and on the machine's load (the load average is printed).

Scenarios (Reuters-21578 stories, title + body):

* ``stories``: the first ``--docs`` stories;
* ``stories x2``: the first ``--docs / 2`` stories, each twice, shuffled within its slice
  (exact duplicates, common in the corpora neardup is for); same number of documents;
* ``binarizer``: text to model input only (unisim's ``binarizer`` vs ours, batch by batch
  as RETSim does it), no model.

    python -m benchmarks one retsim_embed [--docs 2000] [--repeat 3] [--slices 10] [--batch-size 16]
                                  [--threads N]

Needs the ``neural`` extra plus unisim's own dependencies (pandas, usearch, ...) for the
comparison.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks.harness import machine


def _reuters(limit: int) -> list[str]:
    from neardup.io import ReaderConfig, find_reuters_dir, iter_records

    root = find_reuters_dir()
    if root is None:
        raise SystemExit(
            "Reuters-21578 not found (../shared/data/reuters21578 or $NEARDUP_REUTERS_DIR)"
        )
    files = sorted(str(p) for p in root.glob("reut2-*.sgm"))
    return [r["text"] for r in iter_records(files, ReaderConfig(limit=limit))]


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _alternate(fns: dict, texts: list[str], repeat: int, slices: int) -> dict:
    """Time each function on ``texts``: for each slice of the texts, the best of ``repeat``
    interleaved runs, summed over slices (a burst of load from other processes then spoils
    one run of one slice, not the total). Returns name -> (seconds, stacked outputs)."""
    bounds = np.linspace(0, len(texts), slices + 1).astype(int)
    total = {name: 0.0 for name in fns}
    outputs: dict[str, list] = {name: [] for name in fns}
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = texts[lo:hi]
        best = {name: float("inf") for name in fns}
        last = {}
        for _ in range(repeat):
            for name, fn in fns.items():
                t0 = time.perf_counter()
                last[name] = fn(part)
                best[name] = min(best[name], time.perf_counter() - t0)
        for name in fns:
            total[name] += best[name]
            outputs[name].append(last[name])
    return {name: (total[name], np.concatenate(outputs[name])) for name in fns}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--batch-size", type=int, default=16, help="neardup RETSim batch size (chunks)"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="neardup RETSim intra-op threads"
    )
    parser.add_argument(
        "--slices", type=int, default=10, help="timed slices per scenario (best of --repeat each)"
    )
    args = parser.parse_args(argv)

    import onnxruntime
    from unisim import TextSim
    from unisim.embedder.text.binarizer import binarizer as unisim_binarizer

    from neardup.embed import RETSim
    from neardup.embed.binarizer import CODE_BITS, binarize_codes, chunk_texts

    stories = _reuters(args.docs)
    half = stories[: len(stories) // 2]
    rng = np.random.default_rng(0)
    doubled = []
    for part in np.array_split(np.arange(len(half)), args.slices):
        doubled += [half[i] for i in rng.permutation(np.repeat(part, 2))]
    scenarios = {"stories": stories, "stories x2": doubled}

    ours = RETSim(batch_size=args.batch_size, threads=args.threads)
    theirs = TextSim()  # its defaults: batch_size=128, ONNX backend on CPU
    ours.encode(stories[:8])
    theirs.embed(stories[:8])

    load_before = os.getloadavg()[0]
    rows = []
    for name, texts in scenarios.items():
        chunks = chunk_texts(texts)
        keys = chunks.codes().view(np.dtype((np.void, 4 * chunks.chunk_size)))
        distinct = len(np.unique(keys))
        runs = {
            "unisim": lambda t: np.asarray(theirs.embed(t)),
            "neardup": lambda t: ours.encode(t),
        }
        res = _alternate(runs, texts, args.repeat, args.slices)
        (t_u, e_u), (t_n, e_n) = res["unisim"], res["neardup"]
        cos = float(np.min(np.sum(e_u * e_n, axis=1)))
        rows.append((name, len(texts), len(chunks), distinct, t_u, t_n, cos))

    def ours_binarize(texts, batch=args.batch_size):
        chunks = chunk_texts(texts)
        buf = np.empty((batch, chunks.chunk_size, CODE_BITS), np.float32)
        for lo in range(0, len(chunks), batch):
            codes = chunks.codes(np.arange(lo, min(lo + batch, len(chunks))))
            binarize_codes(codes, out=buf[: len(codes)])

    t_bu, _ = _best(lambda: unisim_binarizer(stories), args.repeat)
    t_bn, _ = _best(lambda: ours_binarize(stories), args.repeat)
    n_chunks = len(chunk_texts(stories))
    load_after = os.getloadavg()[0]

    print(f"RETSim embeddings, {machine()}, onnxruntime {onnxruntime.__version__}")
    print(
        f"neardup RETSim(batch_size={args.batch_size}, threads={args.threads}) vs "
        f"unisim TextSim() (batch_size=128); best of {args.repeat} per slice of "
        f"1/{args.slices} of the texts; "
        f"load average {load_before:.1f} -> {load_after:.1f}\n"
    )
    print(
        "| scenario | docs | chunks (distinct) | unisim docs/s | neardup docs/s "
        "| unisim chunks/s | neardup chunks/s | speed-up | min cosine |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, k, d, t_u, t_n, cos in rows:
        print(
            f"| {name} | {n:,} | {k:,} ({d:,}) | {n / t_u:,.1f} | {n / t_n:,.1f} | "
            f"{k / t_u:,.1f} | {k / t_n:,.1f} | {t_u / t_n:.2f}x | {cos:.6f} |"
        )
    n = len(stories)
    print(
        f"| binarizer only | {n:,} | {n_chunks:,} | {n / t_bu:,.0f} | {n / t_bn:,.0f} | "
        f"{n_chunks / t_bu:,.0f} | {n_chunks / t_bn:,.0f} | {t_bu / t_bn:.1f}x | - |"
    )
    return {"machine": machine(), "onnxruntime": onnxruntime.__version__, "batch_size": args.batch_size,
            "threads": args.threads, "repeat": args.repeat, "slices": args.slices,
            "load_average": [load_before, load_after],
            "rows": [{"scenario": name, "docs": n, "chunks": k, "distinct_chunks": d, "unisim_s": t_u,
                      "neardup_s": t_n, "min_cosine": cos} for name, n, k, d, t_u, t_n, cos in rows],
            "binarizer": {"docs": len(stories), "chunks": n_chunks, "unisim_s": t_bu, "neardup_s": t_bn}}
