"""Corpora and checks the index tests build their cases from (plain helpers: fixtures are in
conftest.py)."""

from __future__ import annotations

import numpy as np


def synthetic_texts(n: int, seed: int = 0, copies: int = 3) -> list[str]:
    """``n`` texts: stories of 60 random words, each with up to ``copies`` noisy copies."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(5000)]
    texts: list[str] = []
    while len(texts) < n:
        story = list(rng.choice(vocab, 60))
        texts.append(" ".join(story))
        for _ in range(int(rng.integers(0, copies + 1))):
            copy = list(story)
            copy[int(rng.integers(0, 60))] = str(rng.choice(vocab))
            texts.append(" ".join(copy))
    return texts[:n]


def partition_equal(a, b) -> bool:
    """Whether two labelings group the documents the same way (labels may differ)."""
    a, b = np.asarray(a).tolist(), np.asarray(b).tolist()
    return len(set(zip(a, b))) == len(set(a)) == len(set(b))
