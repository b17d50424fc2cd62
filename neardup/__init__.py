"""neardup: find and remove near-duplicate documents in large, noisy text corpora."""

from neardup.api import dedup
from neardup.errors import InputError, NeardupError
from neardup.graph import Pairs
from neardup.index import Index
from neardup.methods import METHODS, ExactHash, MinHash, MinHashLSH, NGramOverlap, SimHash
from neardup.pipeline import ClusterConfig, Result
from neardup.text import NormalizeConfig, ShingleConfig

__version__ = "0.1.0"

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
