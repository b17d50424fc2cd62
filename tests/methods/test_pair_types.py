"""Duplicate types of linked pairs (Sanderson 1997): each type on hand-built pairs, the
rule order, dates and cluster sizes, vectorized over many pairs, and parameter errors."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import neardup.methods.pair_types as pair_types_module
from neardup.graph.edges import Pairs
from neardup.methods.pair_types import (
    PAIR_TYPES,
    classify_pairs,
    count_pair_types,
    figures_disagree,
    mask_digits,
    pair_features,
)
from neardup.text import normalize_batch

STORY = (
    "The Bank of Japan intervened just after the Tokyo market opened to support the dollar "
    "from falling below 140.00 yen, dealers said. The central bank bought a moderate amount "
    "of dollars to prevent its decline amid bearish sentiment for the U.S. currency, they "
    "said. The dollar opened at a record Tokyo low of 140.00 yen against 140.70/80 in New "
    "York and 141.15 at the close here yesterday. The previous Tokyo low was 140.55 yen set "
    "on April 15."
)
ABRIDGED = STORY.rsplit(". The dollar opened", 1)[0] + "."
TYPOS = STORY.replace("moderate", "modarate").replace("bearish", "bearsih")
EARNINGS = (
    "ACME CORP <ACME> 1ST QTR NET Shr 12 cts vs 10 cts Net 1,200,000 vs 1,000,000 "
    "Revs 15.2 mln vs 14.1 mln Avg shrs 10.0 mln vs 9.8 mln Reuter"
)
EARNINGS_NEXT = (
    "ACME CORP <ACME> 2ND QTR NET Shr 15 cts vs 11 cts Net 1,530,000 vs 1,090,000 "
    "Revs 16.8 mln vs 14.6 mln Avg shrs 10.2 mln vs 9.9 mln Reuter"
)
EARNINGS_OTHER = (
    "BETA INDUSTRIES INC <BETA> 1ST QTR NET Shr 31 cts vs 25 cts Net 3,100,000 vs "
    "2,500,000 Revs 45.2 mln vs 41.1 mln Avg shrs 10.1 mln vs 9.7 mln Reuter"
)
FED = (
    "FED ADDS RESERVES VIA CUSTOMER REPURCHASES The Federal Reserve entered the U.S. "
    "Government securities market to arrange 1.5 billion dlrs of customer repurchase "
    "agreements, a Fed spokesman said. Dealers said Federal funds were trading at 6-3/16 "
    "pct when the Fed began its temporary and indirect supply of reserves to the banking "
    "system. Reuter"
)
FED_NEXT_WEEK = FED.replace("1.5 billion", "2.5 billion")
OTHER = (
    "Grain exports from the port rose sharply in March as traders shipped wheat and corn "
    "to Asian buyers, officials said."
)
RAW = [STORY, STORY.upper() + "!!", ABRIDGED, TYPOS, EARNINGS, EARNINGS_NEXT, EARNINGS_OTHER,
       FED, FED_NEXT_WEEK, OTHER]  # fmt: skip
TEXTS = normalize_batch(RAW)
# (left, right, type without dates or clusters)
CASES = [
    (0, 1, "exact"),  # identical after normalization
    (0, 2, "expanded"),  # abridged copy
    (2, 0, "expanded"),  # order does not matter
    (0, 3, "corrected"),  # two typos corrected
    (4, 5, "template"),  # earnings, other figures
    (4, 6, "template"),  # earnings of another company
    (7, 8, "corrected"),  # one figure differs: text alone cannot tell (dates can)
    (0, 9, "near"),  # unrelated but linked by some method
]


def make_pairs(cases) -> Pairs:
    left = np.array([c[0] for c in cases], np.int64)
    right = np.array([c[1] for c in cases], np.int64)
    return Pairs(left, right, np.ones(len(cases)))


def test_each_type_on_hand_built_pairs():
    types = classify_pairs(make_pairs(CASES), TEXTS)
    assert types.tolist() == [c[2] for c in CASES]
    assert types.dtype == np.dtype("<U9")


def test_features_match_the_rules():
    f = pair_features(make_pairs(CASES), TEXTS)
    assert set(f) == {"identical", "jaccard", "containment", "masked_jaccard"}
    assert f["identical"].tolist() == [True] + [False] * 7
    assert f["jaccard"][0] == f["containment"][0] == 1.0
    assert f["containment"][1] == 1.0 and f["jaccard"][1] < 0.8  # abridged
    assert f["jaccard"][3] >= 0.8  # typos
    assert f["masked_jaccard"][4] - f["jaccard"][4] > 0.5  # earnings: figures differ
    assert f["masked_jaccard"][6] == 1.0 > f["jaccard"][6]  # Fed: one figure differs
    assert f["jaccard"][7] == 0.0
    for key in ("jaccard", "containment", "masked_jaccard"):
        assert f[key].dtype == np.float32
        assert np.all((f[key] >= 0) & (f[key] <= 1))


def test_dates_beyond_window_make_templates():
    """Sanderson's Figure 4: same wording a week apart is a template; identical text stays
    exact whatever the dates (the report's four exact copies relayed days apart)."""
    t0 = np.datetime64("1987-03-02T11:44:41", "s")
    dates = np.full(len(TEXTS), t0)
    dates[8] = np.datetime64("1987-03-09T11:49:35", "s")  # the Fed story a week later
    dates[1] = t0 + np.timedelta64(5 * 24, "h")  # the exact copy, 5 days later
    dates[3] = t0 + np.timedelta64(47, "h")  # the corrected copy, inside 48 h
    types = classify_pairs(make_pairs(CASES), TEXTS, dates=dates)
    assert types[6] == "template"
    assert types[0] == "exact"
    assert types[3] == "corrected"
    # A wider window, no window, or an unknown date turn the Fed pair back.
    pairs = make_pairs(CASES)
    assert classify_pairs(pairs, TEXTS, dates=dates, time_window_hours=200)[6] == "corrected"
    assert classify_pairs(pairs, TEXTS, dates=dates, time_window_hours=None)[6] == "corrected"
    dates[8] = np.datetime64("NaT")
    assert classify_pairs(pairs, TEXTS, dates=dates)[6] == "corrected"


def test_large_clusters_make_templates():
    sizes = np.full(len(TEXTS), 2)
    sizes[[0, 3]] = 80
    types = classify_pairs(make_pairs(CASES), TEXTS, cluster_sizes=sizes)
    expected = [c[2] for c in CASES]
    expected[1] = expected[2] = expected[3] = expected[7] = "template"  # pairs touching 0 or 3
    assert types.tolist() == expected  # the exact pair stays exact
    higher = classify_pairs(make_pairs(CASES), TEXTS, cluster_sizes=sizes, large_cluster=81)
    assert higher.tolist() == [c[2] for c in CASES]


def test_thresholds_are_parameters():
    pairs = make_pairs(CASES)
    assert classify_pairs(pairs, TEXTS, containment_min=1.0)[1] == "expanded"
    # Raising the corrected bar makes the typo pair merely near.
    assert classify_pairs(pairs, TEXTS, corrected_jaccard_min=0.95)[3] == "near"
    # An abridged copy counts as corrected once the expanded Jaccard cap is below its Jaccard.
    assert classify_pairs(pairs, TEXTS, expanded_jaccard_max=0.3)[1] == "corrected"
    # A small digit gain is enough for the Fed pair to be a template.
    assert classify_pairs(pairs, TEXTS, template_gain=0.05)[6] == "template"
    assert classify_pairs(pairs, TEXTS, template_masked_min=0.9)[5] == "near"


def test_vectorized_over_many_pairs_with_a_mapping():
    """Hundreds of pairs over a sparse set of document positions (a dict of texts)."""
    rng = np.random.default_rng(0)
    offset = 10_000
    texts = {offset + 3 * k: t for k, t in enumerate(TEXTS)}
    picks = rng.integers(0, len(CASES), size=500)
    cases = [(offset + 3 * CASES[p][0], offset + 3 * CASES[p][1], CASES[p][2]) for p in picks]
    types = classify_pairs(make_pairs(cases), texts)
    assert types.tolist() == [c[2] for c in cases]
    counts = count_pair_types(types)
    assert list(counts) == list(PAIR_TYPES)
    assert sum(counts.values()) == 500 and all(counts[t] > 0 for t in PAIR_TYPES)


def test_empty_and_edge_inputs():
    assert classify_pairs(Pairs.empty(), []).shape == (0,)
    assert count_pair_types(np.array([], "<U9")) == dict.fromkeys(PAIR_TYPES, 0)
    one = Pairs(np.array([0]), np.array([1]), np.ones(1))
    assert classify_pairs(one, ["", "some words here"]).tolist() == ["near"]
    assert classify_pairs(one, ["alpha beta", "alpha beta"]).tolist() == ["exact"]


def test_mask_digits():
    got = mask_digits(["net 1 5 mln vs 12 345", "no digits", ""])
    assert got == ["net 0 0 mln vs 0 0", "no digits", ""]
    assert mask_digits(["a\ue000 7"]) == ["a\ue000 0"]  # the batch separator inside a text
    assert mask_digits([]) == []


def test_docstring_example():
    assert doctest.testmod(pair_types_module).failed == 0


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(containment_min=1.5), "containment_min"),
        (dict(expanded_jaccard_max=-0.1), "expanded_jaccard_max"),
        (dict(corrected_jaccard_min="0.5"), "corrected_jaccard_min"),
        (dict(template_masked_min=2), "template_masked_min"),
        (dict(template_gain=float("nan")), "template_gain"),
        (dict(large_cluster=1), "large_cluster"),
        (dict(time_window_hours=0), "time_window_hours"),
        (dict(dates=np.zeros(len(TEXTS))), "dates"),
        (dict(dates=np.full(3, np.datetime64("2020-01-01"))), "dates"),
        (dict(cluster_sizes=np.ones(len(TEXTS))), "cluster_sizes"),
        (dict(cluster_sizes=np.ones(2, np.int64)), "cluster_sizes"),
    ],
)
def test_invalid_params_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"classify_pairs: parameter '{name}'"):
        classify_pairs(make_pairs(CASES), TEXTS, **kwargs)


def test_missing_texts_and_bad_pairs():
    with pytest.raises(ValueError, match="parameter 'normalized_texts'"):
        classify_pairs(make_pairs(CASES), TEXTS[:3])
    with pytest.raises(ValueError, match="parameter 'normalized_texts'"):
        classify_pairs(make_pairs(CASES), {0: TEXTS[0]})
    with pytest.raises(ValueError, match="parameter 'normalized_texts'"):
        classify_pairs(Pairs(np.array([0]), np.array([1]), np.ones(1)), [b"bytes", "str"])
    with pytest.raises(ValueError, match="parameter 'pairs'"):
        pair_features([(0, 1)], TEXTS)


# Reuters-21578 notices of different companies (tickers in their headlines) that the
# figure test as a set let through: each figure of one text appears in the other, only
# repeated a different number of times.
_NOTICES = [
    ("Qtly div 10 cts vs 10 cts prior\n Pay April 30\n Record April 15\n Reuter",
     "Qtly div 15 cts vs 15 cts prior\n Pay April 30\n Record April 15\n Reuter"),
    ("Qtly div 1-1/2 cts vs 1-1/2 cts prior\n Pay April 15\n Record March 30\n Reuter",
     "Qtly div 7-1/2 cts vs 7-1/2 cts prior\n Pay April 30\n Record April 15\n Reuter"),
    ("Qtly div five cts vs five cts prior\n Pay Aug 15\n Record June 30\n Reuter",
     "Qtly div 15 cts vs 15 cts prior\n Pay July 15\n Reord June 30\n Reuter"),
]


@pytest.mark.parametrize("left,right", _NOTICES)
def test_figures_are_counted_with_their_repeats(left, right):
    texts = normalize_batch([left, right])
    assert figures_disagree(texts, np.array([0]), np.array([1])).tolist() == [True]


def test_ocr_damage_that_only_loses_figures_is_no_template():
    story = "Qtly div 25 cts vs 25 cts prior\n Pay July 10\n Record June 30\n Reuter"
    damaged = ["Qtly dlv 2S cts vs 25 cts pri0r\n Pay July 1O\n Record June 30\n Reuter",
               "Qtly div 25 cts vs 25 cts prior\n Pay July 10\n Record June 3O\n Reuter"]
    texts = normalize_batch([story, *damaged])
    assert figures_disagree(texts, np.array([0, 0]), np.array([1, 2])).tolist() == [False, False]
