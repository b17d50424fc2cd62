"""Normalize, tokenize and shingle text; 64-bit hashing kernels."""

from neardup.text.normalize import NormalizeConfig, normalize_batch, normalize_text
from neardup.text.shingle import ShingleConfig, ShingleSets, hash_shingles

__all__ = [
    "NormalizeConfig",
    "ShingleConfig",
    "ShingleSets",
    "hash_shingles",
    "normalize_batch",
    "normalize_text",
]
