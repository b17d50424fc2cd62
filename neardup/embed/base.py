"""The shape every text encoder shares.

An encoder is an estimator-like object, like a :class:`~neardup.methods.Method`: the
constructor stores keyword-only parameters under their own names and does no work (no model
is loaded, no optional dependency is imported); :meth:`Embedder.get_params` returns them.
The model is loaded on first use, once per instance, and dropped when the instance is
pickled (a process pool or a Ray worker reloads it on its side).

:meth:`Embedder.encode` maps a batch of raw texts to one row per text, in input order,
float32 and L2-normalized, so that a dot product is a cosine similarity.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from neardup._params import ParamsMixin

__all__ = ["Embedder"]


class Embedder(ParamsMixin, ABC):
    """Base class of neural text encoders.

    Subclasses set ``name``, accept only keyword arguments in ``__init__`` (calling
    ``super().__init__()`` first) and store each under its own name, validate them there,
    and implement :attr:`dim`, :meth:`_load` (build the model; called at most once, under a
    lock, on first access to :attr:`model`) and :meth:`encode`.
    """

    name: ClassVar[str]

    def __init__(self) -> None:
        self._model: Any = None
        self._model_lock = threading.Lock()

    # -- model life cycle ---------------------------------------------------------------

    @property
    def model(self) -> Any:
        """The loaded model; loads it on first access (thread-safe)."""
        if self._model is None:
            with self._model_lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    @abstractmethod
    def _load(self) -> Any:
        """Build and return the model (import optional dependencies here)."""

    def __getstate__(self) -> dict[str, Any]:
        # Inference sessions and locks do not pickle; the receiving process reloads lazily.
        state = self.__dict__.copy()
        state["_model"] = None
        state["_model_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._model_lock = threading.Lock()

    # -- encoding -----------------------------------------------------------------------

    @property
    @abstractmethod
    def dim(self) -> int:
        """Width of an embedding."""

    @abstractmethod
    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool | None = None,
    ) -> np.ndarray:
        """Embed ``texts``.

        Parameters
        ----------
        texts : sequence of str
            Raw texts; any length, any script, empty allowed.
        batch_size : int or None, default None
            Model batch size; None uses the instance's default.
        progress : bool or None, default None
            Show a progress bar; None: when stderr is an interactive terminal.

        Returns
        -------
        ndarray of float32, shape (len(texts), dim)
            Row ``i`` embeds ``texts[i]``; rows have unit L2 norm.
        """
