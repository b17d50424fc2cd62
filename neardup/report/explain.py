"""Why two documents are, or are not, near-duplicates: every method's verdict on one pair.

:func:`find_documents` streams a corpus and stops once the wanted ids are read.
:func:`explain_pair` normalizes both texts as the methods do, aligns them word by word,
lists their shared word shingles, scores the pair by each lexical method against its
default threshold (the same kernels the methods run at scale: exact digests, exact shingle
Jaccard and containment, the MinHash estimate and LSH band collisions, SimHash Hamming
distance, SpotSigs signature Jaccard), gives the pair its duplicate type
(:mod:`neardup.methods.pair_types`), and checks the time window. Methods whose score depends
on the whole corpus (``sanderson``: BM25 mutual retrieval; ``wminhash``: IDF weights) are
listed as such. rerank, which the default method runs on small inputs
(:mod:`neardup.method_choice`), is always scored with its shipped verifier; an embedding
method only when named, since it loads a model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup.errors import InputError

__all__ = ["LEXICAL_SCORES", "explain_pair", "find_documents"]

#: Lexical methods :func:`explain_pair` scores, with their default thresholds.
LEXICAL_SCORES = {"exact": None, "ngram": 0.5, "minhash": 0.5, "simhash": 3, "spotsigs": 0.4}
_CORPUS_METHODS = {
    "sanderson": "mutual BM25 retrieval ranks each document against the whole corpus",
    "wminhash": "its shingle weights are IDF over the whole corpus",
}
_EXAMPLES = 5


def find_documents(
    inputs: Sequence[str | os.PathLike], reader: Any, ids: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Read only the documents with the given ids, stopping once all are found.

    Returns
    -------
    dict of id -> {"text": str, "date": numpy.datetime64 or None, "source": str, "row": int}

    Raises
    ------
    InputError
        Naming every id the input does not hold.
    """
    from neardup.io import ReaderConfig, read_corpus

    reader = reader or ReaderConfig()
    wanted = set(map(str, ids))
    found: dict[str, dict[str, Any]] = {}
    read = 0
    batches = read_corpus(list(inputs), reader)
    for batch in batches:
        read += len(batch)
        if wanted.isdisjoint(batch.ids):
            continue
        for i, doc_id in enumerate(batch.ids):
            if doc_id in wanted and doc_id not in found:
                date = None
                if batch.dates is not None and not np.isnat(batch.dates[i]):
                    date = batch.dates[i]
                found[doc_id] = {"text": batch.texts[i], "date": date, "source": batch.source,
                                 "row": int(batch.rows[i])}  # fmt: skip
        if len(found) == len(wanted):
            break
    if (reader.date_field is not None and found
            and all(doc["date"] is None for doc in found.values())):
        # Neither document has a date: read on, so that the reader can tell a
        # --date-field no record has (an error) from documents without dates.
        for batch in batches:
            read += len(batch)
    missing = [i for i in map(str, ids) if i not in found]
    if missing:
        hint = ("" if reader.id_field else " Documents are numbered from 0 by position; "
                "pass --id-field to use an id field.")  # fmt: skip
        raise InputError(
            f"explain: no document with id {missing[0]!r} in {[str(p) for p in inputs]} "
            f"({read} documents read).{hint}"
        )
    return found


def _word_ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    words = text.split()
    if len(words) < n:
        return [tuple(words)] if words else []
    return [tuple(words[k : k + n]) for k in range(len(words) - n + 1)]


def _shingles(a: str, b: str, n: int) -> dict[str, Any]:
    grams_a, grams_b = _word_ngrams(a, n), _word_ngrams(b, n)
    set_b = set(grams_b)
    shared = list(dict.fromkeys(g for g in grams_a if g in set_b))
    union = len(set(grams_a) | set_b)
    return {
        "n": n,
        "a": len(set(grams_a)),
        "b": len(set_b),
        "shared": len(shared),
        "union": union,
        "examples": [" ".join(g) for g in shared[:_EXAMPLES]],
        "only_a": [" ".join(g) for g in dict.fromkeys(g for g in grams_a if g not in set_b)][:3],
        "only_b": [" ".join(g) for g in dict.fromkeys(g for g in grams_b if g not in set(grams_a))][:3],
    }


def _row(method: str, measure: str, score: float | None, threshold: Any, rule: str,
         duplicate: bool | None, note: str = "") -> dict[str, Any]:
    return {"method": method, "measure": measure, "score": score, "threshold": threshold,
            "rule": rule, "duplicate": duplicate, "note": note}  # fmt: skip


def _lexical_rows(texts: list[str], params: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    from neardup.methods import make_method
    from neardup.methods.lsh import band_keys
    from neardup.methods.minhash import jaccard_from_signatures
    from neardup.methods.ngram import exact_similarity

    zero, one = np.array([0]), np.array([1])
    rows = []

    def empty_row(method: str, measure: str, threshold: Any, rule: str, n_features) -> dict:
        """A method that finds nothing to compare in a text: no score, and why."""
        empty = [k for k, n in zip("AB", np.asarray(n_features).tolist()) if n == 0]
        which = "both texts are" if len(empty) == 2 else f"text {empty[0]} is"
        return _row(method, measure, None, threshold, rule, False,
                    f"nothing to compare: {which} empty after normalization")

    exact = make_method("exact", **params.get("exact", {}))
    sketch = exact.sketch(texts)
    comparable = bool((sketch.n_features > 0).all())
    if comparable:
        same = bool((sketch.arrays["digest"][0] == sketch.arrays["digest"][1]).all())
        rows.append(_row("exact", "normalized texts identical", 1.0 if same else 0.0, 1.0, ">=",
                         same))
    else:
        rows.append(empty_row("exact", "normalized texts identical", 1.0, ">=",
                              sketch.n_features))

    ngram = make_method("ngram", **params.get("ngram", {}))
    ngram_sketch = ngram.sketch(texts)
    sets = ngram_sketch.sets
    kind = ngram.similarity
    if bool((ngram_sketch.n_features > 0).all()):
        jaccard = float(exact_similarity(sets, zero, one, "jaccard")[0])
        containment = float(exact_similarity(sets, zero, one, "containment")[0])
        rows.append(_row("ngram", "shingle Jaccard", jaccard, ngram.threshold, ">=",
                         kind == "jaccard" and jaccard >= ngram.threshold,
                         "" if kind == "jaccard" else "not the measure in use"))  # fmt: skip
        rows.append(_row("ngram", "shingle containment", containment, ngram.threshold, ">=",
                         kind == "containment" and containment >= ngram.threshold,
                         "" if kind == "containment" else "with --similarity containment"))  # fmt: skip
    else:
        for measure in ("shingle Jaccard", "shingle containment"):
            rows.append(empty_row("ngram", measure, ngram.threshold, ">=",
                                  ngram_sketch.n_features))

    minhash = make_method("minhash", **params.get("minhash", {}))
    minhash_sketch = minhash.sketch(texts)
    if not bool((minhash_sketch.n_features > 0).all()):
        rows.append(empty_row("minhash", f"estimated Jaccard ({minhash.num_perm} permutations)",
                              minhash.threshold, ">=", minhash_sketch.n_features))
        return _simhash_and_after(rows, texts, params, empty_row)
    signature = minhash_sketch.arrays["signature"]
    estimate = float(jaccard_from_signatures(signature, zero, one)[0])
    bands, rows_per_band = minhash.banding
    keys = band_keys(signature, bands, rows_per_band)
    collide = int((keys[:, 0] == keys[:, 1]).sum())
    found = comparable and collide > 0 and (minhash.verify == "none" or estimate >= minhash.threshold)
    rows.append(_row("minhash", f"estimated Jaccard ({minhash.num_perm} permutations)", estimate,
                     minhash.threshold, ">=", found,
                     f"{collide} of {bands} LSH bands ({rows_per_band} rows) collide"
                     + ("" if collide else ": never a candidate")))  # fmt: skip
    return _simhash_and_after(rows, texts, params, empty_row)


def _simhash_and_after(rows: list[dict[str, Any]], texts: list[str],
                       params: dict[str, dict[str, Any]], empty_row) -> list[dict[str, Any]]:
    from neardup.methods import make_method
    from neardup.methods.ngram import exact_similarity
    from neardup.methods.simhash import hamming_distance

    zero, one = np.array([0]), np.array([1])
    simhash = make_method("simhash", **params.get("simhash", {}))
    simhash_sketch = simhash.sketch(texts)
    if bool((simhash_sketch.n_features > 0).all()):
        fingerprint = simhash_sketch.arrays["fingerprint"]
        distance = int(hamming_distance(fingerprint[:1], fingerprint[1:])[0])
        rows.append(_row("simhash", "Hamming distance (bits of 64)", float(distance),
                         simhash.threshold, "<=", distance <= simhash.threshold))
    else:
        rows.append(empty_row("simhash", "Hamming distance (bits of 64)", simhash.threshold,
                              "<=", simhash_sketch.n_features))

    spotsigs = make_method("spotsigs", **params.get("spotsigs", {}))
    spot_sketch = spotsigs.sketch(texts)
    spot = float(exact_similarity(spot_sketch.sets, zero, one, "jaccard")[0])
    has_spots = bool((spot_sketch.n_features > 0).all())
    rows.append(_row("spotsigs", "spot-signature Jaccard", spot if has_spots else None,
                     spotsigs.threshold, ">=",
                     has_spots and spot >= spotsigs.threshold,
                     "" if has_spots else "a text has no spot signature (no stopword antecedent)"))
    for name, why in _CORPUS_METHODS.items():
        rows.append(_row(name, "not scored on two documents", None, None, "", None,
                         f"corpus-dependent: {why}; see the run's pairs"))  # fmt: skip
    return rows


def _rerank_row(texts: list[str], normalized: list[str], params: dict[str, Any],
                dates: np.ndarray) -> dict[str, Any]:
    """rerank's verdict with its steps: the scorer's probability even for a pair that is
    not a candidate (a run never scores it), and why a pair is not linked."""
    from neardup.methods import make_method

    model = make_method("rerank", **params)
    if not all(text.split() for text in normalized):
        return _row("rerank", "not scored", None, model.threshold, ">=", False,
                    "nothing to compare")
    verdict = model.pair_verdict(texts[0], texts[1], dates)
    candidate = model.candidate
    if verdict["candidate"] is None:
        note = (f"not a candidate ({candidate.name} estimate under "
                f"{candidate.threshold:g}): a run never scores this pair")
    elif verdict["template"]:
        note = "kept apart by the template guard (figures or names differ)"
    elif verdict["probability"] >= model.threshold and not verdict["linked"]:
        note = "a candidate, not linked"
    else:
        note = f"a candidate ({candidate.name} estimate {verdict['candidate']:.3f})"
    return _row("rerank", f"duplicate probability ({model.scorer})", verdict["probability"],
                model.threshold, ">=", verdict["linked"], note)


def _neural_row(method: str, texts: list[str], params: dict[str, Any]) -> dict[str, Any]:
    from neardup.methods import make_method

    try:
        model = make_method(method, **params)
        sketch = model.sketch(texts)
        if "embedding" in sketch.arrays:
            e = np.asarray(sketch.arrays["embedding"], dtype=np.float64)
            norms = np.linalg.norm(e, axis=1)
            cosine = float(e[0] @ e[1] / (norms[0] * norms[1])) if norms.all() else 0.0
            return _row(method, "cosine similarity", cosine, model.threshold, ">=",
                        cosine >= model.threshold)
        pairs = model.find_pairs(sketch)
        score = float(pairs.score[0]) if len(pairs) else None
        return _row(method, "linked on these two documents", score, model.threshold, ">=",
                    bool(len(pairs)), "" if len(pairs) else "not linked")
    except ImportError as exc:
        return _row(method, "not scored", None, None, "", None,
                    f"{exc} (pip install 'neardup[neural]')")


def explain_pair(
    text_a: str,
    text_b: str,
    *,
    date_a: np.datetime64 | None = None,
    date_b: np.datetime64 | None = None,
    method: str | None = None,
    method_params: dict[str, Any] | None = None,
    time_window_hours: float | None = None,
    ngram: int = 3,
) -> dict[str, Any]:
    """Every method's verdict on one pair of raw texts.

    Parameters
    ----------
    text_a, text_b : str
        Raw texts (normalized here, with the methods' default normalization).
    date_a, date_b : numpy.datetime64 or None
    method : str or None, default None
        A method in ``neardup.METHODS`` to single out; an embedding method is scored only
        when named here (it loads its model). rerank is always scored.
    method_params : dict or None
        Parameters for ``method`` (e.g. ``{"threshold": 0.6}``); the other methods keep
        their defaults.
    time_window_hours : float or None, default None
        The run's ``--time-window``: a pair dated further apart is not merged. None: no
        window (the pair type still uses Sanderson's 48 hours).
    ngram : int, default 3
        Words per shingle for the shared-shingle listing (the methods' default).

    Returns
    -------
    dict
        ``normalized`` (two str), ``alignment`` (:func:`~neardup.report.align_words`
        segments of b against a), ``shingles`` (counts and examples), ``scores`` (one
        dict per method and measure: ``method``, ``measure``, ``score``, ``threshold``,
        ``rule``, ``duplicate``, ``note``), ``pair_type`` and ``features`` (the type
        rules' inputs), ``dates`` and ``window``.
    """
    from neardup.graph.edges import Pairs, outside_time_window
    from neardup.methods.pair_types import classify_pairs, pair_features
    from neardup.method_choice import SMALL_INPUT_METHOD
    from neardup.methods import METHODS, NEURAL_METHODS
    from neardup.report.align import align_words
    from neardup.text import normalize_batch

    if method is not None and method not in METHODS:
        listed = ", ".join(repr(m) for m in METHODS)
        raise ValueError(f"explain_pair: parameter 'method' must be one of {listed}; got {method!r}.")
    texts = [text_a, text_b]
    normalized = normalize_batch(texts)
    params: dict[str, dict[str, Any]] = {}
    if method is not None and method_params:
        params[method] = dict(method_params)
    nat = np.datetime64("NaT")
    dates = np.array([nat if date_a is None else date_a, nat if date_b is None else date_b],
                     dtype="datetime64[s]")
    scores = _lexical_rows(texts, params)
    # rerank is what the default method runs on small inputs: its verdict is always shown.
    for scored in dict.fromkeys(m for m in (SMALL_INPUT_METHOD, method) if m in NEURAL_METHODS):
        scores.append(_rerank_row(texts, normalized, params.get(scored, {}), dates)
                      if scored == "rerank"
                      else _neural_row(scored, texts, params.get(scored, {})))
    for row in scores:
        row["selected"] = row["method"] == method

    pair = Pairs(np.array([0]), np.array([1]), np.ones(1, np.float32))
    window = {} if time_window_hours is None else {"time_window_hours": time_window_hours}
    # A text with nothing to compare (no word after normalization) is never paired: it has
    # no pair type, whatever the type rules would say of two empty strings.
    empty = [not text.split() for text in normalized]
    pair_type = ("none (nothing to compare)" if any(empty)
                 else str(classify_pairs(pair, normalized, dates=dates, **window)[0]))
    features = {k: (bool(v[0]) if v.dtype == bool else round(float(v[0]), 4))
                for k, v in pair_features(pair, normalized).items()}  # fmt: skip
    gap = None
    if not np.isnat(dates).any():
        gap = abs(int((dates[1] - dates[0]).astype(np.int64))) / 3600.0
    return {
        "normalized": normalized,
        "alignment": align_words(normalized[0], normalized[1]),
        "shingles": _shingles(normalized[0], normalized[1], ngram),
        "scores": scores,
        "pair_type": pair_type,
        "empty": empty,
        "features": features,
        "dates": [None if np.isnat(d) else str(d) for d in dates],
        "gap_hours": gap,
        "window": {
            "hours": time_window_hours,
            "outside": bool(outside_time_window(pair, dates, time_window_hours)[0]),
        },
    }
