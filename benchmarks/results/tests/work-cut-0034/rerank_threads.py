"""CPU seconds of one local rerank run (the tiny verifier over the demo corpus's first
567 documents, the Ray tests' rerank input) under the numba thread count of the
environment: decision 0034's figure. From the checkout's root:

    NUMBA_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/results/tests/work-cut-0034/rerank_threads.py
    NUMBA_NUM_THREADS=2 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/results/tests/work-cut-0034/rerank_threads.py
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from neardup.data import demo_corpus_path  # noqa: E402
from neardup.io import ReaderConfig, read_corpus  # noqa: E402
from neardup.methods import make_method  # noqa: E402
from neardup.methods.pair_features import LEXICAL_FEATURES  # noqa: E402
from neardup.pipeline import run  # noqa: E402
from neardup.train.verifier import train_verifier  # noqa: E402


def main() -> None:
    spec = importlib.util.spec_from_file_location("rerank_fixtures", ROOT / "tests/train/rerank_fixtures.py")
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    out = Path(tempfile.mkdtemp())
    train_verifier(fixtures.make_corpus(seed=0, split="train"), fixtures.make_corpus(seed=1, split="validation"),
                   output_dir=out / "verifier", classifier="logistic", features=LEXICAL_FEATURES, threads=1,
                   candidates="minhash", candidate_params={"threshold": 0.05})
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(567), handle)]
    for record in records:
        record.pop("noise", None)
    pq.write_table(pa.Table.from_pylist(records), out / "corpus.parquet", row_group_size=167)
    method = make_method("rerank", scorer="verifier", model=str(out / "verifier"))
    cpu, wall = time.process_time(), time.time()
    result = run(read_corpus([str(out / "corpus.parquet")], ReaderConfig(id_field="id", date_field="date")), method)
    print(json.dumps({"numba_threads": __import__("numba").config.NUMBA_NUM_THREADS,
                      "cpu_seconds": round(time.process_time() - cpu, 2), "wall_seconds": round(time.time() - wall, 2),
                      "documents": result.n_docs, "clusters": result.n_clusters, "pairs": len(result.pairs)}))


if __name__ == "__main__":
    main()
