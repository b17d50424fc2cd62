"""De-duplication methods, one module each, all with the :class:`Method` shape.

``METHODS`` maps each ``--method`` name to its class; :func:`make_method` builds one from
keyword parameters with a clear error for unknown names or parameters.
"""

from __future__ import annotations

from typing import Any

from neardup.methods.base import Method, Sketch, build_method, init_parameters
from neardup.methods.embedding import BiEncoderMethod, RETSimMethod, RETSimPartialMethod
from neardup.methods.exact import ExactHash
from neardup.methods.minhash import MinHash, MinHashLSH
from neardup.methods.ngram import NGramOverlap
from neardup.methods.rerank import RerankMethod
from neardup.methods.sanderson import Sanderson
from neardup.methods.simhash import SimHash
from neardup.methods.spotsigs import SpotSigs
from neardup.methods.static import StaticMethod
from neardup.methods.wminhash import WeightedMinHash

__all__ = [
    "METHODS",
    "NEURAL_METHODS",
    "BiEncoderMethod",
    "RETSimMethod",
    "RETSimPartialMethod",
    "ExactHash",
    "Method",
    "MinHash",
    "MinHashLSH",
    "NGramOverlap",
    "RerankMethod",
    "Sanderson",
    "SimHash",
    "SpotSigs",
    "StaticMethod",
    "WeightedMinHash",
    "Sketch",
    "make_method",
    "method_parameters",
]

METHODS: dict[str, type[Method]] = {
    ExactHash.name: ExactHash,
    NGramOverlap.name: NGramOverlap,
    MinHashLSH.name: MinHashLSH,
    SimHash.name: SimHash,
    Sanderson.name: Sanderson,
    SpotSigs.name: SpotSigs,
    WeightedMinHash.name: WeightedMinHash,
    RETSimMethod.name: RETSimMethod,
    RETSimPartialMethod.name: RETSimPartialMethod,
    BiEncoderMethod.name: BiEncoderMethod,
    StaticMethod.name: StaticMethod,
    RerankMethod.name: RerankMethod,
}
#: Methods that need the optional ``neural`` extra (onnxruntime + unisim, or
#: sentence-transformers + torch; static: tokenizers + safetensors; rerank: rapidfuzz and its candidate method's needs).
NEURAL_METHODS = frozenset(
    {RETSimMethod.name, RETSimPartialMethod.name, BiEncoderMethod.name, StaticMethod.name,
     RerankMethod.name}
)


def method_parameters(name: str) -> list[str]:
    """Names of the keyword parameters the method ``name`` accepts."""
    return init_parameters(_method_class(name))


def _method_class(name: str) -> type[Method]:
    if name not in METHODS:
        choices = ", ".join(repr(m) for m in METHODS)
        raise ValueError(f"make_method: parameter 'method' must be one of {choices}; got {name!r}.")
    return METHODS[name]


def make_method(name: str, **params: Any) -> Method:
    """Build the method called ``name`` (see ``METHODS``) with keyword ``params``.

    Unknown parameters raise a ValueError listing the accepted ones.
    """
    return build_method(_method_class(name), name, params)
