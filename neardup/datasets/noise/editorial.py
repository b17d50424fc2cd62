"""Layout and editorial changes a reprinting paper makes: cuts, dropped leads, local sentences,
updates that make a different story (hard negatives), and the quotes one story can lend another."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from neardup.datasets.noise.checks import check_rng, check_strings, check_text
from neardup.datasets.noise.sentences import join_segments, paragraph_spans, segments, sentence_spans, split_sentences
from neardup.errors import check_float, check_int


def abridge(
    text: str, rng: np.random.Generator, keep: float | tuple[float, float] = (0.4, 0.9)
) -> str:
    """Cut the story from the bottom at a sentence boundary, as a paper short of space does.

    A target fraction of characters is drawn uniformly from ``keep``; the text is cut at the
    sentence end nearest to it, keeping at least the first sentence. The result is always a
    prefix of ``text`` (trailing whitespace removed); text with one sentence or fewer is
    returned unchanged.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    keep : float or (float, float), default (0.4, 0.9)
        Fraction of characters to keep, or a range to draw it from; within [0, 1].
        Silcock et al. see abridgement from a few lines to most of the story.

    Returns
    -------
    str
    """
    caller = "abridge"
    check_text(caller, text)
    check_rng(caller, rng)
    if isinstance(keep, (int, float)):
        lo = hi = keep
    elif isinstance(keep, Sequence) and len(keep) == 2:
        lo, hi = keep
    else:
        raise ValueError(
            f"{caller}: parameter 'keep' must be a float or a (low, high) pair; got {keep!r}."
        )
    lo = check_float(caller, "keep", lo, low=0.0, high=1.0)
    hi = check_float(caller, "keep", hi, low=lo, high=1.0)
    fraction = rng.uniform(lo, hi)
    spans = sentence_spans(text)
    if len(spans) <= 1:
        return text
    ends = np.array([e for _, e in spans])
    cut = int(ends[int(np.argmin(np.abs(ends - fraction * len(text))))])
    return text[:cut]


def drop_middle_sentences(
    text: str, rng: np.random.Generator, rate: float = 0.2, contiguous: bool = False
) -> str:
    """Remove sentences from the middle of the story; the first and last always stay.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.2
        Probability that each middle sentence is removed, in [0, 1].
    contiguous : bool, default False
        False removes sentences independently (an editor trimming); True removes one run
        of the same expected length (a lost column or skipped paragraphs, as in
        Silcock et al. A.2.2).

    Returns
    -------
    str
        The kept sentences in order, with their original separators.
    """
    caller = "drop_middle_sentences"
    check_text(caller, text)
    check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    seps, sents, tail = segments(text)
    n_mid = len(sents) - 2
    if n_mid <= 0:
        return text
    keep = np.ones(len(sents), dtype=bool)
    if contiguous:
        k = int(rng.binomial(n_mid, rate))
        if k:
            start = 1 + int(rng.integers(0, n_mid - k + 1))
            keep[start : start + k] = False
    else:
        keep[1:-1] = rng.random(n_mid) >= rate
    if keep.all():
        return text
    return join_segments(seps, sents, tail, keep.tolist(), seps[0])


def drop_lead(
    text: str, rng: np.random.Generator, max_sentences: int = 3, paragraph_prob: float = 0.5
) -> str:
    """Remove the opening, as when a story is continued from another page.

    Either the first paragraph (with probability ``paragraph_prob``, if there are at
    least two) or the first 1 to ``max_sentences`` sentences are removed; at least one
    sentence always remains. The result is a suffix of ``text`` starting at a sentence;
    text with one sentence or fewer is returned unchanged. The dateline goes with the lead.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    max_sentences : int, default 3
        Most sentences removed when cutting by sentence; >= 1.
    paragraph_prob : float, default 0.5
        Probability of cutting the whole first paragraph instead, in [0, 1].

    Returns
    -------
    str
    """
    caller = "drop_lead"
    check_text(caller, text)
    check_rng(caller, rng)
    max_sentences = check_int(caller, "max_sentences", max_sentences, low=1)
    paragraph_prob = check_float(caller, "paragraph_prob", paragraph_prob, low=0.0, high=1.0)
    use_paragraph = rng.random() < paragraph_prob
    paragraphs = paragraph_spans(text)
    if use_paragraph and len(paragraphs) >= 2:
        return text[paragraphs[1][0] :]
    spans = sentence_spans(text)
    if len(spans) <= 1:
        return text
    k = int(rng.integers(1, min(max_sentences, len(spans) - 1) + 1))
    return text[spans[k][0] :]

def insert_local_sentences(
    text: str, rng: np.random.Generator, donor_sentences: Sequence[str], n: int = 1
) -> str:
    """Insert ``n`` sentences taken from ``donor_sentences`` after random sentences.

    Models a local paper adding its own angle to a wire story, and the hard case where two
    different stories share a quote. Insertions go after the first sentence or later;
    donors are drawn without replacement while possible. Blank text or an empty donor
    list returns ``text`` unchanged.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    donor_sentences : sequence of str
        Sentences to insert, e.g. ``split_sentences`` of other stories.
    n : int, default 1
        Number of sentences to insert; >= 0.

    Returns
    -------
    str
    """
    caller = "insert_local_sentences"
    check_text(caller, text)
    check_rng(caller, rng)
    donors = check_strings(caller, "donor_sentences", donor_sentences)
    n = check_int(caller, "n", n, low=0)
    seps, sents, tail = segments(text)
    if not sents or not donors or n == 0:
        return text
    picks = rng.choice(len(donors), size=n, replace=n > len(donors))
    slots = np.sort(rng.integers(1, len(sents) + 1, size=n))
    for offset, (slot, pick) in enumerate(zip(slots.tolist(), picks.tolist())):
        seps.insert(slot + offset, " ")
        sents.insert(slot + offset, donors[pick].strip())
    return join_segments(seps, sents, tail, [True] * len(sents), seps[0])


def replace_sentences(
    text: str,
    rng: np.random.Generator,
    donor_sentences: Sequence[str],
    fraction: float = 0.5,
) -> str:
    """Replace a fixed share of the sentences by donor sentences, as an updated story does.

    Models a wire story rewritten for breaking news (Silcock et al. 2022, sec. 3.3: such
    updates are *different* articles): ``round(fraction * n)`` of the ``n`` sentences, at
    positions drawn without replacement, are replaced by consecutive donor sentences
    (starting at a random donor), so new material arrives in runs as rewritten paragraphs
    do. At least one sentence is replaced and, when there are two or more, at least one
    is kept. The other sentences and all separators stay as they are. Blank text or an
    empty donor list returns ``text`` unchanged.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    donor_sentences : sequence of str
        Replacement sentences, in reading order, e.g. ``split_sentences`` of another story
        on the same topic.
    fraction : float, default 0.5
        Share of sentences replaced, in [0, 1].

    Returns
    -------
    str
    """
    caller = "replace_sentences"
    check_text(caller, text)
    check_rng(caller, rng)
    donors = check_strings(caller, "donor_sentences", donor_sentences)
    fraction = check_float(caller, "fraction", fraction, low=0.0, high=1.0)
    seps, sents, tail = segments(text)
    n = len(sents)
    if n == 0 or not donors:
        return text
    k = min(max(1, round(fraction * n)), max(n - 1, 1))
    positions = np.sort(rng.choice(n, size=k, replace=False)).tolist()
    start = int(rng.integers(len(donors)))
    for t, p in enumerate(positions):
        sents[p] = donors[(start + t) % len(donors)].strip()
    return join_segments(seps, sents, tail, [True] * n, seps[0])


# A double-quoted passage of three words or more: "..." or “...”.
_QUOTE = re.compile(r"\"[^\"\n]*?\S+\s+\S+\s+\S+[^\"\n]*?\"|“[^”\n]*?\S+\s+\S+\s+\S+[^”\n]*?”")


def quoted_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that contain a double-quoted passage of 3+ words.

    Two different stories carrying the same quote are a classic false positive of
    near-duplicate detection (Silcock et al. 2022, sec. 3.3 label them as different); these
    are the sentences to share. Straight (``"``) and curly (``“ ”``) quotes count; a quote
    must open and close within one line of the sentence.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
        In reading order, as :func:`split_sentences` gives them.
    """
    check_text("quoted_sentences", text)
    return [s for s in split_sentences(text) if _QUOTE.search(s)]
