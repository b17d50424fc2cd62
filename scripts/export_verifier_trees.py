"""Write a verifier model folder's tree ensemble as plain arrays (``trees.npz``) and list
it in its ``model.json``, so that rerank scores with it without importing scikit-learn.

    python scripts/export_verifier_trees.py neardup/models/verifier-news neardup/models/verifier-fast

Models trained since :func:`neardup.train.verifier.save_trees` landed carry the file
already; this is for folders trained before. The predictions are checked against the
pickled classifier's on random feature rows before ``model.json`` changes.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import joblib
import numpy as np

from neardup.methods.rerank import VerifierScorer
from neardup.methods.tree_bound import TreeEnsembleBound
from neardup.train.verifier import save_trees


def export(folder: Path) -> None:
    meta = json.loads((folder / "model.json").read_text())
    model = joblib.load(folder / meta["file"])
    written = save_trees(model, folder)
    if not written:
        raise SystemExit(f"{folder}: not a gradient-boosted tree model; nothing written")
    trees = TreeEnsembleBound.load(folder / VerifierScorer.TREES_FILE)
    x = np.random.default_rng(0).random((20000, len(meta["features"])), np.float32)
    if not np.array_equal(trees.predict_proba(x), model.predict_proba(x)[:, 1]):
        raise SystemExit(f"{folder}: the saved trees do not predict as the classifier does")
    files = [f for f in meta["files"] if f not in written]
    meta["files"] = [files[0], *written, *files[1:]]
    tmp = folder / "model.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, folder / "model.json")
    print(f"{folder}: wrote {', '.join(written)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    for folder in parser.parse_args().folders:
        export(folder)


if __name__ == "__main__":
    main()
