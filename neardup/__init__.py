"""neardup: find and remove near-duplicate documents in large, noisy text corpora."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# numba's parallel kernels run on OpenMP threads, which by default spin between parallel
# regions waiting for more work. rerank calls short kernels thousands of times, and the
# spinning took almost half of its CPU, with no gain in wall time
# (docs/decisions/0044-openmp-threads-sleep-when-idle.md). Threads that sleep when idle
# cost nothing; a value already set wins. Read when the OpenMP runtime loads, so it is
# set before numba (or torch) is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from neardup._version import __version__ as __version__
from neardup.errors import InputError, NeardupError

# Imported on first access (PEP 562), so that ``import neardup.cli`` or ``neardup.io``
# does not load numba, scipy and every method.
_LAZY = {
    "dedup": "neardup.api",
    "Pairs": "neardup.graph",
    "Index": "neardup.index",
    "METHODS": "neardup.methods",
    "ExactHash": "neardup.methods",
    "MinHash": "neardup.methods",
    "MinHashLSH": "neardup.methods",
    "NGramOverlap": "neardup.methods",
    "SimHash": "neardup.methods",
    "ClusterConfig": "neardup.pipeline",
    "Result": "neardup.pipeline",
    "NormalizeConfig": "neardup.text",
    "ShingleConfig": "neardup.text",
}

if TYPE_CHECKING:
    from neardup.api import dedup
    from neardup.graph import Pairs
    from neardup.index import Index
    from neardup.methods import METHODS, ExactHash, MinHash, MinHashLSH, NGramOverlap, SimHash
    from neardup.pipeline import ClusterConfig, Result
    from neardup.text import NormalizeConfig, ShingleConfig


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'neardup' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "METHODS",
    "ClusterConfig",
    "ExactHash",
    "Index",
    "InputError",
    "MinHash",
    "MinHashLSH",
    "NGramOverlap",
    "NeardupError",
    "NormalizeConfig",
    "Pairs",
    "Result",
    "ShingleConfig",
    "SimHash",
    "dedup",
]
