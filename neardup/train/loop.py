"""The epoch log every trainer writes, seeding and CPU time.

:func:`neardup.train.trainer.fit` turns the transformers trainer's log history into a
:class:`TrainingLog` of :class:`EpochRecord` (train loss, validation ARI and threshold,
time per epoch), saved as ``training.json`` beside the model; the verifier, trained in
one scikit-learn fit, writes one record. Checkpoints, resuming and early stopping are the
transformers trainer's (:mod:`neardup.train.trainer`).
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from neardup.io.writers import atomic_path

__all__ = [
    "EpochRecord",
    "TrainingLog",
    "cpu_seconds",
    "seed_everything",
]


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (when it is loaded) so runs repeat."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    # Code that uses torch has imported it by now; importing it here only to seed it
    # would cost a run that never uses it (the verifier's trainer) seconds of start-up.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def cpu_seconds() -> float:
    """CPU time (user + system) used by this process so far, in seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class EpochRecord:
    epoch: int
    train_loss: float
    validation_ari: float
    threshold: float
    seconds: float
    cpu_seconds: float


@dataclass
class TrainingLog:
    """What happened, epoch by epoch; saved as ``training.json`` beside the model."""

    config: dict[str, Any]
    epochs: list[EpochRecord] = field(default_factory=list)
    resumed_at: list[int] = field(default_factory=list)
    started: float = field(default_factory=time.time)

    @property
    def best(self) -> EpochRecord | None:
        if not self.epochs:
            return None
        return max(self.epochs, key=lambda r: (r.validation_ari, -r.epoch))

    def add(self, record: EpochRecord) -> bool:
        """Append an epoch; True when it is the best so far."""
        self.epochs.append(record)
        return self.best is record

    def should_stop(self, patience: int) -> bool:
        """True after ``patience`` epochs in a row without a better validation ARI."""
        best = self.best
        return best is not None and self.epochs[-1].epoch - best.epoch >= patience

    def total_cpu_seconds(self) -> float:
        return float(sum(r.cpu_seconds for r in self.epochs))

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        return {
            "config": self.config,
            "epochs": [asdict(r) for r in self.epochs],
            "best_epoch": None if best is None else best.epoch,
            "best_validation_ari": None if best is None else best.validation_ari,
            "best_threshold": None if best is None else best.threshold,
            "cpu_seconds": round(self.total_cpu_seconds(), 1),
            "resumed_at": self.resumed_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingLog:
        log = cls(config=data["config"], resumed_at=list(data.get("resumed_at", [])))
        log.epochs = [EpochRecord(**r) for r in data.get("epochs", [])]
        return log

    def save(self, path: str | os.PathLike) -> None:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
