"""Seeded text corruption for building near-duplicate evaluation sets.

Two kinds of noise are modelled:

* **Reprint noise** (Silcock et al. 2022, "Noise-Robust De-Duplication at Scale", sec. 3 and
  appendix A.2): a wire story copied by local newspapers is abridged from the bottom, loses
  its lead when continued from another page, loses middle paragraphs, gets a restyled
  dateline or a byline, gains local sentences, and is then scanned and OCR'ed.
* **Adversarial noise** (Zhang et al. 2023, "RETSim", sec. 3.2, 4.2 and appendix A.2, the
  W4NT3D augmentations): sentence-, word- and character-level insertion, deletion,
  substitution and transposition, plus homoglyphs, invisible characters, case changes
  and hash-busting padding as seen in spam.

Two edits make *different* stories that look alike (hard negatives, Silcock et al. sec.
3.3): :func:`replace_sentences` turns a story into an update of itself, and
:func:`quoted_sentences` finds the quotes one story can lend another (inserted with
:func:`insert_local_sentences`).

Every function takes an explicit ``numpy.random.Generator`` and returns a new string, so
the same text and seed always give byte-identical output. :func:`reprint` combines the
families into one noisy copy and reports what it did; :func:`reprint_cluster_sizes` draws
how many copies each source gets.

Sentences are found by :func:`sentence_spans`, a small regex splitter for wire-style text
(no NLP dependency); paragraphs by :func:`paragraph_spans` (Reuters indents each
paragraph by four spaces). Editorial functions cut at those boundaries, so ``abridge``
returns a prefix of its input and ``drop_lead`` a suffix.
"""

from neardup.datasets.noise.characters import (
    HOMOGLYPHS,
    INVISIBLE_CHARS,
    case_changes,
    homoglyphs,
    invisible_chars,
    pad,
)
from neardup.datasets.noise.dateline import change_dateline
from neardup.datasets.noise.editorial import (
    abridge,
    drop_lead,
    drop_middle_sentences,
    insert_local_sentences,
    quoted_sentences,
    replace_sentences,
)
from neardup.datasets.noise.ocr import ocr_noise
from neardup.datasets.noise.reprint import PROFILES, reprint, reprint_cluster_sizes
from neardup.datasets.noise.sentences import (
    paragraph_spans,
    sentence_spans,
    split_paragraphs,
    split_sentences,
)
from neardup.datasets.noise.words import sentence_edits, typos, word_edits

__all__ = [
    "HOMOGLYPHS",
    "INVISIBLE_CHARS",
    "PROFILES",
    "abridge",
    "case_changes",
    "change_dateline",
    "drop_lead",
    "drop_middle_sentences",
    "homoglyphs",
    "insert_local_sentences",
    "invisible_chars",
    "ocr_noise",
    "pad",
    "paragraph_spans",
    "quoted_sentences",
    "replace_sentences",
    "reprint",
    "reprint_cluster_sizes",
    "sentence_edits",
    "sentence_spans",
    "split_paragraphs",
    "split_sentences",
    "typos",
    "word_edits",
]
