"""How far apart the clusters of ``rerank_cost.py compare``'s runs are: rerank at its
defaults against ``--rerank-variant`` runs (the Screen step's cap against every candidate
scored), as partitions of the document ids.

    python benchmarks/rerank_cost.py compare --data reuters --rerank-variant 'all:low_partners=null' --clusters-dir DIR
    python benchmarks/rerank_cluster_agreement.py --clusters-dir DIR --data reuters --pair rerank:rerank-all

Per run: clusters, documents in clusters of two or more, the largest cluster, and for
``scale:PATH`` the ARI against the scale corpus's ``cluster`` column; per ``--pair``
(two run labels): the ARI between the two clusterings. Raw results:
``benchmarks/results/rerank/NAME.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from sklearn.metrics import adjusted_rand_score

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "rerank"


def _clusters(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Ids (sorted) and their cluster labels."""
    table = pq.read_table(path, columns=["id", "cluster"])
    ids = table.column("id").cast(pa.string()).to_numpy(zero_copy_only=False)
    order = np.argsort(ids, kind="stable")
    return ids[order], table.column("cluster").to_numpy()[order]


def _labels(data: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The scale corpus's ids (sorted) and true clusters; None for other data."""
    if not data.startswith("scale:"):
        return None
    path = Path(data[len("scale:"):])
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    table = pa.concat_tables(pq.read_table(f, columns=["id", "cluster"]) for f in files)
    ids = table.column("id").cast(pa.string()).to_numpy(zero_copy_only=False)
    order = np.argsort(ids, kind="stable")
    return ids[order], table.column("cluster").to_numpy()[order]


def agreement(directory: Path, data: str, pairs: list[tuple[str, str]]) -> dict:
    prefix = data.replace(":", "_").replace("/", "_")
    runs = {p.name[len(prefix) + 1:-len(".parquet")]: _clusters(p)
            for p in sorted(directory.glob(f"{prefix}-*.parquet"))}
    truth = _labels(data)
    row: dict = {}
    for label, (ids, clusters) in runs.items():
        sizes = np.bincount(np.unique(clusters, return_inverse=True)[1])
        facts = {"clusters": int(sizes.size), "largest": int(sizes.max()),
                 "documents_in_clusters_of_2_or_more": int(sizes[sizes > 1].sum())}
        if truth is not None:
            if not np.array_equal(truth[0], ids):
                raise SystemExit(f"{label}: its ids are not the corpus's")
            facts["ari_against_labels"] = round(float(adjusted_rand_score(truth[1], clusters)), 5)
        row[label] = facts
    for a, b in pairs:
        if a in runs and b in runs:
            if not np.array_equal(runs[a][0], runs[b][0]):
                raise SystemExit(f"{a} and {b} hold different ids")
            row[f"{a} vs {b}"] = {
                "ari": round(float(adjusted_rand_score(runs[a][1], runs[b][1])), 5),
                "identical": bool(adjusted_rand_score(runs[a][1], runs[b][1]) == 1.0)}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters-dir", type=Path, required=True)
    parser.add_argument("--data", action="append", required=True,
                        help="as rerank_cost.py's --data (repeatable)")
    parser.add_argument("--pair", action="append", default=[],
                        type=lambda v: tuple(v.split(":", 1)),
                        help="two run labels to compare, A:B (repeatable)")
    parser.add_argument("--name", default=None, help="results file name (no extension)")
    args = parser.parse_args()
    rows = {data: agreement(args.clusters_dir, data, args.pair) for data in args.data}
    text = json.dumps({"argv": [*args.data], "results": rows}, indent=1) + "\n"
    print(text)
    if args.name:
        (RESULTS / f"{args.name}.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
