"""Evaluation sets whose noise does not come from neardup's own generator.

:func:`neardup.eval.make_benchmark` makes copies with :mod:`neardup.datasets.noise`, the
same model the methods were tuned and trained on, so its scores say little about data
the project has never seen. The sets built here keep the benchmark's structure (stories,
full-day splits, duplicate groups, templates and hard negatives from
:mod:`neardup.datasets.benchmark`) but make every copy with a third-party augmenter:

``nlpaug``
    nlpaug's character models: OCR confusions, QWERTY keyboard slips, random character
    substitutions/swaps/deletions/insertions, its English misspelling dictionary, word
    splits and a cropped span of words (a cut copy).
``augly``
    AugLy text: leetspeak and look-alike Unicode letters, zero-width characters, merged
    and split words, case changes, punctuation inside words, misspellings.
``noisocr``
    noisocr: the text re-flowed into fixed-width OCR lines, then the ``typo`` errors
    noisocr draws (swapped, missing, extra, keyboard-neighbour and look-alike characters,
    skipped and random spaces, repeated characters, Unicode stand-ins) and its transcriber
    annotations.
``confusables``
    An adversarial set whose homoglyphs come from Unicode's confusables data (UTS #39, via
    the ``confusable-homoglyphs`` package), not from neardup's normalizer table:
    :func:`confusable_fold_rate` measures how many of them the normalizer folds.

:func:`make_multilingual_set` makes small sets in other scripts (Latin with diacritics,
Cyrillic, Greek, CJK) from text shipped in Debian's translated manual pages and Faker's
Greek word list (see :data:`MULTILINGUAL_SOURCES`), copied by the same augmenters.

Every random choice comes from ``seed``: each copy seeds Python's and NumPy's global
generators (which the augmenters use) from its own stream, so a set is byte-identical
when rebuilt with the same package versions (pinned in constraints.txt).
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_int
from neardup.datasets.benchmark import (
    SPLIT_CODE,
    StoryCluster,
    add_hard_negatives,
    make_clusters,
)
from neardup.datasets.noise import reprint_cluster_sizes, split_sentences
from neardup.datasets.stories import (
    Story,
    assign_splits,
    find_story_groups,
    parse_splits,
    prepare_stories,
)

__all__ = [
    "GENERATORS",
    "LANGUAGE_SETS",
    "LANGUAGE_SPLIT",
    "MULTILINGUAL_SOURCES",
    "make_independent_set",
    "make_multilingual_set",
    "confusable_fold_rate",
    "independent_copy",
    "write_set",
]

GENERATORS = ("nlpaug", "augly", "noisocr", "confusables")
#: Multilingual sets: name -> languages (Debian man page directories, or "el" for Faker).
LANGUAGE_SETS = {
    "latin": ("de", "fr", "pl", "cs"),
    "cyrillic": ("ru",),
    "greek": ("el",),
    "cjk": ("zh_CN", "ja"),
}
MULTILINGUAL_SOURCES = {
    "de": "Debian manpages-de 4.18.1 (manpages-l10n; translations GPL-3+)",
    "fr": "Debian manpages-fr 4.18.1 (manpages-l10n; translations GPL-3+)",
    "pl": "Debian manpages-pl 4.18.1 (manpages-l10n; translations GPL-3+)",
    "cs": "Debian manpages-cs 4.18.1 (manpages-l10n; translations GPL-3+)",
    "ru": "Debian manpages-ru 4.18.1 (manpages-l10n; translations GPL-3+)",
    "zh_CN": "Debian manpages-zh 1.6.4.0 (CMPP; GFDL-1.2+)",
    "ja": "Debian manpages-ja 0.5.0.0.20221215 (JM project; GPL-2+/various)",
    "el": "Faker 40.63 el_GR lorem word list (MIT): word sequences, not running text",
}
#: The multilingual sets' split balanced by language (see :func:`make_multilingual_set`).
LANGUAGE_SPLIT = "language_validation"
_MULTI_SPLIT_CODE = {**SPLIT_CODE, LANGUAGE_SPLIT: len(SPLIT_CODE)}
# Per-copy severity: log-uniform share of words touched.
_SEVERITY = {"nlpaug": (0.03, 0.25), "augly": (0.03, 0.25), "noisocr": (0.02, 0.15),
             "confusables": (0.05, 0.30)}
_MANY = 10**6  # nlpaug/AugLy cap edits at 10 words per text by default


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _seed_globals(rng: np.random.Generator) -> int:
    """Seed the global generators the third-party augmenters draw from."""
    seed = int(rng.integers(0, 2**31 - 1))
    random.seed(seed)
    np.random.seed(seed)
    return seed


def _first(value: Any) -> str:
    return value[0] if isinstance(value, list) else value


def _cjk_tokens(text: str) -> list[str]:
    """Four-character pieces: the augmenters edit characters within "words", and CJK text
    has no spaces."""
    return re.findall(r"\S{1,4}|\s+", text)


def _is_cjk(text: str) -> bool:
    sample = [c for c in text[:400] if not c.isspace()]
    return bool(sample) and sum(_cjk_char(c) for c in sample) > 0.3 * len(sample)


def _cjk_char(c: str) -> bool:
    return "\u3040" <= c <= "\u30ff" or "\u3400" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af"


# --------------------------------------------------------------------------------------
# The augmenters
# --------------------------------------------------------------------------------------


def _letters(text: str) -> str:
    """The text's own letters, for random substitutions in any script."""
    seen = sorted({c for c in text if c.isalpha()})
    return "".join(seen) or "abcdefghijklmnopqrstuvwxyz"


_AUGMENTERS: dict[tuple, Any] = {}


def _nlpaug(kind: str, **kwargs: Any) -> Any:
    """An nlpaug augmenter, built once per configuration (the spelling model loads a
    dictionary file, hundreds of milliseconds)."""
    import nlpaug.augmenter.char as nac
    import nlpaug.augmenter.word as naw

    rates = {k: kwargs.pop(k) for k in ("aug_p", "aug_word_p") if k in kwargs}
    key = (kind, tuple(sorted((k, v if not isinstance(v, list) else tuple(v))
                              for k, v in kwargs.items())))
    if key not in _AUGMENTERS:
        classes = {"ocr": nac.OcrAug, "keyboard": nac.KeyboardAug, "char": nac.RandomCharAug,
                   "spelling": naw.SpellingAug, "word": naw.RandomWordAug, "split": naw.SplitAug}
        _AUGMENTERS[key] = classes[kind](**kwargs)
    augmenter = _AUGMENTERS[key]
    for name, value in rates.items():  # the rates are plain attributes, read per call
        setattr(augmenter, name, value)
    return augmenter


def _nlpaug_copy(text: str, rng: np.random.Generator, severity: float) -> tuple[str, list[str]]:
    cjk = _is_cjk(text)
    english = text.isascii()
    tok = {"tokenizer": _cjk_tokens, "reverse_tokenizer": "".join} if cjk else {}
    char = {"aug_word_p": severity, "aug_word_max": _MANY, "aug_char_p": 0.3, "aug_char_max": 3,
            "min_char": 2 if cjk else 4}
    letters = list(_letters(text))
    steps: list[tuple[str, str, dict]] = []
    if rng.random() < 0.3:
        share = round(float(rng.uniform(0.1, 0.5)), 2)
        steps.append((f"crop({share:.2f})", "word",
                      {"action": "crop", "aug_p": share, "aug_max": _MANY, **tok}))
    if english:
        steps.append(("ocr", "ocr", {**char, "min_char": 1}))
        if rng.random() < 0.5:
            steps.append(("keyboard", "keyboard", char))
        if rng.random() < 0.5:
            steps.append(("spelling", "spelling", {"aug_p": severity, "aug_max": _MANY}))
    else:
        steps.append(("random_char:substitute", "char",
                      {"action": "substitute", "candidates": letters, **char, **tok}))
    action = ("swap", "delete", "insert")[int(rng.integers(3))]
    if rng.random() < 0.6:
        steps.append((f"random_char:{action}", "char", {
            "action": action, **char, **tok,
            **({"candidates": letters} if action == "insert" and not english else {})}))
    if not cjk and rng.random() < 0.3:
        steps.append(("split_words", "split", {"aug_p": round(severity / 2, 3), "aug_max": _MANY}))
    applied = []
    for name, kind, kwargs in steps:
        _seed_globals(rng)
        out = _first(_nlpaug(kind, **dict(kwargs)).augment(text))
        if out:
            text = out
            applied.append(name)
    return text, applied


def _augly_copy(text: str, rng: np.random.Generator, severity: float) -> tuple[str, list[str]]:
    import augly.text.functional as augly

    options: list[tuple[str, Callable[[str], Any]]] = [
        ("similar_chars", lambda t: augly.replace_similar_chars(
            t, aug_word_p=severity, aug_char_p=0.2, aug_word_max=_MANY)),
        ("similar_unicode_chars", lambda t: augly.replace_similar_unicode_chars(
            t, aug_word_p=severity, aug_char_p=0.2, aug_word_max=_MANY)),
        ("zero_width", lambda t: augly.insert_zero_width_chars(
            t, granularity="all", cadence=float(rng.integers(5, 40)), vary_chars=True)),
        ("merge_words", lambda t: augly.merge_words(t, aug_word_p=severity, aug_word_max=_MANY)),
        ("split_words", lambda t: augly.split_words(t, aug_word_p=severity, aug_word_max=_MANY)),
        ("change_case", lambda t: augly.change_case(
            t, granularity="word", cadence=float(rng.integers(2, 10)),
            case=("upper", "lower", "random")[int(rng.integers(3))],
            seed=int(rng.integers(1 << 30)))),
        ("punctuation", lambda t: augly.insert_punctuation_chars(
            t, granularity="word", cadence=float(rng.integers(3, 15)))),
        # AugLy 1.0's keyboard/charmix typos need nlpaug 1.1.3 (AttributeError with
        # 1.1.11); its misspelling dictionary works.
        ("misspelling", lambda t: augly.simulate_typos(
            t, aug_word_p=severity, aug_word_max=_MANY, typo_type="misspelling")),
    ]
    k = int(rng.integers(2, 5))
    picks = sorted(rng.choice(len(options), size=k, replace=False).tolist())
    applied = []
    for p in picks:
        name, fn = options[p]
        _seed_globals(rng)
        out = _first(fn(text))
        if out:
            text = out
            applied.append(name)
    return text, applied


_NOISOCR_ERRORS = ("char_swap", "missing_char", "extra_char", "nearby_char", "similar_char",
                   "skipped_space", "random_space", "repeated_char", "unichar")


def _noisocr_copy(text: str, rng: np.random.Generator, severity: float) -> tuple[str, list[str]]:
    import noisocr
    import typo

    width = int(rng.integers(30, 90))
    lines = noisocr.sliding_window(text, window_size=width)
    text = "\n".join(lines)
    n_errors = max(1, int(round(severity * len(text.split()))))
    # noisocr.simulate_errors re-seeds the global generator from the clock on each call
    # (typo.StrErrer(text) without a seed): apply its error list the same way, seeded.
    counts: dict[str, int] = {}
    for _ in range(n_errors):
        name = _NOISOCR_ERRORS[int(rng.integers(len(_NOISOCR_ERRORS)))]
        errer = typo.StrErrer(text, seed=int(rng.integers(1 << 30)))
        try:
            text = getattr(errer, name)().result
        except (ValueError, IndexError):  # nothing to edit of that kind
            continue
        counts[name] = counts.get(name, 0) + 1
    _seed_globals(rng)
    for _ in range(max(1, len(lines) // 10)):
        text = noisocr.simulate_annotation(text, probability=0.3)
    return text, [f"wrap({width})", *(f"{k}x{v}" for k, v in sorted(counts.items()))]


@lru_cache(maxsize=1)
def _confusables() -> dict[str, list[str]]:
    """UTS #39 confusables of each ASCII letter and digit: single code points only."""
    import confusable_homoglyphs

    path = Path(confusable_homoglyphs.__file__).parent / "confusables.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    table: dict[str, list[str]] = {}
    for char in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
        glyphs = sorted({g["c"] for g in data.get(char, []) if len(g["c"]) == 1 and g["c"] != char})
        if glyphs:
            table[char] = glyphs
    return table


def _confusables_copy(text: str, rng: np.random.Generator, severity: float) -> tuple[str, list[str]]:
    table = _confusables()
    chars = list(text)
    where = [i for i, c in enumerate(chars) if c in table]
    k = int(round(severity * len(where)))
    picks = rng.choice(len(where), size=k, replace=False) if k else []
    for p in picks:
        i = where[int(p)]
        glyphs = table[chars[i]]
        chars[i] = glyphs[int(rng.integers(len(glyphs)))]
    return "".join(chars), [f"confusables({k})"]


_COPIERS = {"nlpaug": _nlpaug_copy, "augly": _augly_copy, "noisocr": _noisocr_copy,
            "confusables": _confusables_copy}


def independent_copy(
    text: str, generator: str, rng: np.random.Generator, severity: float | None = None
) -> tuple[str, list[str]]:
    """One copy of ``text`` made by a third-party augmenter.

    Parameters
    ----------
    text : str
    generator : {"nlpaug", "augly", "noisocr", "confusables"}
    rng : numpy.random.Generator
        The copy's own stream; it also seeds the global generators the augmenters use.
    severity : float in (0, 1], optional
        Share of words (characters, for "confusables") edited; default drawn
        log-uniformly from the generator's range.

    Returns
    -------
    text : str
    noise : list of str
        The edits applied, in order, with the severity first.
    """
    check_choice("independent_copy", "generator", generator, GENERATORS)
    if severity is None:  # two decimals: augmenters are cached per configuration
        severity = max(0.01, round(_log_uniform(rng, *_SEVERITY[generator]), 2))
    out, applied = _COPIERS[generator](text, rng, severity)
    return out, [f"{generator}(severity={severity:.4f})", *applied]


# --------------------------------------------------------------------------------------
# Reuters-based sets
# --------------------------------------------------------------------------------------


def _records(plans: list[tuple[str, list[StoryCluster]]], generator: str, seed: int,
             clean_first: bool) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for name, clusters in plans:
        out = []
        for ci, cluster in enumerate(clusters):
            for j in range(cluster.size):
                story = cluster.members[j % len(cluster.members)]
                rng = np.random.default_rng([seed, 13, SPLIT_CODE.get(name, 9), ci, j])
                if clean_first and j == 0:
                    text, noise = story.text, []
                    kind = cluster.kind or "source"
                else:
                    text, noise = independent_copy(story.text, generator, rng)
                    kind = cluster.kind or ("adversarial" if clean_first else "reprint")
                record: dict[str, Any] = {"split": name, "cluster": cluster.label,
                                          "kind": kind, "date": story.date, "source": story.id}
                if cluster.negative_of is not None:
                    record["negative_of"] = cluster.negative_of
                record["noise"] = [*cluster.notes, *noise]
                record["text"] = text
                out.append(record)
        order = np.random.default_rng([seed, 14, SPLIT_CODE.get(name, 9)]).permutation(len(out))
        records.extend({"id": f"{name}-{k:06d}", **out[i]} for k, i in enumerate(order.tolist()))
    return records


def make_independent_set(
    stories: Iterable[Mapping[str, Any]],
    generator: str,
    *,
    seed: int = 0,
    splits: Any = (("validation", 1500), ("test", 1500)),
    mean_cluster_size: float = 4.0,
    max_cluster_size: int = 40,
    hard_negative_share: float = 0.2,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A labelled set from clean stories, every copy made by ``generator``.

    Stories, splits, templates and hard negatives are chosen as in
    :func:`neardup.eval.make_benchmark` (whole days per split, families kept in one
    split); only the copies differ. ``"confusables"`` keeps the clean story as each
    cluster's first member (as the W4NT3D-like adversarial benchmark does).

    Returns
    -------
    records : list of dict
        The shared labelled format (id, split, cluster, kind, date, source, negative_of,
        noise, text).
    info : dict
        Generator, seed, days and counts per split.
    """
    caller = "make_independent_set"
    check_choice(caller, "generator", generator, GENERATORS)
    seed = check_int(caller, "seed", seed, low=0)
    spec = parse_splits(splits)
    kept, skipped = prepare_stories(stories, min_words=20)
    groups = find_story_groups(kept)
    assignment = assign_splits(kept, groups.family, spec, np.random.default_rng([seed, 11]),
                               docs_per_story=mean_cluster_size * (1 + hard_negative_share / 3))
    plans, info = [], {}
    for name, chosen in assignment.items():
        rng = np.random.default_rng([seed, 12, SPLIT_CODE[name]])
        clusters = make_clusters(kept, groups, chosen["stories"])
        made = add_hard_negatives(clusters, hard_negative_share, rng)
        sizes = reprint_cluster_sizes(len(clusters), rng, mean_cluster_size, max_cluster_size)
        for cluster, size in zip(clusters, sizes.tolist()):
            cluster.size = size
        plans.append((name, clusters))
        info[name] = {"days": chosen["days"], "stories": len(chosen["stories"]),
                      "clusters": len(clusters), "hard_negatives": made,
                      "docs": int(sizes.sum())}
    records = _records(plans, generator, seed, clean_first=generator == "confusables")
    return records, {"generator": generator, "seed": seed, "skipped": skipped, "splits": info}


def confusable_fold_rate(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How many of the injected UTS #39 confusables neardup's default normalizer folds.

    Each injected character (a non-ASCII character of a copy whose letter is in the
    confusables table) counts as folded when normalizing it gives the normalized ASCII
    letter it stands for.
    """
    from neardup.text import normalize_text

    table = _confusables()
    target = {g: base for base, glyphs in table.items() for g in glyphs}
    injected = folded = 0
    glyphs_folded: set[str] = set()
    distinct: set[str] = set()
    for record in records:
        if not any(str(n).startswith("confusables(") for n in record.get("noise", ())):
            continue
        for c in record["text"]:
            base = target.get(c)
            if base is None or c.isascii():
                continue
            injected += 1
            distinct.add(c)
            if normalize_text(c) == normalize_text(base):
                folded += 1
                glyphs_folded.add(c)
    all_glyphs = sorted(target)
    table_folded = sum(normalize_text(g) == normalize_text(target[g]) for g in all_glyphs)
    nfkc_folded = sum(_nfkc(g).casefold() == target[g].casefold() for g in all_glyphs)
    return {
        "injected": injected,
        "folded": folded,
        "folded_share": folded / injected if injected else float("nan"),
        "distinct_injected": len(distinct),
        "distinct_folded": len(glyphs_folded),
        "table_glyphs": len(all_glyphs),
        "table_folded": int(table_folded),
        "table_nfkc_folded": int(nfkc_folded),
    }


# --------------------------------------------------------------------------------------
# Multilingual sets
# --------------------------------------------------------------------------------------

_INLINE = [
    (re.compile(r"\\f(\(..|\[[^\]]*\]|.)"), ""),
    (re.compile(r"\\s[+-]?\d"), ""),
    (re.compile(r"\\\*(\(..|\[[^\]]*\]|.)"), ""),
    (re.compile(r"\\\(em|\\\(en"), "—"),
    (re.compile(r"\\\(aq"), "'"),
    (re.compile(r"\\\([a-zA-Z]{2}"), ""),
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\[&/,:%]"), ""),
    (re.compile(r"\\e"), lambda m: "\\"),
    (re.compile(r"\\ "), " "),
]
_BREAKS = {"SH", "SS", "PP", "P", "LP", "TP", "IP", "HP", "sp", "br", "RS", "RE", "nf", "fi",
           "TH", "EX", "EE", "TQ", "in", "ti", "ad", "na", "ne"}


def _roff_paragraphs(source: str) -> list[str]:
    """Plain paragraphs of a man page's roff source (headings and tables dropped)."""
    paragraphs, current = [], []
    skipping = False
    for line in source.splitlines():
        if line.startswith((".\\\"", "'\\\"", '.\\"')):
            continue
        if line.startswith((".", "'")):
            parts = line[1:].split(None, 1)
            macro = parts[0] if parts else ""
            if macro in ("TS", "de", "ig"):
                skipping = True
            elif macro in ("TE", ".."):
                skipping = False
            elif macro in _BREAKS:
                if current:
                    paragraphs.append(" ".join(current))
                    current = []
            elif macro in ("B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB") \
                    and len(parts) > 1 and not skipping:
                current.append(parts[1].replace('"', ""))
            continue
        if skipping:
            continue
        for pattern, repl in _INLINE:
            line = pattern.sub(repl, line)
        if line.strip():
            current.append(line.strip())
    if current:
        paragraphs.append(" ".join(current))
    return [re.sub(r"\s+", " ", p).strip() for p in paragraphs]


def _script_share(text: str, language: str) -> float:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    if language in ("zh_CN", "ja"):
        ok = sum(_cjk_char(c) for c in letters)
    elif language == "ru":
        ok = sum("\u0400" <= c <= "\u04ff" for c in letters)
    elif language == "el":
        ok = sum("\u0370" <= c <= "\u03ff" or "\u1f00" <= c <= "\u1fff" for c in letters)
    else:  # Latin: a translated paragraph has diacritics; English ones have none
        return 1.0 if any(not c.isascii() for c in letters) else 0.0
    return ok / len(letters)


def _size(text: str, cjk: bool) -> int:
    return len(text.replace(" ", "")) // 3 if cjk else len(text.split())


def man_documents(language: str, man_root: Path, lo: int = 50, hi: int = 180,
                   keep: Callable[[str], bool] | None = None) -> tuple[list[dict], dict[str, int]]:
    """Chunks of consecutive translated paragraphs of each page (``lo``-``hi`` words, or
    3x as many characters for CJK), one "page" per source file, and each page's number
    of chunks before shared paragraphs were dropped (pages are assigned to splits by
    those, so that every page stays in the split it had when the sets were first built
    and the models trained on train splits then never see a test page).

    A paragraph found on more than one page (the translators' licence and bug-report
    footer on every page, option texts shared by sibling commands) is dropped: chunks of
    different pages, labelled different stories, would otherwise share whole paragraphs
    and be partial duplicates of each other in fact.

    ``keep(paragraph)`` says whether a paragraph is in the language (default: mostly in
    its script, or for Latin languages holding a diacritic)."""
    cjk = language in ("zh_CN", "ja")
    page_paragraphs = []
    for path in sorted((man_root / language).glob("man*/*.gz")):
        try:
            source = gzip.decompress(path.read_bytes()).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        paragraphs = [p for p in _roff_paragraphs(source) if _size(p, cjk) >= 8 and (
            keep(p) if keep is not None else _script_share(p, language) >= 0.5)]
        page_paragraphs.append((f"{language}:{path.name}", paragraphs))
    on_pages = Counter(p for _, paragraphs in page_paragraphs for p in set(paragraphs))
    docs, pages = [], {}
    for page, paragraphs in page_paragraphs:
        first_built = len(paragraph_chunks(paragraphs, cjk, lo, hi))
        if first_built:
            pages[page] = first_built
        own = [p for p in paragraphs if on_pages[p] == 1]
        docs += [{"page": page, "lang": language, "text": text}
                 for text in paragraph_chunks(own, cjk, lo, hi)]
    return docs, pages


def paragraph_chunks(paragraphs: list[str], cjk: bool, lo: int, hi: int) -> list[str]:
    """Paragraphs joined in order into chunks of at least ``lo`` words (characters for
    ``cjk``), a chunk longer than twice ``hi`` dropped."""
    out, chunk = [], []
    for p in paragraphs:
        chunk.append(p)
        if sum(_size(c, cjk) for c in chunk) >= lo:
            text = "\n".join(chunk)
            if _size(text, cjk) <= hi * 2:
                out.append(text)
            chunk = []
    return out


def faker_documents(n_pages: int, seed: int) -> list[dict]:
    from faker import Faker

    fake = Faker("el_GR")
    fake.seed_instance(seed)
    docs = []
    for page in range(n_pages):
        for _ in range(int(fake.random_int(3, 8))):
            text = "\n".join(fake.paragraph(nb_sentences=8) for _ in range(2))
            docs.append({"page": f"el:faker-{page}", "lang": "el", "text": text})
    return docs


def script_sentences(text: str, cjk: bool) -> list[str]:
    """``text``'s sentences: cut after CJK sentence marks when ``cjk``, else as
    :func:`~neardup.datasets.noise.split_sentences` cuts them."""
    if cjk:
        return [s for s in re.split(r"(?<=[。！？；])", text) if s.strip()]
    return split_sentences(text)


def _pages_by_language(page_order: Sequence[str], pages: Mapping[str, list[int]],
                       stories_per_language: float) -> list[int]:
    """Indices of the chunks (source stories) of the pages in ``page_order``, each page
    kept while its language (the page name's prefix) has fewer than
    ``stories_per_language`` chunks."""
    taken: Counter = Counter()
    chosen = []
    for page in page_order:
        language = page.split(":", 1)[0]
        if taken[language] < stories_per_language:
            chosen += pages[page]
            taken[language] += len(pages[page])
    return chosen


def make_multilingual_set(
    name: str,
    *,
    seed: int = 0,
    docs_per_split: int = 600,
    man_root: str | Path = "/usr/share/man",
    mean_cluster_size: float = 3.0,
    max_cluster_size: int = 20,
    hard_negative_share: float = 0.2,
    splits: Sequence[str] = ("test", "validation"),
    docs_per_language: int = 300,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A labelled set in one script group: ``name`` in :data:`LANGUAGE_SETS`.

    Source documents are chunks of translated man pages (Faker's Greek words for
    ``"greek"``). Pages are split between validation and test, so a split's other chunks
    of the same page are natural same-topic negatives; a share ``hard_negative_share``
    of the chunks also gets an *update* (its second half replaced by the sentences of
    another chunk of the same page, a separate cluster). Each copy is made by one of
    "nlpaug", "augly" and "noisocr" in turn (the generator is in the record's ``noise``).

    ``splits`` are filled in the order given, each with about ``docs_per_split``
    documents from pages no earlier split took; a split appended to the default
    ``("test", "validation")`` (e.g. ``"train"``) leaves those two byte-identical.

    ``"language_validation"``, which must come last, is a validation split balanced by
    language: pages no earlier split took, in the same random order, each kept while its
    language has fewer than about ``docs_per_language`` documents. Page order follows
    the seed only, so the other splits (drawn by page weight, whatever the languages)
    can hold a few documents of a language or none: e.g. multi-latin's validation split
    has no Czech page. Per-language figures need this split.

    Raises
    ------
    ValueError
        For an unknown ``name`` or split, ``"language_validation"`` not last, or no text
        found (install the Debian packages listed in :data:`MULTILINGUAL_SOURCES`).
    """
    caller = "make_multilingual_set"
    check_choice(caller, "name", name, tuple(LANGUAGE_SETS))
    seed = check_int(caller, "seed", seed, low=0)
    for split in splits:
        check_choice(caller, "splits", split, tuple(_MULTI_SPLIT_CODE))
    if LANGUAGE_SPLIT in splits[:-1]:
        raise ValueError(f"{caller}: splits must end with {LANGUAGE_SPLIT!r} if they hold it, "
                         f"got {tuple(splits)}")
    docs_per_language = check_int(caller, "docs_per_language", docs_per_language, low=1)
    languages = LANGUAGE_SETS[name]
    docs: list[dict] = []
    # Each page's weight in the split assignment (its number of chunks as first built).
    page_weight: dict[str, int] = {}
    for language in languages:
        if language == "el":
            greek = faker_documents(400, seed)
            docs += greek
            page_weight.update(Counter(d["page"] for d in greek))
        else:
            language_docs, language_pages = man_documents(language, Path(man_root))
            docs += language_docs
            page_weight.update(language_pages)
    if not docs:
        raise ValueError(
            f"{caller}: no {name} text under {man_root}; install "
            + ", ".join(MULTILINGUAL_SOURCES[lang].split(" (")[0] for lang in languages) + "."
        )
    rng = np.random.default_rng([seed, 21])
    page_list = list(page_weight)
    pages: dict[str, list[int]] = {page: [] for page in page_list}
    for i, d in enumerate(docs):
        pages[d["page"]].append(i)
    page_order = [page_list[i] for i in rng.permutation(len(page_list)).tolist()]
    per_story = mean_cluster_size * (1 + hard_negative_share)
    # Each split first takes the pages it had when the sets were first built (by their
    # chunk counts then), so no page changes split; then, short of its size now that
    # shared paragraphs are gone, pages no split had then.
    first_pages, cursor = {}, 0
    for split in splits:
        if split == LANGUAGE_SPLIT:
            continue
        weight, start = 0, cursor
        while cursor < len(page_order) and weight * per_story < docs_per_split:
            weight += page_weight[page_order[cursor]]
            cursor += 1
        first_pages[split] = page_order[start:cursor]
    plans, info = [], {}
    for split in splits:
        if split == LANGUAGE_SPLIT:
            chosen = _pages_by_language(page_order[cursor:], pages, docs_per_language / per_story)
        else:
            chosen = [i for page in first_pages[split] for i in pages[page]]
            while cursor < len(page_order) and len(chosen) * per_story < docs_per_split:
                chosen += pages[page_order[cursor]]
                cursor += 1
        clusters = []
        for i in chosen:
            d = docs[i]
            story = Story(id=f"{d['lang']}-{i}", title="", dateline="", body=d["text"],
                          date=None, day=d["page"], topics=(d["lang"],))
            clusters.append(StoryCluster(story.id, [story], family=i))
        # Updates: the chunk's second half replaced by another chunk of the same page.
        n_updates = int(round(hard_negative_share * len(clusters)))
        updates = []
        by_page: dict[str, list[int]] = {}
        for k, i in enumerate(chosen):
            by_page.setdefault(docs[i]["page"], []).append(k)
        for k in rng.permutation(len(clusters))[:n_updates].tolist():
            anchor = clusters[k].members[0]
            siblings = [s for s in by_page[anchor.day] if s != k]
            if not siblings:
                continue
            other = clusters[siblings[int(rng.integers(len(siblings)))]].members[0]
            cjk = _is_cjk(anchor.body)
            mine, theirs = script_sentences(anchor.body, cjk), script_sentences(other.body, cjk)
            if len(mine) < 2 or len(theirs) < 2:
                continue
            half = len(mine) // 2
            joiner = "" if cjk else " "
            body = joiner.join(mine[:half] + theirs[len(theirs) // 2:])
            story = Story(id=f"{anchor.id}~update", title="", dateline="", body=body,
                          date=None, day=anchor.day, topics=anchor.topics)
            updates.append(StoryCluster(story.id, [story], family=-1, kind="hard_negative:update",
                                    negative_of=anchor.id))
        clusters += updates
        sizes = reprint_cluster_sizes(len(clusters), rng, mean_cluster_size, max_cluster_size)
        for cluster, size in zip(clusters, sizes.tolist()):
            cluster.size = size
        plans.append((split, clusters))
        info[split] = {"pages": len({docs[i]["page"] for i in chosen}), "stories": len(chosen),
                       "updates": len(updates), "docs": int(sizes.sum()),
                       "docs_by_language": {
                           lang: int(sum(c.size for c in clusters
                                         if c.members[0].topics[0] == lang))
                           for lang in languages}}
    records = []
    for split, clusters in plans:
        out = []
        for ci, cluster in enumerate(clusters):
            story = cluster.members[0]
            for j in range(cluster.size):
                crng = np.random.default_rng([seed, 22, _MULTI_SPLIT_CODE[split], ci, j])
                generator = ("nlpaug", "augly", "noisocr")[(ci + j) % 3]
                text, noise = independent_copy(story.body, generator, crng)
                record = {"split": split, "cluster": cluster.label,
                          "kind": cluster.kind or "reprint", "date": None,
                          "lang": story.topics[0], "source": story.id}
                if cluster.negative_of is not None:
                    record["negative_of"] = cluster.negative_of
                record["noise"] = noise
                record["text"] = text
                out.append(record)
        order = np.random.default_rng([seed, 23, _MULTI_SPLIT_CODE[split]]).permutation(len(out))
        records.extend({"id": f"{split}-{k:06d}", **out[i]} for k, i in enumerate(order.tolist()))
    sources = {lang: MULTILINGUAL_SOURCES[lang] for lang in languages}
    return records, {"set": name, "seed": seed, "sources": sources, "splits": info}


def write_set(records: Sequence[Mapping[str, Any]], directory: str | Path,
              info: Mapping[str, Any]) -> dict[str, int]:
    """Write ``{split}.jsonl.gz`` per split (byte-stable gzip) and ``info.json``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    by_split: dict[str, list] = {}
    for r in records:
        by_split.setdefault(r["split"], []).append(r)
    sizes = {}
    for split, rows in by_split.items():
        payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
        path = directory / f"{split}.jsonl.gz"
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                    filename="") as gz:
            gz.write(payload)
        sizes[split] = path.stat().st_size
    (directory / "info.json").write_text(json.dumps(info, indent=2, ensure_ascii=False,
                                                    default=str) + "\n", encoding="utf-8")
    return sizes


def _nfkc(text: str) -> str:
    """Unicode's own compatibility folding, the baseline for the fold rate."""
    return unicodedata.normalize("NFKC", text)
