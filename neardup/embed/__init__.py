"""Neural text embeddings for near-duplicate detection.

:class:`RETSim` (Zhang et al. 2023) needs the optional ``neural`` extra
(``pip install 'neardup[neural]'``); importing this package does not import it.
"""

from neardup.embed.base import Embedder
from neardup.embed.binarizer import Chunks, binarize, binarize_codes, chunk_texts
from neardup.embed.retsim import RETSim, default_model_path, partial_similarity

__all__ = [
    "Chunks",
    "Embedder",
    "RETSim",
    "binarize",
    "binarize_codes",
    "chunk_texts",
    "default_model_path",
    "partial_similarity",
]
