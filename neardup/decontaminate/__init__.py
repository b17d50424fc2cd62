"""Decontamination: training documents that contain an evaluation item.

:func:`find_contamination` streams a training corpus against evaluation sets held in
memory, by word n-gram overlap (:mod:`neardup.decontaminate.ngrams`, the 13-gram rule)
and by near-duplicate matching through the persistent index
(:mod:`neardup.decontaminate.near`). ``neardup decontaminate`` is its command;
``neardup leakage`` (:mod:`neardup.leakage`) is its report-only mode over two corpora
with any dedup method.
"""

from neardup.decontaminate.run import (
    ContaminationResult,
    DecontaminationConfig,
    EvalSets,
    find_contamination,
)

__all__ = ["ContaminationResult", "DecontaminationConfig", "EvalSets", "find_contamination"]
