"""Every Reuters-21578 cluster of ``--method rerank`` (48 h window) that mixes tickers
beyond what identical bodies force, with its titles and bodies: the list the template
guard's failures are classified from (``mixing_clusters.md``).

Usage::

    python -m experiments.reuters_templates.mixing_clusters OUT [--param key=value ...]

writes ``OUT.json`` (:func:`~experiments.reuters_templates.reuters_templates.check`'s
figures, every mixing cluster under ``worst``) and ``OUT.npy`` (the cluster labels).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from experiments.reuters_templates.reuters_templates import _parse, check, load_records, run_one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output path without extension")
    parser.add_argument("--param", action="append", default=[],
                        help="rerank parameter, key=value (JSON value)")
    args = parser.parse_args()
    records = load_records(None)
    started = time.time()
    labels, cpu = run_one(records, "rerank", _parse(args.param))
    np.save(args.out + ".npy", labels)
    figures = check(records, labels, worst=1000)
    figures["cpu_seconds"] = round(cpu, 1)
    figures["wall_seconds"] = round(time.time() - started, 1)
    with open(args.out + ".json", "w") as f:
        json.dump(figures, f, indent=1)
    print({k: v for k, v in figures.items() if k not in ("worst", "split_groups")})


if __name__ == "__main__":
    main()
