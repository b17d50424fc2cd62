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
    assert _pairs([_OFFERING, _OTHER_COMPANY], [0], [1], max_chars=50,
                  lead_max_chars=50) == [False]


def test_many_pairs_at_once_and_empty_input():
    texts = [_OFFERING, _OTHER_COMPANY, *_OCR_COPIES]
    left = np.zeros(len(texts) - 1, np.int64)
    right = np.arange(1, len(texts))
    assert names_disagree(texts, left, right).tolist() == [True] + [False] * len(_OCR_COPIES)
    assert names_disagree(texts, np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0,)


def test_length_test_matches_the_pairs_it_lets_through():
    # The widest limits, the opening name's: shorter at most 1,000 characters, within 40%.
    lengths = np.array([100, 90, 60, 700, 650, 1200, 50])
    left, right = np.array([0, 0, 3, 0, 5, 0]), np.array([1, 2, 4, 0, 5, 6])
    assert names_length_pairs(lengths[left], lengths[right]).tolist() == [
        True, True, True, True, False, False]


# Reuters-21578 notices that one template fills with two companies' names (stories
# 11934/11940, 13873/13902, 4453/4584, 9931/10051; bodies cut to their first sentences
# where the case does not need the rest): the company is named first, then the template's
# wording, and one notice adds a clause, or both run longer than the body test's 600
# characters.
_PRIME_CHEMICAL = ("Chemical Bank, the main bank subsidiary of Chemical New York Corp, said it "
                   "is raising its prime lending rate to 7-3/4 pct from 7-1/2 pct, effective "
                   "immediately.")
_PRIME_MARINE = ("Marine Midland Banks Inc said it is raising its prime lending rate to 7-3/4 "
                 "pct from 7-1/2 pct, effective immediately.")
_NASDAQ_NMR = ("NMR Centers Inc said its common stock has started trading on the NASDAQ "
               "National Market System, making it eligible for margin financing.")
_NASDAQ_SOUND = ("Sound Advice Inc said its common stock has started trading on the NASDAQ "
                 "National Market System.")
_CRUDE_SUN = ("Sun Co said it raised the contract price it will pay for crude oil 50 cts a "
              "barrel, effective today. The increase brings Sun's posted price for the West "
              "Texas Intermediate and West Texas Sour grades to 17.50 dlrs/bbl.")
_CRUDE_CITGO = ("Southland Corp's Citgo Petroleum Corp said it raised the contract price it "
                "will pay for crude oil 50 cts a barrel, effective today. The increase bring's "
                "Citgo's posted price for the West Texas Intermediate and West Texas Sour "
                "grades to 17.50 dlrs a barrel, and Light Louisiana Sweet North was increased "
                "to 17.75 dlrs a barrel.")
_DEBT_TAIL = (" The issue is non-refundable for 10 years. A sinking fund starting in 1998 to "
              "retire annually five pct of the debentures can be upped by 200 pct at the "
              "company's option, giving them an estimated minimum life of 13.85 years and "
              "maximum of 20.5 years.")
_DEBT_TIME = ("Time Inc is raising 250 mln dlrs via an offering of sinking fund debentures due "
              "2017 yielding 8.84 pct, said lead manager Salomon Brothers Inc. The debentures "
              "have an 8-3/4 pct coupon and were priced at 99.055 to yield 115 basis points "
              "over the off-the-run 9-1/4 pct Treasury bonds of 2016. First Boston co-managed "
              "the deal." + _DEBT_TAIL + " The debt is rated Aa-3 by Moody's and A-plus by S/P.")
_DEBT_OUTBOARD = ("Outboard Marine Corp is raising 100 mln dlrs via an offering of sinking fund "
                  "debentures due 2017 yielding 9.15 pct, said lead manager Salomon Brothers "
                  "Inc. The debentures have a 9-1/8 pct coupon and were priced at 99.75 to "
                  "yield 146 basis points over comparable Treasury bonds. Morgan Stanley "
                  "co-managed the deal." + _DEBT_TAIL
                  + " The debt is rated Baa-2 by Moody's and BBB-plus by S/P.")
# A name in capitals alone (as Reuters writes NYNEX and NMR) against another.
_DIV_BELL = "BELL ATLANTIC Corp said it raised its quarterly dividend to 96 cts from 90 cts."
_DIV_NYNEX = "NYNEX Corp said it raised its quarterly dividend to 96 cts from 90 cts."


@pytest.mark.parametrize("first,second", [
    (_PRIME_CHEMICAL, _PRIME_MARINE), (_NASDAQ_NMR, _NASDAQ_SOUND), (_CRUDE_SUN, _CRUDE_CITGO),
    (_DEBT_TIME, _DEBT_OUTBOARD), (_DIV_BELL, _DIV_NYNEX),
])
def test_notices_naming_other_companies_first_are_kept_apart(first, second):
    # The debt notices are longer than the body test's limit: the opening name decides.
    assert min(len(_DEBT_TIME), len(_DEBT_OUTBOARD)) > 600
    assert _pairs([first, second], [0, 1], [1, 0]) == [True, True]
    # The body test alone (no opening name test) lets these through.
    assert _pairs([first, second], [0], [1], lead_max_gap=0) == [False]


@pytest.mark.parametrize("original,copy", [
    # OCR garbles letters of the names, case noise puts one in capitals.
    (_PRIME_CHEMICAL, _PRIME_CHEMICAL.replace("Chemical Bank", "Chemlcal Bank")
     .replace("Chemical New", "Chemica1 New")),
    (_PRIME_CHEMICAL, _PRIME_CHEMICAL.replace("Chemical Bank", "CHEMICAL BANK")),
    (_NASDAQ_NMR, _NASDAQ_NMR.replace("NMR Centers", "NMR Ccnters")),
    (_DEBT_TIME, _DEBT_TIME.replace("Time Inc", "Tirne Inc")),
    # A dateline or byline before the name, in one copy or both, the name garbled.
    (_PRIME_MARINE, "NEW YORK, April 1 - " + _PRIME_MARINE),
    ("By JOHN SMITH, Reuters " + _PRIME_MARINE.replace("Midland", "Midlnnd"), _PRIME_MARINE),
    ("LONDON, March 28 - Japan is in the process of joining the International Cocoa "
     "Organisation (ICCO), ICCO officials said.",
     "Japan Joining International Cocoa Agreement Japann is in the process of joining the "
     "International Cocoa Organisation (ICCO), ICCO officials said."),
    # OCR broke the verb after the name ("said" -> "aid"): the name is still the same.
    ("By ROBERT JOHNSON, Reuters Cleveland (UP) - Tex- asAir Corp's Continental Airlines aid "
     "it will begin creation of a Cleveland Hub July one.",
     "Texas Air Corp's Continental Airlines said it will begin creation of a Cleveland Hub "
     "July one."),
])
def test_copies_with_garbled_or_prefixed_names_are_not_templates(original, copy):
    assert _pairs([original, copy], [0, 1], [1, 0]) == [False, False]


@pytest.mark.parametrize("kwargs,name", [
    (dict(max_chars=0), "max_chars"), (dict(max_gap=0), "max_gap"),
    (dict(max_similarity=1.5), "max_similarity"), (dict(min_aligned=-0.1), "min_aligned"),
    (dict(min_length_ratio=2.0), "min_length_ratio"), (dict(lead_max_chars=0), "lead_max_chars"),
    (dict(lead_max_gap=-1), "lead_max_gap"), (dict(min_anchor=0), "min_anchor"),
    (dict(max_capitals=-1), "max_capitals"), (dict(lead_min_length_ratio=1.2), "lead_min_length_ratio"),
])
def test_invalid_params_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"names_disagree: parameter '{name}'"):
        _pairs([_OFFERING, _OTHER_COMPANY], [0], [1], **kwargs)
    with pytest.raises(ValueError, match="one length"):
        names_disagree([_OFFERING], np.array([0]), np.array([0, 0]))


def test_docstring_example():
    result = doctest.testmod(template_names_module)
    assert result.attempted > 0 and result.failed == 0


def test_folded_text_splits_into_the_folded_words():
    """``_words`` folds the whole text, then splits it: equal to folding each word,
    because case folding maps no character to whitespace or from it (every code point)."""
    from neardup.methods.template_names import _words

    every = "".join(map(chr, range(0x110000)))
    assert _words(every).folded == [w.casefold() for w in every.split()]
    assert all(chr(c).casefold() == chr(c) for c in range(0x110000) if chr(c).isspace())
