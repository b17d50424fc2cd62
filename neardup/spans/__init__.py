"""De-duplication inside documents: repeated spans (lines, paragraphs, sentence windows)
and repeated exact substrings of N or more tokens (Lee et al. 2022).

Each is two passes of pure per-batch and per-partition steps (see
:mod:`neardup.spans.span_dedup` and :mod:`neardup.spans.substring_dedup`); the
``neardup spans`` and ``neardup substrings`` commands run them in process, spilling to a
work directory beyond the memory limit.
"""

from neardup.spans.ranges import BatchRemoval, apply_ranges, merge_ranges
from neardup.spans.span_dedup import (
    KEEP_POLICIES,
    SpanDecisions,
    SpanDedupConfig,
    decide_partition,
    find_repeated_spans,
    remove_spans,
    span_records,
)
from neardup.spans.substring_dedup import (
    SubstringDecisions,
    chunk_repeats,
    cross_chunk_table,
    find_repeated_substrings,
    remove_substrings,
)
from neardup.spans.tokens import TokenTable, tokenize, window_hashes
from neardup.spans.units import SpanUnit, normalize_span, split_spans, split_units

__all__ = [
    "KEEP_POLICIES",
    "BatchRemoval",
    "SpanDecisions",
    "SpanDedupConfig",
    "SpanUnit",
    "SubstringDecisions",
    "TokenTable",
    "apply_ranges",
    "chunk_repeats",
    "cross_chunk_table",
    "decide_partition",
    "find_repeated_spans",
    "find_repeated_substrings",
    "merge_ranges",
    "normalize_span",
    "remove_spans",
    "remove_substrings",
    "span_records",
    "split_spans",
    "split_units",
    "tokenize",
    "window_hashes",
]
