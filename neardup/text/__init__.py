"""Normalize, tokenize and shingle text; 64-bit hashing kernels."""

from neardup.text.normalize import NormalizeConfig, normalize_batch, normalize_codes, normalize_text
from neardup.text.shingle import ShingleConfig, ShingleSets, hash_shingles, shingle_codes

__all__ = [
    "NormalizeConfig",
    "ShingleConfig",
    "ShingleSets",
    "hash_shingles",
    "normalize_batch",
    "normalize_codes",
    "normalize_text",
    "shingle_codes",
]
