"""Neural text embeddings for near-duplicate detection.

:class:`RETSim` (Zhang et al. 2023) and :class:`BiEncoder` need the optional ``neural`` extra
(``pip install 'neardup[neural]'``); importing this package does not import it.
"""

from neardup.embed.base import Embedder
from neardup.embed.biencoder import BiEncoder
from neardup.embed.binarizer import Chunks, binarize, binarize_codes, chunk_texts
from neardup.embed.retsim import RETSim, default_model_path, partial_similarity

__all__ = [
    "BiEncoder",
    "Chunks",
    "Embedder",
    "RETSim",
    "binarize",
    "binarize_codes",
    "chunk_texts",
    "default_model_path",
    "partial_similarity",
]
