"""A cheap sign that a corpus is noisy text (OCR errors, typos, look-alike letters).

Word 3-grams at Jaccard 0.5 (the lexical methods' defaults) stop finding copies once a
few words in each sentence are damaged. The sign here is the share of *broken tokens*
in a sample: runs of letters and digits in which a digit sits between letters
(``mem6ek8``, ``Miya2awa``: OCR and keyboard noise) or letters of two of the Latin,
Cyrillic and Greek scripts meet (``Рrеsidеnt``: look-alike substitutions). Clean text in
any language tried has almost none; chosen on validation splits only
(experiments/noisy_profile/signal.py, results/signal.json): at most 0.09% on clean
Reuters-21578, Debian man pages in nine languages and Faker's Greek (0.14% on package
copyright files, added later with the second sign's samples), 0.47% or more on
seven of the ten labelled sets' validation splits. It stays silent on light OCR
(reuters-news, indep-noisocr: under 0.06%, where word shingles still work best or
nearly) and on multi-greek (none).

Real OCR (Tesseract) rarely makes broken tokens: it reads wrong letters and glues
punctuation between two words or inside one (``kdy.je``, ``de:la``, ``übergibt.den``).
The second sign is the share of such *stuck punctuation*, defined so clean text does not
count: one of ``. , : ; ! ?`` between two letters of an alphabetic script (Latin,
Cyrillic, Greek; scripts written without spaces are not measured), with at least two
letters on each side (``e.g.``, ``U.S.``, ``z.B.`` do not count; apostrophes and hyphens
are not in the set: ``don't``, ``well-known``), in a whitespace-separated word without
digits or the signs of addresses, paths and code (``3.5``, ``a@b.org``, ``/etc/x.conf``,
``f(x)``, ``a=b``), and not the German gender colon (``Lehrer:innen``); a word with the
same mark twice between letters is a name or a list (``che.utexas.edu``,
``euser,ruser``) and does not count. Chosen on validation splits only
(experiments/noisy_profile/signal.py, results/signal.json): at most 0.07% on every clean
sample (Reuters-21578, man pages in nine languages, multi-ocr's sources, licence texts,
Faker's prose in eight languages), 0.70% or more on every language of multi-ocr.
With both signs the hint fires on reuters-news, multi-greek and multi-ocr too (decision
0030), and stays silent on indep-noisocr, where word shingles work best.

Each sign is one regular-expression pass over the joined sample (no loop per token).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["BROKEN_TOKEN_SHARE", "SAMPLE_DOCS", "STUCK_PUNCTUATION_SHARE", "NoiseShares",
           "broken_token_share", "looks_noisy", "noise_shares", "stuck_punctuation_share"]

#: Share of broken tokens above which text looks noisy: between clean text's highest
#: share (0.0009) and the lowest of the noisy validation splits it flags (0.0047).
BROKEN_TOKEN_SHARE = 0.002
#: Share of words with stuck punctuation above which text looks noisy: between clean
#: text's highest share (0.0007) and the lowest language of multi-ocr (0.0070).
STUCK_PUNCTUATION_SHARE = 0.002
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

_ALPHABETIC = _LATIN + _CYRILLIC + _GREEK
# Signs of addresses, paths, numbers and code: a word holding one is not prose.
_NOT_PROSE = r"\d@/\\=<>()\[\]{}|_~#%&+*$©"
_MARK_BETWEEN_WORDS = rf"[{_ALPHABETIC}]{{2}}[.,:;!?](?!innen\b|in\b)[{_ALPHABETIC}]{{2}}"
# Found first (one cheap scan: few texts hold any), then the word around each is judged.
_JOINT = re.compile(_MARK_BETWEEN_WORDS)
_STUCK_WORD = re.compile(
    rf"(?![^\s]*[{_NOT_PROSE}])"
    rf"(?![^\s]*[{_ALPHABETIC}]([.,:;!?])[{_ALPHABETIC}][^\s]*[{_ALPHABETIC}]\1[{_ALPHABETIC}])"
    rf"[^\s]*?{_MARK_BETWEEN_WORDS}"
)
_WORD_TAIL = re.compile(r"\S*\Z")  # the part of a word before a position
_WORD_HEAD = re.compile(r"\S*")  # the part of a word from a position
#: Longest word looked back over: longer runs without spaces are not prose.
_LONGEST_WORD = 200


class NoiseShares(NamedTuple):
    """Both signs over one sample: broken tokens and words with stuck punctuation,
    each per token."""

    broken_tokens: float
    stuck_punctuation: float

    def noisy(self) -> bool:
        """Whether either sign is above its cut-off."""
        return (self.broken_tokens > BROKEN_TOKEN_SHARE
                or self.stuck_punctuation > STUCK_PUNCTUATION_SHARE)


def _token_count(joined: str) -> int:
    return len(_TOKEN.findall(joined))


def broken_token_share(texts: Iterable[str]) -> float:
    """Broken tokens (see the module) per token over ``texts``; 0.0 without tokens.
    A token broken in several places counts once per place (rare, and noisier)."""
    joined = "\n".join(texts)
    return _per_token(_count(_BROKEN, joined), joined)


def stuck_punctuation_share(texts: Iterable[str]) -> float:
    """Words with stuck punctuation (see the module) per token over ``texts``; 0.0
    without tokens. A word counts once however many marks it holds."""
    joined = "\n".join(texts)
    return _per_token(_stuck_words(joined), joined)


def noise_shares(texts: Iterable[str]) -> NoiseShares:
    """Both signs over ``texts`` (joined and tokenised once)."""
    joined = "\n".join(texts)
    tokens = _token_count(joined)
    if tokens == 0:
        return NoiseShares(0.0, 0.0)
    return NoiseShares(_count(_BROKEN, joined) / tokens, _stuck_words(joined) / tokens)


def _stuck_words(joined: str) -> int:
    counted_from = -1
    stuck = 0
    for joint in _JOINT.finditer(joined):
        tail = _WORD_TAIL.search(joined, max(0, joint.start() - _LONGEST_WORD), joint.start())
        start = tail.start() if tail else joint.start()
        if start <= counted_from:
            continue  # a word counts once
        end = _WORD_HEAD.match(joined, joint.end()).end()
        if _STUCK_WORD.match(joined[start:end]):
            stuck += 1
            counted_from = start
    return stuck


def _count(pattern: re.Pattern[str], joined: str) -> int:
    return sum(1 for _ in pattern.finditer(joined))


def _per_token(count: int, joined: str) -> float:
    tokens = _token_count(joined)
    return count / tokens if tokens else 0.0


def looks_noisy(texts: Iterable[str]) -> bool:
    """Whether ``texts`` (a sample of a corpus) look like noisy text: either sign above
    its cut-off."""
    return noise_shares(texts).noisy()
