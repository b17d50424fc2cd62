"""One noisy copy of a story from every noise family (:func:`reprint`) and the long-tailed
number of copies each story gets (:func:`reprint_cluster_sizes`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from neardup.datasets.noise.characters import case_changes, homoglyphs, invisible_chars, pad
from neardup.datasets.noise.checks import check_rng, check_strings, check_text
from neardup.datasets.noise.dateline import change_dateline
from neardup.datasets.noise.editorial import abridge, drop_lead, drop_middle_sentences, insert_local_sentences
from neardup.datasets.noise.ocr import ocr_noise
from neardup.datasets.noise.words import sentence_edits, typos, word_edits
from neardup.errors import check_choice, check_float, check_int

PROFILES = ("news", "adversarial")


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def reprint(
    text: str,
    rng: np.random.Generator,
    profile: str = "news",
    donor_sentences: Sequence[str] = (),
    rate: float | None = None,
) -> tuple[str, list[str]]:
    """Make one noisy copy of ``text`` from a random mix of the noise families.

    ``profile="news"`` models a wire story reprinted by a local paper (Silcock et al. 2022):
    with probability 0.15 the lead is dropped (continued from another page), otherwise 0.4
    a dateline change; 0.6 abridgement; 0.15 dropped middle sentences; 0.15 local donor
    sentences (if donors are given); then always OCR noise at a severity drawn
    log-uniformly from [0.005, 0.08].

    ``profile="adversarial"`` models W4NT3D / spam (Zhang et al. 2023): with probability
    0.3 sentence edits and 0.3 padding, then each of word edits, case changes, typos,
    homoglyphs and invisible characters with probability 0.5 (at least one), in that
    order; the chosen word- and character-level families share the ``rate`` budget evenly.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    profile : {"news", "adversarial"}, default "news"
    donor_sentences : sequence of str, default ()
        Sentences from *other* stories, for local insertions and sentence substitutions.
    rate : float, optional
        "news": the OCR severity (default drawn as above). "adversarial": the total word-
        and character-level edit rate (default drawn uniformly from [0.05, 0.25], as in
        W4NT3D). In [0, 1].

    Returns
    -------
    text : str
    applied : list of str
        The steps that changed the text, in order, each a function name with the drawn
        knob in parentheses where there is one, e.g.
        ``["abridge", "ocr_noise(severity=0.0213)"]``.
    """
    caller = "reprint"
    check_text(caller, text)
    check_rng(caller, rng)
    profile = check_choice(caller, "profile", profile, PROFILES)
    donors = check_strings(caller, "donor_sentences", donor_sentences)
    if rate is not None:
        rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    applied: list[str] = []

    def step(name: str, new: str) -> None:
        nonlocal text
        if new != text:
            applied.append(name)
        text = new

    if profile == "news":
        if rng.random() < 0.15:
            step("drop_lead", drop_lead(text, rng))
        elif rng.random() < 0.4:
            step("change_dateline", change_dateline(text, rng))
        if rng.random() < 0.6:
            step("abridge", abridge(text, rng))
        if rng.random() < 0.15:
            contiguous = bool(rng.random() < 0.5)
            new = drop_middle_sentences(text, rng, rate=0.25, contiguous=contiguous)
            step("drop_middle_sentences", new)
        if donors and rng.random() < 0.15:
            n = int(rng.integers(1, 3))
            step("insert_local_sentences", insert_local_sentences(text, rng, donors, n=n))
        severity = _log_uniform(rng, 0.005, 0.08) if rate is None else rate
        step(f"ocr_noise(severity={severity:.4g})", ocr_noise(text, rng, severity))
        return text, applied

    budget = float(rng.uniform(0.05, 0.25)) if rate is None else rate
    if rng.random() < 0.3:
        r = min(budget, 0.25)
        step(f"sentence_edits(rate={r:.4g})", sentence_edits(text, rng, r, donors))
    if rng.random() < 0.3:
        amount = float(rng.uniform(0.2, 1.0))
        step(f"pad(amount={amount:.4g})", pad(text, rng, donors, amount))
    families = {
        "word_edits": word_edits, "case_changes": case_changes, "typos": typos,
        "homoglyphs": homoglyphs, "invisible_chars": invisible_chars,
    }  # fmt: skip
    names = list(families)
    chosen = [name for name in names if rng.random() < 0.5]
    if not chosen:
        chosen = [names[int(rng.integers(len(names)))]]
    share = budget / len(chosen)
    for name in chosen:
        step(f"{name}(rate={share:.4g})", families[name](text, rng, share))
    return text, applied


def _lognormal_cdf(x: float, mu: float, sigma: float) -> float:
    return 0.5 * (1.0 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2.0))))


def _clipped_ceil_mean(mu: float, sigma: float, max_size: int) -> float:
    """E[clip(ceil(X), 1, max_size)] for X ~ LogNormal(mu, sigma), in closed form:
    sum over k of P(size >= k)."""
    return 1.0 + sum(1.0 - _lognormal_cdf(k, mu, sigma) for k in range(1, max_size))


def reprint_cluster_sizes(
    n_sources: int,
    rng: np.random.Generator,
    mean: float = 6.0,
    max_size: int = 200,
    sigma: float = 1.5,
) -> np.ndarray:
    """Draw how many copies each source story has: long-tailed, many singletons.

    Sizes are ``clip(ceil(X), 1, max_size)`` with ``X ~ LogNormal(mu, sigma)``, where
    ``mu`` is solved (by bisection on the exact expectation) so that the mean size is
    ``mean``. NEWS-COPY's full-day samples average about 5-6 articles per reproduced
    story, with a tail of stories in dozens of papers and many singletons.

    Parameters
    ----------
    n_sources : int
        Number of source stories; >= 0.
    rng : numpy.random.Generator
    mean : float, default 6.0
        Expected copies per source (singletons included), in [1, max_size].
    max_size : int, default 200
        Largest cluster; >= 1.
    sigma : float, default 1.5
        Tail weight (log-scale spread); larger means more singletons and bigger giants.
        At the defaults about 35% of sources are singletons, the median is 2 and about 1%
        exceed 60 copies.

    Returns
    -------
    numpy.ndarray of int64, shape (n_sources,)
        Sizes in ``[1, max_size]``.
    """
    caller = "reprint_cluster_sizes"
    n_sources = check_int(caller, "n_sources", n_sources, low=0)
    check_rng(caller, rng)
    max_size = check_int(caller, "max_size", max_size, low=1)
    mean = check_float(caller, "mean", mean, low=1.0, high=float(max_size))
    sigma = check_float(caller, "sigma", sigma, low=1e-3, high=10.0)
    mu = _solve_mu(mean, sigma, max_size)
    x = rng.lognormal(mu, sigma, size=n_sources)
    return np.clip(np.ceil(x), 1, max_size).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _solve_mu(mean: float, sigma: float, max_size: int) -> float:
    lo, hi = -30.0, math.log(max_size) + 30.0
    for _ in range(100):  # the expectation increases with mu
        mid = 0.5 * (lo + hi)
        if _clipped_ceil_mean(mid, sigma, max_size) < mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
