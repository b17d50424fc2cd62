"""Word- and sentence-level adversarial edits (W4NT3D-like, Zhang et al. 2023): typos, word and
sentence insertions, deletions, substitutions and transpositions."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import numpy as np

from neardup.datasets.noise.checks import (
    EDIT_OPS,
    apply_edits,
    check_ops,
    check_rng,
    check_strings,
    check_text,
    selected_indices,
)
from neardup.datasets.noise.sentences import join_segments, segments
from neardup.errors import check_float


@functools.cache
def _qwerty_neighbours() -> dict[str, str]:
    """Keys physically adjacent on a US QWERTY keyboard (same row, or rows above/below)."""
    rows = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
    stagger = (0.0, 0.5, 0.75, 1.25)  # horizontal offset of each row, in key widths
    pos = {k: (r, c + stagger[r]) for r, row in enumerate(rows) for c, k in enumerate(row)}
    out = {}
    for k, (r, x) in pos.items():
        out[k] = "".join(
            o for o, (r2, x2) in pos.items()
            if o != k and ((r2 == r and abs(x2 - x) == 1) or (abs(r2 - r) == 1 and abs(x2 - x) < 1))
        )  # fmt: skip
    return out


def _typo_char(c: str, u: float, alphabet: str) -> str:
    """A keyboard neighbour of ``c`` keeping its case; for keys not on the QWERTY grid a
    different character of the text's own alphabet. Returns ``c`` if there is none."""
    near = _qwerty_neighbours().get(c.lower())
    if near:
        new = near[int(u * len(near))]
        return new.upper() if c.isupper() else new
    others = alphabet.replace(c, "")
    return others[int(u * len(others))] if others else c


def typos(
    text: str,
    rng: np.random.Generator,
    rate: float = 0.05,
    ops: Sequence[str] = EDIT_OPS,
) -> str:
    """Character-level typos: substitution, insertion, deletion and transposition.

    Each letter or digit is hit with probability ``rate`` and gets one operation drawn
    uniformly from ``ops``: ``"substitute"`` by a QWERTY neighbour (case kept; characters
    off the keyboard, e.g. Cyrillic, take another character of the same text),
    ``"insert"`` a neighbour or a repeat after it, ``"delete"`` it, or ``"transpose"`` it
    with the next character (nothing happens when that is not a different letter or digit,
    so each operation can be tested alone).

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.05
        Probability per letter/digit, in [0, 1]. W4NT3D uses up to 0.25 combined with
        word edits; MinHash collapses above about 0.05.
    ops : sequence of str, default all four
        Subset of ``("substitute", "insert", "delete", "transpose")``.

    Returns
    -------
    str
    """
    caller = "typos"
    check_text(caller, text)
    check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    ops = check_ops(caller, ops)
    hits = selected_indices(len(text), rate, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_arg, u_ins = rng.random(k), rng.random(k), rng.random(k)
    alphabet = "".join(sorted(ch for ch in set(text) if ch.isalnum()))
    edits: list[tuple[int, int, str]] = []
    last_end = 0
    for p, uo, ua, ui in zip(hits.tolist(), u_op, u_arg, u_ins):
        c = text[p]
        if p < last_end or not c.isalnum():
            continue
        op = ops[int(uo * len(ops))]
        if op == "transpose":
            nxt = text[p + 1] if p + 1 < len(text) else ""
            if not nxt.isalnum() or nxt == c:
                continue
            edits.append((p, p + 2, nxt + c))
        elif op == "delete":
            edits.append((p, p + 1, ""))
        elif op == "insert":
            extra = c if ui < 0.3 else _typo_char(c, ua, alphabet)  # repeat, or fat finger
            edits.append((p, p + 1, c + extra))
        else:
            edits.append((p, p + 1, _typo_char(c, ua, alphabet)))
        last_end = edits[-1][1]
    return apply_edits(text, edits)


# A word, keeping "U.S", "155,221", "Aug/Sept" and "farmer-owned" in one piece.
WORD_PATTERN = re.compile(r"[^\W_]+(?:['’.,/-][^\W_]+)*")


def _match_case(word: str, model: str) -> str:
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def word_edits(
    text: str,
    rng: np.random.Generator,
    rate: float = 0.1,
    vocabulary: Sequence[str] | None = None,
    ops: Sequence[str] = EDIT_OPS,
) -> str:
    """Word-level edits: insertion, deletion, substitution and neighbour transposition.

    Each word is hit with probability ``rate`` and gets one operation drawn uniformly from
    ``ops``: ``"substitute"`` by a vocabulary word (capitalisation kept), ``"insert"`` a
    vocabulary word after it, ``"delete"`` it with the space after it, or ``"transpose"``
    it with the next word (nothing for the last word). Punctuation and line breaks stay
    where they are.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.1
        Probability per word, in [0, 1].
    vocabulary : sequence of str, optional
        Words to insert or substitute; by default the words of ``text`` itself.
    ops : sequence of str, default all four
        Subset of ``("substitute", "insert", "delete", "transpose")``.

    Returns
    -------
    str
    """
    caller = "word_edits"
    check_text(caller, text)
    check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    ops = check_ops(caller, ops)
    vocab = check_strings(caller, "vocabulary", vocabulary)
    words = [(m.start(), m.end()) for m in WORD_PATTERN.finditer(text)]
    vocab = vocab or tuple(text[s:e] for s, e in words)
    hits = selected_indices(len(words), rate, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_word = rng.random(k), rng.integers(0, len(vocab), size=k)
    edits: list[tuple[int, int, str]] = []
    last_end = 0
    for i, uo, v in zip(hits.tolist(), u_op, u_word.tolist()):
        s, e = words[i]
        if s < last_end:
            continue
        op, w, new = ops[int(uo * len(ops))], text[s:e], vocab[v].strip()
        if op == "transpose":
            if i + 1 == len(words):
                continue
            s2, e2 = words[i + 1]
            edits.append((s, e2, text[s2:e2] + text[e:s2] + w))
        elif op == "delete":
            # Take the following space too, or the preceding one at the end of a line.
            if e < len(text) and text[e] == " ":
                edits.append((s, e + 1, ""))
            elif s > last_end and text[s - 1] == " ":
                edits.append((s - 1, e, ""))
            else:
                edits.append((s, e, ""))
        elif op == "insert":
            edits.append((s, e, f"{w} {new}"))
        else:
            edits.append((s, e, _match_case(new, w)))
        last_end = edits[-1][1]
    return apply_edits(text, edits)


def sentence_edits(
    text: str,
    rng: np.random.Generator,
    rate: float = 0.1,
    donor_sentences: Sequence[str] = (),
    ops: Sequence[str] = EDIT_OPS,
) -> str:
    """Sentence-level edits: insertion, deletion, substitution and neighbour swap.

    Each sentence is hit with probability ``rate`` and gets one operation drawn uniformly
    from ``ops``: ``"insert"`` a donor sentence after it (or repeat it if there are no
    donors), ``"delete"`` it (never the only sentence), ``"substitute"`` it by a donor
    sentence (or by its upper- or lower-cased self), or ``"transpose"`` it with the next
    (nothing for the last sentence).

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.1
        Probability per sentence, in [0, 1]. W4NT3D uses up to 0.25.
    donor_sentences : sequence of str, default ()
        Sentences from other documents.
    ops : sequence of str, default all four
        Subset of ``("substitute", "insert", "delete", "transpose")``.

    Returns
    -------
    str
    """
    caller = "sentence_edits"
    check_text(caller, text)
    check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    ops = check_ops(caller, ops)
    donors = check_strings(caller, "donor_sentences", donor_sentences)
    seps, sents, tail = segments(text)
    n = len(sents)
    hits = selected_indices(n, rate, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_arg = rng.random(k), rng.random(k)
    keep = [True] * n
    inserts: dict[int, str] = {}
    done = -1
    for i, uo, ua in zip(hits.tolist(), u_op, u_arg):
        if i <= done:
            continue
        op = ops[int(uo * len(ops))]
        donor = donors[int(ua * len(donors))].strip() if donors else None
        if op == "transpose":
            if i + 1 < n:
                sents[i], sents[i + 1] = sents[i + 1], sents[i]
                done = i + 1
        elif op == "delete":
            if sum(keep) > 1:
                keep[i] = False
        elif op == "insert":
            inserts[i] = donor if donor is not None else sents[i]
        elif donor is not None:
            sents[i] = donor
        else:
            sents[i] = sents[i].upper() if ua < 0.5 else sents[i].lower()
    out_seps, out_sents, out_keep = [], [], []
    for i in range(n):
        out_seps.append(seps[i])
        out_sents.append(sents[i])
        out_keep.append(keep[i])
        if i in inserts:
            out_seps.append(" ")
            out_sents.append(inserts[i])
            out_keep.append(True)
    return join_segments(out_seps, out_sents, tail, out_keep, seps[0])
