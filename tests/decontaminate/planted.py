"""A planted decontamination case built from the bundled demo corpus: evaluation items
(the openings of stories), a clean training corpus (stories of other clusters), and copies
of items planted in training documents: exact inside longer documents, paraphrased
(word edits), OCR-noised, and OCR-noised inside longer documents."""

from __future__ import annotations

import gzip
import json

import numpy as np

from neardup.data import demo_corpus_path
from neardup.datasets.noise import ocr_noise, word_edits


def one_story_per_cluster(min_words: int) -> list[str]:
    """One story per cluster of the demo corpus (no near-duplicates among them), of more
    than ``min_words`` words."""
    out, seen = [], set()
    with gzip.open(demo_corpus_path(), "rt") as handle:
        for line in handle:
            record = json.loads(line)
            if record["cluster"] not in seen and len(record["text"].split()) > min_words:
                seen.add(record["cluster"])
                out.append(record["text"])
    return out


def make_planted() -> dict:
    """The case (see the module)."""
    stories = one_story_per_cluster(120)
    rng = np.random.default_rng(11)
    items = [" ".join(s.split()[:50]) for s in stories[:60]]
    clean = stories[60:360]
    hosts = stories[360:400]
    vocabulary = " ".join(clean[:50]).split()

    def inside(host: str, item: str) -> str:
        words = host.split()
        return " ".join(words[:60] + [item] + words[60:])

    planted_docs = {
        "exact_inside": [(inside(hosts[k], items[k]), k) for k in range(10)],
        "paraphrased": [(word_edits(items[k], rng, rate=0.1, vocabulary=vocabulary), k) for k in range(10, 20)],
        "ocr": [(ocr_noise(items[k], rng, severity=0.03), k) for k in range(20, 30)],
        "ocr_inside": [(inside(hosts[k], ocr_noise(items[k], rng, severity=0.03)), k) for k in range(30, 35)],
    }
    return {"items": items, "clean": clean, "planted": planted_docs}
