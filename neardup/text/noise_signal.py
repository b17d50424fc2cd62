"""A cheap sign that a corpus is noisy text (OCR errors, typos, look-alike letters).

Word 3-grams at Jaccard 0.5 (the lexical methods' defaults) stop finding copies once a
few words in each sentence are damaged. The sign here is the share of *broken tokens*
in a sample: runs of letters and digits in which a digit sits between letters
(``mem6ek8``, ``Miya2awa``: OCR and keyboard noise) or letters of two of the Latin,
Cyrillic and Greek scripts meet (``Рrеsidеnt``: look-alike substitutions). Clean text in
any language tried has almost none; chosen on validation splits only
(experiments/noisy_profile/signal.py, results/signal.json): at most 0.09% on clean
Reuters-21578, Debian man pages in nine languages and Faker's Greek, 0.47% or more on
seven of the ten labelled sets' validation splits. It stays silent on light OCR
(reuters-news, indep-noisocr: under 0.06%, where word shingles still work best or
nearly) and on multi-greek (none).

Everything is one regular-expression pass over the joined sample (no loop per token).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["BROKEN_TOKEN_SHARE", "SAMPLE_DOCS", "broken_token_share", "looks_noisy"]

#: Share of broken tokens above which text looks noisy: between clean text's highest
#: share (0.0009) and the lowest of the noisy validation splits it flags (0.0047).
BROKEN_TOKEN_SHARE = 0.002
#: Documents read for the signal (the first ones of the input).
SAMPLE_DOCS = 2000

_LATIN = "A-Za-z\u00c0-\u024f"
_CYRILLIC = "\u0400-\u04ff"
_GREEK = "\u0370-\u03ff"
_TOKEN = re.compile(r"[^\W_]+")
_BROKEN = re.compile(
    r"[^\W\d_]\d+(?=[^\W\d_])"  # a digit between letters
    rf"|[{_LATIN}](?=[{_CYRILLIC}{_GREEK}])|[{_CYRILLIC}{_GREEK}](?=[{_LATIN}])"
    rf"|[{_CYRILLIC}](?=[{_GREEK}])|[{_GREEK}](?=[{_CYRILLIC}])"  # two scripts meet
)


def broken_token_share(texts: Iterable[str]) -> float:
    """Broken tokens (see the module) per token over ``texts``; 0.0 without tokens.
    A token broken in several places counts once per place (rare, and noisier)."""
    joined = "\n".join(texts)
    tokens = sum(1 for _ in _TOKEN.finditer(joined))
    if tokens == 0:
        return 0.0
    return sum(1 for _ in _BROKEN.finditer(joined)) / tokens


def looks_noisy(texts: Iterable[str], threshold: float = BROKEN_TOKEN_SHARE) -> bool:
    """Whether ``texts`` (a sample of a corpus) look like noisy text."""
    return broken_token_share(texts) > threshold
