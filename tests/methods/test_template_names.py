"""The template guard's name test: one template filled with different companies' names is
kept apart, a copy whose names OCR or case noise garbled is not."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import neardup.methods.template_names as template_names_module
from neardup.methods.template_names import names_disagree, names_length_pairs

# Reuters-21578-style offering notices: one template, two companies.
_OFFERING = ("Teradyne Inc said it is raising 100 mln dlrs via an offering of convertible "
             "subordinated debentures due 2012 through Goldman Sachs and Co.")
_OTHER_COMPANY = ("Comdisco Inc said it is raising 100 mln dlrs via an offering of convertible "
                  "subordinated debentures due 2012 through Goldman Sachs and Co.")
_OTHER_TWO_WORDS = ("National Medical Enterprises said it is raising 100 mln dlrs via an "
                    "offering of convertible subordinated debentures due 2012 through Goldman "
                    "Sachs and Co.")
# The first notice damaged: letters misread in the names, a word split, case changed.
_OCR_COPIES = [
    "Teradvne Inc said it is raising 100 mln dlrs via an offering of convertible "
    "subordinated debentures due 2012 through Go1dman Sachs and Co.",
    "Teradyne lnc said it is raising 100 mln dlrs via an offerlng of convertible "
    "subordinated deben tures due 2012 through Goldmann Sachs and Co.",
    "TERADYNE Inc said it is raising 100 mln dlrs via an offering of convertible "
    "subordinated debentures due 2012 through goldman sachs and Co.",
    "Teradyne Inc said it is raising 100 mln dlrs vla an offering of c0nvertible "
    "subordinated debentures due 2012 thr0ugh Goldman Sachs and Co.",
]


def _pairs(texts, left, right, **kwargs):
    return names_disagree(texts, np.array(left), np.array(right), **kwargs).tolist()


@pytest.mark.parametrize("other", [_OTHER_COMPANY, _OTHER_TWO_WORDS])
def test_one_template_with_other_names_is_kept_apart(other):
    assert _pairs([_OFFERING, other], [0, 1], [1, 0]) == [True, True]


@pytest.mark.parametrize("copy", _OCR_COPIES)
def test_copies_with_garbled_names_are_not_templates(copy):
    assert _pairs([_OFFERING, copy], [0], [1]) == [False]


def test_capitals_alone_are_not_names():
    # Headlines in capitals are reworded and garbled by noise: their words are no names.
    left = "COMDISCO RAISES DEBT " + _OFFERING
    right = "GOLD AND RUBBER BROKERS " + _OFFERING
    assert _pairs([left, right], [0], [1]) == [False]


def test_different_texts_and_expanded_copies_are_left_to_the_scorer():
    unrelated = "Mobil Corp said it sold its Paris refinery to Total for an undisclosed sum."
    expanded = _OTHER_COMPANY + " The company said proceeds will repay bank debt. " * 3
    assert _pairs([_OFFERING, unrelated, expanded], [0, 0], [1, 2]) == [False, False]
    assert _pairs([_OFFERING, _OTHER_COMPANY], [0], [1], max_chars=50) == [False]


def test_many_pairs_at_once_and_empty_input():
    texts = [_OFFERING, _OTHER_COMPANY, *_OCR_COPIES]
    left = np.zeros(len(texts) - 1, np.int64)
    right = np.arange(1, len(texts))
    assert names_disagree(texts, left, right).tolist() == [True] + [False] * len(_OCR_COPIES)
    assert names_disagree(texts, np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0,)


def test_length_test_matches_the_pairs_it_lets_through():
    lengths = np.array([100, 90, 60, 700, 650])
    left, right = np.array([0, 0, 3, 0]), np.array([1, 2, 4, 0])
    assert names_length_pairs(lengths[left], lengths[right]).tolist() == [True, False, False, True]


@pytest.mark.parametrize("kwargs,name", [
    (dict(max_chars=0), "max_chars"), (dict(max_gap=0), "max_gap"),
    (dict(max_similarity=1.5), "max_similarity"), (dict(min_aligned=-0.1), "min_aligned"),
    (dict(min_length_ratio=2.0), "min_length_ratio"),
])
def test_invalid_params_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"names_disagree: parameter '{name}'"):
        _pairs([_OFFERING, _OTHER_COMPANY], [0], [1], **kwargs)
    with pytest.raises(ValueError, match="one length"):
        names_disagree([_OFFERING], np.array([0]), np.array([0, 0]))


def test_docstring_example():
    result = doctest.testmod(template_names_module)
    assert result.attempted > 0 and result.failed == 0
