"""Pair features for the light verifier (``--method rerank --param scorer=verifier``).

A pair of documents becomes one row of numbers that a small scikit-learn classifier
(:mod:`neardup.train.verifier`) turns into a duplicate probability. Every feature is
computed for all pairs at once: texts are normalized, shingled and hashed once per
*document* (:func:`neardup.text.hash_shingles`), and each pair costs one merge of two
sorted hash arrays (:func:`neardup.methods.ngram.exact_similarity`, compiled) or one
C++ alignment (rapidfuzz ``process.cpdist``); there is no Python loop over pairs.

Features (names as in :data:`FEATURES`; a model records the names it was trained on):

* ``word{n}_jaccard`` / ``word{n}_containment`` (n = 1, 2, 3, 5) and ``char{n}_jaccard`` /
  ``char{n}_containment`` (n = 3, 4, 5, 8): ``|A ∩ B| / |A ∪ B|`` and ``|A ∩ B| / min(|A|, |B|)``
  of the two documents' n-gram sets. Containment stays high for abridged copies and
  excerpts; character n-grams survive OCR noise inside words and need no word
  boundaries (scripts written without spaces, such as Chinese and Japanese).
* ``nospace5_jaccard`` / ``nospace5_containment``: character 5-gram sets of the texts
  with all white space removed, so merged and split words and re-flowed lines (OCR,
  augmenters) do not change them.
* ``masked3_jaccard``: word 3-gram Jaccard with digits masked, and ``numbers_jaccard``:
  Jaccard of the sets of number tokens. Template stories (same wording, other figures)
  have a high masked but a low number Jaccard; reprints have both high.
  ``numerals_jaccard``: the same over tokens made of digits only, which character noise
  putting a digit inside a word ("0f", "8ec0nd") does not create.
* ``length_ratio`` (shorter / longer normalized text, in characters), ``log_length_min``,
  ``log_length_max``.
* ``align_ratio``: rapidfuzz ``fuzz.ratio`` (normalized Indel similarity, in [0, 1]) of
  the two normalized texts, each cut to ``align_chars`` characters, and ``align_partial``:
  ``fuzz.partial_ratio`` of the two heads (the shorter head aligned inside the longer),
  which tolerates a dropped headline or lead.
* ``date_days`` (absolute date difference in days, capped at 365) and ``date_missing``
  (1 when either date is unknown; ``date_days`` is then 0). Reprints appear within days.
* ``retsim_near`` / ``retsim_partial`` (optional, need onnxruntime and unisim): RETSim
  cosine of the mean chunk embeddings and best cosine over chunk pairs.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from neardup.errors import check_int
from neardup.methods.ngram import exact_similarities
from neardup.text import NormalizeConfig, ShingleConfig, normalize_batch
from neardup.text.char_classes import digit_tokens, drop_spaces, mask_digits
from neardup.text.hashing import encode_codepoints
from neardup.text.shingle import ShingleSets, shingle_codes, shingle_lengths

__all__ = [
    "DocumentProfiles",
    "FEATURES",
    "LEXICAL_FEATURES",
    "RETSIM_FEATURES",
    "default_features",
    "document_profiles",
    "fold_marks",
    "pair_features",
    "profile_pair_features",
    "retsim_available",
]

_WORD_N = (1, 2, 3, 5)
_CHAR_N = (3, 4, 5, 8)
LEXICAL_FEATURES: tuple[str, ...] = (
    *(f"word{n}_{k}" for n in _WORD_N for k in ("jaccard", "containment")),
    *(f"char{n}_{k}" for n in _CHAR_N for k in ("jaccard", "containment")),
    "nospace5_jaccard",
    "nospace5_containment",
    "masked3_jaccard",
    "numbers_jaccard",
    "numerals_jaccard",
    "length_ratio",
    "log_length_min",
    "log_length_max",
    "align_ratio",
    "align_partial",
    "date_days",
    "date_missing",
)
RETSIM_FEATURES: tuple[str, ...] = ("retsim_near", "retsim_partial")
#: Every feature :func:`pair_features` can compute, in column order.
FEATURES: tuple[str, ...] = LEXICAL_FEATURES + RETSIM_FEATURES

#: Characters of each normalized text aligned by ``align_ratio`` (Indel alignment costs
#: about len_a * len_b / 64 word operations, so the cap bounds the worst pair).
_ALIGN_CHARS = 4000
#: Head lengths for ``align_partial`` (the shorter head is slid along the longer one).
_PARTIAL_SHORT, _PARTIAL_LONG = 300, 1500
_DATE_CAP_DAYS = 365.0
#: Combining marks left by NFKD (diacritics, Greek tonos, ...), removed by ``fold_marks``.
_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def fold_marks(texts: Sequence[str]) -> list[str]:
    """Texts without diacritics: NFKD, combining marks (U+0300-036F and the other
    combining-diacritics blocks) removed, then NFC so that scripts whose letters NFKD
    takes apart for other reasons (Hangul syllables, kana with voicing marks) come back
    whole. ``é``/``è``/``e`` and ``ά``/``α`` become one letter."""
    return [unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFKD", t)))
            for t in texts]


def retsim_available() -> bool:
    """True when the RETSim features can be computed (onnxruntime and unisim installed)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "unisim"))


def default_features(*, retsim: bool | None = None) -> tuple[str, ...]:
    """The lexical features, plus the RETSim ones when ``retsim`` (None: when available)."""
    use = retsim_available() if retsim is None else bool(retsim)
    return FEATURES if use else LEXICAL_FEATURES


@njit(parallel=True, cache=True)
def _best_chunk_cosine(chunks, offsets, left, right):
    """Per pair, the largest dot product between a chunk of ``left`` and one of ``right``
    (NaN when either has no chunk)."""
    out = np.empty(left.shape[0], dtype=np.float32)
    dim = chunks.shape[1]
    for p in prange(left.shape[0]):
        a0, a1 = offsets[left[p]], offsets[left[p] + 1]
        b0, b1 = offsets[right[p]], offsets[right[p] + 1]
        best = -np.inf
        for a in range(a0, a1):
            for b in range(b0, b1):
                s = 0.0
                for d in range(dim):
                    s += chunks[a, d] * chunks[b, d]
                if s > best:
                    best = s
        out[p] = best if a1 > a0 and b1 > b0 else np.nan
    return out


def _retsim_features(texts: list[str], left, right, *,
                     threads: int | None) -> dict[str, np.ndarray]:
    from neardup.embed.retsim import RETSim

    chunks, offsets = RETSim(batch_size=32, threads=threads).encode_chunks(texts, progress=False)
    counts = np.diff(offsets)
    # The near-duplicate embedding from the same forward pass: mean of the chunks,
    # renormalized (RETSim.encode also averages a trailing padding chunk in rare cases).
    sums = np.zeros((len(texts), chunks.shape[1]), np.float64)
    has = counts > 0
    if chunks.shape[0]:
        np.add.at(sums, np.repeat(np.arange(len(texts)), counts), chunks)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    near = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
    cos = np.einsum("ij,ij->i", near[left], near[right]).astype(np.float32)
    ok = has[left] & has[right]
    partial = _best_chunk_cosine(np.ascontiguousarray(chunks, np.float32), offsets, left, right)
    return {
        "retsim_near": np.where(ok, cos, 0.0).astype(np.float32),
        "retsim_partial": np.where(ok, np.nan_to_num(partial, nan=0.0), 0.0).astype(np.float32),
    }


#: Each shingle set a profile may hold, and the features that read it.
_SET_FEATURES: dict[str, set[str]] = {
    **{f"word{n}": {f"word{n}_jaccard", f"word{n}_containment"} for n in _WORD_N},
    **{f"char{n}": {f"char{n}_jaccard", f"char{n}_containment"} for n in _CHAR_N},
    "nospace5": {"nospace5_jaccard", "nospace5_containment"},
    "masked3": {"masked3_jaccard"},
    "numbers": {"numbers_jaccard"},
    "numerals": {"numerals_jaccard"},
}


def _set_names(wanted: set[str]) -> list[str]:
    """The shingle sets the wanted features read (keys of :data:`_SET_FEATURES`)."""
    return [name for name, feats in _SET_FEATURES.items() if feats & wanted]


def _take_sets(sets: ShingleSets, positions: np.ndarray) -> ShingleSets:
    sizes = np.diff(sets.offsets)[positions]
    offsets = np.zeros(positions.size + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    # Each taken document's hashes: its start in ``sets`` plus 0..size-1.
    index = np.repeat(sets.offsets[positions] - offsets[:-1], sizes) + np.arange(offsets[-1])
    return ShingleSets(sets.hashes[index], offsets)


@dataclass(frozen=True)
class DocumentProfiles:
    """What the lexical pair features read of each document, computed once per document
    (normalization, shingling, sorting: the costly part) by :func:`document_profiles`;
    :func:`profile_pair_features` then costs one merge of sorted hashes per pair and set,
    and the alignments. A verifier that meets a document in many pairs and batches keeps
    its profile instead of recomputing it (:class:`~neardup.methods.profile_cache.ProfileCache`).

    Attributes
    ----------
    lengths : ndarray of float64, shape (n,)
        Normalized length in characters.
    sets : dict of str -> ShingleSets
        Sorted, duplicate-free shingle sets by kind (``"word3"``, ``"char4"``,
        ``"masked3"``, ``"numbers"``, ...), only those the features asked for read.
    aligned : list of str or None
        Each normalized text cut to ``align_chars`` characters (``align_ratio``).
    short_heads, long_heads : list of str or None
        The first 300 and 1,500 normalized characters (``align_partial``).
    """

    lengths: np.ndarray
    sets: dict[str, ShingleSets]
    aligned: list[str] | None = None
    short_heads: list[str] | None = None
    long_heads: list[str] | None = None

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def nbytes(self) -> int:
        """Memory held: the arrays, and each string's own size (``sys.getsizeof``: one,
        two or four bytes a character by its widest one, plus Python's header)."""
        strings = sum(sum(map(sys.getsizeof, part))
                      for part in (self.aligned, self.short_heads, self.long_heads) if part)
        return (self.lengths.nbytes + strings
                + sum(s.hashes.nbytes + s.offsets.nbytes for s in self.sets.values()))

    def take(self, positions: np.ndarray) -> DocumentProfiles:
        """The profiles of documents ``positions`` (int array), in that order."""
        positions = np.asarray(positions, np.int64)
        listed = positions.tolist()

        def pick(part: list[str] | None) -> list[str] | None:
            return None if part is None else [part[i] for i in listed]

        return DocumentProfiles(self.lengths[positions],
                                {k: _take_sets(v, positions) for k, v in self.sets.items()},
                                pick(self.aligned), pick(self.short_heads), pick(self.long_heads))


def document_profiles(texts: Sequence[str], *, features: Sequence[str] = LEXICAL_FEATURES,
                      align_chars: int = _ALIGN_CHARS,
                      fold_diacritics: bool = False) -> DocumentProfiles:
    """:class:`DocumentProfiles` of raw ``texts`` for the lexical ``features`` (normalized
    with neardup's defaults, then :func:`fold_marks` when ``fold_diacritics``)."""
    norm = normalize_batch(list(texts), NormalizeConfig())
    if fold_diacritics:
        norm = fold_marks(norm)
    wanted = set(features)
    names = _set_names(wanted)
    sets: dict[str, ShingleSets] = {}
    if names:
        # One encoding of the batch; each kind's text is derived from its code points
        # (char_classes applies re's \s and \d), and the word n-grams share one tokenization.
        cps, offsets = encode_codepoints(norm)
        for unit in ("word", "char"):
            ns = [int(name[4:]) for name in names if name.startswith(unit)]
            if not ns:
                continue
            for n, found in zip(ns, shingle_lengths(cps, offsets, unit, ns)):
                sets[f"{unit}{n}"] = found
        if "nospace5" in names:
            sets["nospace5"] = shingle_codes(*drop_spaces(cps, offsets), ShingleConfig("char", 5))
        if "masked3" in names:
            sets["masked3"] = shingle_codes(mask_digits(cps), offsets, ShingleConfig("word", 3))
        for name, whole in (("numbers", False), ("numerals", True)):
            if name in names:
                sets[name] = shingle_codes(*digit_tokens(cps, offsets, whole=whole), ShingleConfig("word", 1))
        # Not compacted: the profile cache copies the sets into its own arrays, and a
        # batch's profiles live only as long as the batch.
        sets = {name: sets[name].unique(compact=False) for name in names}
    lengths = np.fromiter(map(len, norm), np.float64, len(norm))
    return DocumentProfiles(
        lengths, sets,
        [t[:align_chars] for t in norm] if "align_ratio" in wanted else None,
        [t[:_PARTIAL_SHORT] for t in norm] if "align_partial" in wanted else None,
        [t[:_PARTIAL_LONG] for t in norm] if "align_partial" in wanted else None,
    )


def _partial_alignment(profiles: DocumentProfiles, a: np.ndarray, b: np.ndarray,
                       workers: int) -> np.ndarray:
    from rapidfuzz import fuzz, process

    # Shorter head first: partial_ratio aligns the shorter string inside the longer.
    first_short = profiles.lengths[a] <= profiles.lengths[b]
    q = np.where(first_short, a, b).tolist()
    c = np.where(first_short, b, a).tolist()
    short = [profiles.short_heads[i] for i in q]
    long = [profiles.long_heads[i] for i in c]
    out = np.ones(len(short), np.float32)
    # A head found whole inside the other's is a perfect alignment (100), whatever
    # rapidfuzz would spend sliding it (about 0.3 ms a pair): copies with intact leads.
    inside = np.fromiter((bool(s) and s in t for s, t in zip(short, long)), bool, len(short))
    rest = np.flatnonzero(~inside).tolist()
    if rest:
        out[rest] = process.cpdist([short[i] for i in rest], [long[i] for i in rest],
                                   scorer=fuzz.partial_ratio, workers=workers,
                                   dtype=np.float32) / 100.0
    return out


def profile_pair_features(profiles: DocumentProfiles, a: np.ndarray, b: np.ndarray, *,
                          dates: np.ndarray | None = None,
                          features: Sequence[str] = LEXICAL_FEATURES,
                          threads: int | None = None) -> dict[str, np.ndarray]:
    """The lexical features of the pairs (``a[i]``, ``b[i]``) of positions in
    ``profiles`` (built for at least these ``features``), by name; ``dates`` aligned with
    the profiles' documents. No validation: :func:`pair_features` is the checked entry."""
    wanted = set(features)
    cols: dict[str, np.ndarray] = {}
    for name, sets in profiles.sets.items():
        reads = _SET_FEATURES[name] & wanted
        if not reads:
            continue
        if name in ("numbers", "numerals"):
            has = np.diff(sets.offsets) > 0
            sim = exact_similarities(sets, a, b, ("jaccard",), check_sets=False)[0]
            # Two texts without numbers do not disagree on figures.
            cols[f"{name}_jaccard"] = np.where(~has[a] & ~has[b], 1.0, sim).astype(np.float32)
        elif name == "masked3":
            cols["masked3_jaccard"] = exact_similarities(sets, a, b, ("jaccard",),
                                                         check_sets=False)[0]
        else:
            cols[f"{name}_jaccard"], cols[f"{name}_containment"] = exact_similarities(
                sets, a, b, check_sets=False)

    lengths = profiles.lengths
    lo, hi = np.minimum(lengths[a], lengths[b]), np.maximum(lengths[a], lengths[b])
    cols["length_ratio"] = np.divide(lo, hi, out=np.zeros_like(lo), where=hi > 0)
    cols["log_length_min"] = np.log1p(lo)
    cols["log_length_max"] = np.log1p(hi)

    if {"align_ratio", "align_partial"} & wanted:
        try:
            from rapidfuzz import fuzz, process
        except ImportError as err:
            raise ImportError(
                "pair_features: the alignment features need the 'rapidfuzz' package, part of "
                "neardup's optional 'neural' extra: pip install 'neardup[neural]'."
            ) from err
        workers = -1 if threads is None else threads
        if "align_ratio" in wanted:
            cut = profiles.aligned
            cols["align_ratio"] = process.cpdist(
                [cut[i] for i in a.tolist()], [cut[i] for i in b.tolist()],
                scorer=fuzz.ratio, workers=workers, dtype=np.float32,
            ) / 100.0
        if "align_partial" in wanted:
            cols["align_partial"] = _partial_alignment(profiles, a, b, workers)

    if {"date_days", "date_missing"} & wanted:
        n_pairs = a.shape[0]
        if dates is None:
            cols["date_days"] = np.zeros(n_pairs)
            cols["date_missing"] = np.ones(n_pairs)
        else:
            d = np.asarray(dates, dtype="datetime64[s]")
            da, db = d[a], d[b]
            missing = np.isnat(da) | np.isnat(db)
            seconds = np.abs((da - db).astype("timedelta64[s]").astype(np.float64))
            days = np.where(missing, 0.0, np.minimum(seconds / 86400.0, _DATE_CAP_DAYS))
            cols["date_days"] = days
            cols["date_missing"] = missing.astype(np.float64)
    return cols


def pair_features(
    texts: Sequence[str],
    left: np.ndarray,
    right: np.ndarray,
    *,
    dates: np.ndarray | None = None,
    features: Sequence[str] = LEXICAL_FEATURES,
    align_chars: int = _ALIGN_CHARS,
    fold_diacritics: bool = False,
    threads: int | None = None,
) -> np.ndarray:
    """Feature matrix of document pairs.

    Parameters
    ----------
    texts : sequence of str
        Raw texts by document position (normalized here with neardup's defaults).
    left, right : array-like of int, shape (n_pairs,)
        Positions in ``texts`` of the two documents of each pair.
    dates : ndarray of datetime64, shape (len(texts),), or None
        Document dates (NaT where unknown); None: every pair gets ``date_missing = 1``.
    features : sequence of str, default LEXICAL_FEATURES
        Names from :data:`FEATURES`, in the column order wanted (a trained model passes
        the names it was trained on).
    align_chars : int, default 4000
        Characters of each normalized text compared by ``align_ratio``.
    fold_diacritics : bool, default False
        Remove diacritics after normalization (:func:`fold_marks`) before computing the
        lexical features, so that copies whose accents were dropped or swapped for
        look-alikes still share their n-grams. A model records whether it was trained
        with it (``model.json`` key ``fold_diacritics``); pass the same value.
    threads : int or None, default None
        Threads for rapidfuzz and RETSim (None: all cores for rapidfuzz, ONNX Runtime's
        default for RETSim).

    Returns
    -------
    ndarray of float32, shape (n_pairs, len(features))

    Raises
    ------
    ValueError
        Unknown feature names, mismatched ``left``/``right``, positions out of range.
    ImportError
        RETSim features asked for without onnxruntime/unisim, or the alignment features
        without rapidfuzz (both in the ``neural`` extra).
    """
    caller = "pair_features"
    features = list(features)
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(
            f"{caller}: parameter 'features' must name features of {', '.join(FEATURES)}; "
            f"got unknown {unknown}."
        )
    check_int(caller, "align_chars", align_chars, low=1)
    left = np.asarray(left, dtype=np.int64).ravel()
    right = np.asarray(right, dtype=np.int64).ravel()
    if left.shape != right.shape:
        raise ValueError(
            f"{caller}: parameters 'left' and 'right' must have one length; got {left.size} "
            f"and {right.size}."
        )
    n_pairs = left.size
    out_matrix = np.zeros((n_pairs, len(features)), np.float32)
    if n_pairs == 0:
        return out_matrix
    if min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= len(texts):
        raise ValueError(f"{caller}: parameters 'left' and 'right' must be positions in 'texts'.")
    # Work on the documents the pairs touch only, renumbered 0..m-1.
    docs, local = np.unique(np.concatenate([left, right]), return_inverse=True)
    a, b = local[:n_pairs], local[n_pairs:]
    docs_texts = [texts[i] for i in docs.tolist()]
    profiles = document_profiles(docs_texts, features=features, align_chars=align_chars,
                                 fold_diacritics=fold_diacritics)
    cols = profile_pair_features(
        profiles, a, b, dates=None if dates is None else np.asarray(dates)[docs],
        features=features, threads=threads)

    if set(RETSIM_FEATURES) & set(features):
        if not retsim_available():
            raise ImportError(
                f"{caller}: the RETSim features need 'onnxruntime' and 'unisim', part of "
                "neardup's optional 'neural' extra: pip install 'neardup[neural]'."
            )
        cols.update(_retsim_features(docs_texts, a, b, threads=threads))

    for j, name in enumerate(features):
        out_matrix[:, j] = cols[name]
    return out_matrix
