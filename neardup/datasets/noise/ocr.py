"""OCR noise: the character confusions, stray marks and dropped spaces of scanned newsprint."""

from __future__ import annotations

import numpy as np

from neardup.datasets.noise.checks import apply_edits, check_rng, check_text, selected_indices
from neardup.errors import check_float

# Shapes Tesseract confuses on old newsprint; two-character keys are tried first.
_OCR_CONFUSIONS: dict[str, tuple[str, ...]] = {
    "rn": ("m",), "cl": ("d",), "ii": ("u",), "vv": ("w",), "li": ("h",),
    "m": ("rn", "nn"), "d": ("cl",), "u": ("ii", "n"), "n": ("u", "ri"), "w": ("vv",),
    "l": ("1", "I", "|"), "1": ("l", "I"), "I": ("l", "1"), "O": ("0",), "0": ("O", "o"),
    "e": ("c", "o"), "c": ("e",), "h": ("b", "li"), "b": ("h",), "S": ("5",), "5": ("S",),
    "B": ("8",), "8": ("B",), ",": (".",), ".": (",",), "t": ("f",), "f": ("t",),
}  # fmt: skip
_OCR_STRAY = (".", ",", "'", "`", ":", "‘", ";")
# Relative weights of OCR operations; the ones that do not fit the character are dropped.
_OCR_WEIGHTS = {
    "confuse": 0.45, "drop": 0.18, "double": 0.08, "split": 0.1, "hyphen": 0.07, "stray": 0.07,
    "merge": 0.75,
}  # fmt: skip


def ocr_noise(text: str, rng: np.random.Generator, severity: float = 0.05) -> str:
    """Simulate OCR of a scanned newspaper column.

    Each character is hit independently with probability ``severity``. A hit letter, digit
    or punctuation mark gets one of: a shape confusion (``rn``/``m``, ``l``/``1``/``I``,
    ``O``/``0``, ``e``/``c``, ``cl``/``d``, ``h``/``b``, ``u``/``n``, ``ii``/``u``,
    ``vv``/``w``, ``S``/``5``, ``B``/``8``, comma/period, ...), deletion, doubling, a word
    split by a space (``"ne ws"``), an end-of-line hyphenation artefact (``"elec- tric"``
    or ``"elec-\\ntric"``), or a stray mark (``. , ' ` :``) before it. A hit space or
    newline is usually deleted, merging two words.

    Parameters
    ----------
    text : str
        Clean text.
    rng : numpy.random.Generator
        Source of all randomness.
    severity : float, default 0.05
        Expected fraction of characters affected, in [0, 1]. 0 returns ``text`` unchanged;
        0.005 is a good scan, 0.02-0.05 typical 1930s newsprint, 0.1+ barely readable.
        The edit distance comes out near 1.1 x ``severity`` x ``len(text)``.

    Returns
    -------
    str
    """
    caller = "ocr_noise"
    check_text(caller, text)
    check_rng(caller, rng)
    severity = check_float(caller, "severity", severity, low=0.0, high=1.0)
    hits = selected_indices(len(text), severity, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_arg = rng.random(k), rng.random(k)
    edits: list[tuple[int, int, str]] = []
    last_end = 0
    for p, uo, ua in zip(hits.tolist(), u_op, u_arg):
        if p < last_end:
            continue
        c = text[p]
        options: dict[str, float] = {}
        if c.isspace():
            options = {"merge": _OCR_WEIGHTS["merge"], "stray": _OCR_WEIGHTS["stray"]}
        else:
            key = text[p : p + 2] if text[p : p + 2] in _OCR_CONFUSIONS else c
            if key in _OCR_CONFUSIONS:
                options["confuse"] = _OCR_WEIGHTS["confuse"]
            options.update(drop=_OCR_WEIGHTS["drop"], double=_OCR_WEIGHTS["double"])
            if c.isalpha() and p > 0 and text[p - 1].isalpha():
                options.update(split=_OCR_WEIGHTS["split"], hyphen=_OCR_WEIGHTS["hyphen"])
            options["stray"] = _OCR_WEIGHTS["stray"]
        names = list(options)
        cum = np.cumsum(list(options.values()))
        op = names[int(np.searchsorted(cum, uo * cum[-1], side="right"))]
        if op == "confuse":
            targets = _OCR_CONFUSIONS[key]
            edits.append((p, p + len(key), targets[int(ua * len(targets))]))
        elif op in ("drop", "merge"):
            edits.append((p, p + 1, ""))
        elif op == "double":
            edits.append((p, p + 1, c + c))
        elif op == "split":
            edits.append((p, p + 1, " " + c))
        elif op == "hyphen":
            edits.append((p, p + 1, ("-\n" if ua < 0.5 else "- ") + c))
        else:  # stray
            edits.append((p, p + 1, _OCR_STRAY[int(ua * len(_OCR_STRAY))] + c))
        last_end = edits[-1][1]
    return apply_edits(text, edits)
