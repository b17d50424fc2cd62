"""Cost of the noisy profile's character shingles at scale: CPU per document, peak RSS,
candidate and accepted pairs per document, for ngram and minhash at their defaults and
with ``--profile noisy``, on the scale corpus (benchmarks/scale.py runs each).

    python -m experiments.noisy_profile.cost --corpus /tmp/neardup-scale/20k

Writes experiments/noisy_profile/results/cost-<corpus name>.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.scale import run

RESULTS = Path(__file__).resolve().parent / "results"
SETTINGS = {"default": [], "noisy": ["--profile", "noisy"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--methods", nargs="*", default=["minhash", "ngram"])
    args = parser.parse_args()
    rows = []
    machine = None
    for name, extra in SETTINGS.items():
        out = run(["--corpus", str(args.corpus), "--methods", *args.methods,
                   "--extra", *extra])
        machine = out["machine"]
        for row in out["rows"]:
            stage = row.get("corpus_stage") or {}
            row["setting"] = name
            row["cpu_ms_per_doc"] = round(1000 * row["cpu_s"] / row["docs"], 3)
            # Pairs the method scored (LSH band collisions, or shared rare shingles for
            # ngram) per document: the work that grows with the corpus.
            if "candidate_edges" in stage:
                row["candidate_pairs_per_doc"] = round(stage["candidate_edges"] / row["docs"], 3)
            rows.append(row)
    path = RESULTS / f"cost-{args.corpus.name}.json"
    path.write_text(json.dumps({"machine": machine, "rows": rows}, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
