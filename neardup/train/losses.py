"""Every training loss of :mod:`neardup.train`, in one place.

Losses are kept apart from models and from the trainer (as sentence-transformers keeps
them): each is a ``torch.nn.Module`` called on one batch's model *outputs* (embeddings
or logits) and labels, so :mod:`neardup.train.trainer` runs any of them the same way.
None is written here from scratch: they come from sentence-transformers,
pytorch-metric-learning and torch, set to the values the model cards document.

=====================  =========================================  ========================
name                   what                                       used by
=====================  =========================================  ========================
``online-contrastive`` sentence-transformers OnlineContrastiveLoss   bi-encoder (default)
                       (cosine distance, margin 0.2): hard pairs
                       of each batch only (Silcock et al. 2022)
``mnrl``               sentence-transformers                        bi-encoder
                       MultipleNegativesRankingLoss (InfoNCE):
                       columns [anchors, copies(, negatives)]
``supcon``             pytorch-metric-learning SupConLoss            bi-encoder
                       (Khosla et al. 2020), temperature 0.1
``multi-similarity``   pytorch-metric-learning MultiSimilarityLoss   RETSim
                       (alpha 4, beta 40, base 0.5) on pairs of a
                       MultiSimilarityMiner (epsilon 0.1), RETSim's
                       own training values (Zhang et al. 2023)
``bce``                torch BCEWithLogitsLoss on one logit per      cross-encoder
                       pair
=====================  =========================================  ========================
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = [
    "MINER_EPSILON",
    "MS_ALPHA",
    "MS_BASE",
    "MS_BETA",
    "SUPCON_TEMPERATURE",
    "MultiSimilarity",
    "PairBCE",
    "SentenceLoss",
    "SupCon",
]

#: Multi-similarity loss and miner parameters of RETSim's training (paper, sec. 3.2).
MS_ALPHA = 4.0
MS_BETA = 40.0
MS_BASE = 0.5
MINER_EPSILON = 0.1
#: SupCon temperature (Khosla et al. use 0.1 for their best runs).
SUPCON_TEMPERATURE = 0.1


class SupCon(torch.nn.Module):
    """Supervised contrastive loss over one batch: ``forward(embeddings, labels)``.

    Every same-label document is a positive of every other, the rest of the batch are
    negatives (pytorch-metric-learning normalises the embeddings: cosine similarity).
    """

    def __init__(self, temperature: float = SUPCON_TEMPERATURE) -> None:
        super().__init__()
        from pytorch_metric_learning.losses import SupConLoss

        self.loss = SupConLoss(temperature=temperature)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(embeddings, labels)


class MultiSimilarity(torch.nn.Module):
    """Multi-similarity loss on the pairs its miner keeps: ``forward(embeddings, labels)``.

    A batch where the miner keeps no pair gives a zero loss with a zero gradient (the
    trainer still takes the optimizer step, so AdamW's momentum moves the weights a
    little; the loop before the trainer skipped such steps; they are rare).
    """

    def __init__(self, alpha: float = MS_ALPHA, beta: float = MS_BETA, base: float = MS_BASE,
                 epsilon: float = MINER_EPSILON) -> None:
        super().__init__()
        from pytorch_metric_learning import losses, miners

        self.loss = losses.MultiSimilarityLoss(alpha=alpha, beta=beta, base=base)
        self.miner = miners.MultiSimilarityMiner(epsilon=epsilon)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        loss = self.loss(embeddings, labels, self.miner(embeddings, labels))
        # No mined pair: pytorch-metric-learning returns a constant; keep the graph so
        # backward() works (with a zero gradient).
        return loss if loss.requires_grad else embeddings.sum() * 0.0

    def describe(self) -> dict[str, Any]:
        return {"loss": {"name": "MultiSimilarityLoss", "alpha": self.loss.alpha,
                         "beta": self.loss.beta, "base": self.loss.base},
                "miner": {"name": "MultiSimilarityMiner", "epsilon": self.miner.epsilon}}


class SentenceLoss(torch.nn.Module):
    """A sentence-transformers loss on precomputed embeddings:
    ``forward(columns, labels)`` with ``columns`` a list of (batch, dim) tensors.

    ``"online-contrastive"``: columns [a, b], labels 1/0 per pair; ``"mnrl"``: columns
    [anchors, copies] or [anchors, copies, negatives] (labels unused). The
    sentence-transformers loss objects hold the model, as their API requires, but only
    their ``compute_loss_from_embeddings`` is used: one forward embeds every column.
    """

    def __init__(self, name: str, model: Any, *, margin: float = 0.2) -> None:
        super().__init__()
        from sentence_transformers.sentence_transformer import losses

        if name == "online-contrastive":
            self.loss = losses.OnlineContrastiveLoss(
                model, distance_metric=losses.SiameseDistanceMetric.COSINE_DISTANCE,
                margin=margin)
        elif name == "mnrl":
            self.loss = losses.MultipleNegativesRankingLoss(model)
        else:
            raise ValueError(f"SentenceLoss: parameter 'name' must be 'online-contrastive' "
                             f"or 'mnrl'; got {name!r}.")
        self.name = name

    def forward(self, columns: list[torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
        return self.loss.compute_loss_from_embeddings(columns, labels)


class PairBCE(torch.nn.Module):
    """Binary cross-entropy on one logit per pair: ``forward(logits, labels)``."""

    def __init__(self) -> None:
        super().__init__()
        self.loss = torch.nn.BCEWithLogitsLoss()

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(logits.reshape(-1), labels.float())
