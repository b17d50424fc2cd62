"""A small synthetic labeled corpus for the reranker tests: news-like stories, each
with noisy copies (typos, a dropped sentence, a dateline), plus template look-alikes
that differ only in their figures (hard negatives)."""

from __future__ import annotations

import numpy as np

from neardup.eval.labeled import LabeledCorpus

_WORDS = (
    "oil prices rose fell sharply bank said rate interest company profit quarter shares "
    "market traders wheat crop rain output cut government minister talks agreed deal "
    "exports imports dollar yen trade deficit surplus analysts expected week month year "
    "chicago london tokyo new york firm sales earnings dividend loss gain percent mln dlrs"
).split()


def story(rng: np.random.Generator, sentences: int = 5) -> list[str]:
    return [
        " ".join(rng.choice(_WORDS, rng.integers(8, 14)).tolist()).capitalize()
        + f" {int(rng.integers(1, 99))} pct."
        for _ in range(sentences)
    ]


def noisy_copy(rng: np.random.Generator, sentences: list[str]) -> str:
    kept = [s for s in sentences if rng.random() > 0.15] or sentences[:1]
    text = "LONDON, March 3 - " + " ".join(kept)
    chars = list(text)
    for _ in range(max(1, len(chars) // 60)):  # OCR-like typos
        i = int(rng.integers(0, len(chars)))
        chars[i] = str(rng.choice(list("aeiou1l ")))
    return "".join(chars)


def make_corpus(n_stories: int = 24, copies: int = 3, seed: int = 0, split: str | None = None
                ) -> LabeledCorpus:
    rng = np.random.default_rng(seed)
    texts, clusters, dates = [], [], []
    for s in range(n_stories):
        sentences = story(rng)
        day = np.datetime64("1987-03-01") + np.timedelta64(s % 4, "D")
        for _ in range(copies):
            texts.append(noisy_copy(rng, sentences))
            clusters.append(f"s{s}")
            dates.append(day)
        if s % 4 == 0:  # a template: same wording, other figures
            other = [x.rsplit(" ", 2)[0] + f" {int(rng.integers(1, 99))} pct." for x in sentences]
            texts.append(" ".join(other))
            clusters.append(f"t{s}")
            dates.append(day)
    n = len(texts)
    return LabeledCorpus(
        ids=np.array([f"d{i}" for i in range(n)], dtype=object),
        texts=texts,
        clusters=np.array(clusters, dtype=object),
        splits=None if split is None else np.full(n, split, dtype=object),
        dates=np.array(dates, dtype="datetime64[s]"),
    )
