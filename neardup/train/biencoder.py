"""Contrastive fine-tuning of a sentence-transformers bi-encoder for de-duplication.

After Silcock et al. 2022 (sec. 4.1, A.1): an S-BERT model is trained so that copies of
one story embed close together and different stories (above all the hard negatives:
updates, same-topic stories, shared quotes, templates) embed apart, then documents are
linked when their cosine is above a threshold tuned on validation data. Three losses:

* ``"online-contrastive"`` (the paper's choice): labeled pairs from
  :func:`neardup.train.data.make_pairs` (positives plus negatives, about two thirds hard),
  sentence-transformers' ``OnlineContrastiveLoss`` with cosine distance and a margin
  (0.2): within each batch, only the hard pairs count -- positives farther apart than
  the closest negative are pulled together, negatives closer than the farthest positive
  are pushed to a cosine distance of at least ``margin``.
* ``"mnrl"``: multiple-negatives ranking loss (InfoNCE) on cluster batches
  (:func:`neardup.train.data.cluster_batches`, two documents per cluster): each
  document's copy must outrank every other document of the batch. With
  ``hard_negatives=True`` (the default) every (anchor, copy) pair also brings a document
  of one of the anchor's hard-negative clusters (a ``negative_of`` link or a mined
  lexical neighbour, :func:`neardup.train.data.hard_negative_links`), which the copy must
  outrank too: random in-batch negatives are easy, and the model must learn to tell an
  update or a template from a copy.
* ``"supcon"``: supervised contrastive loss (Khosla et al. 2020) on cluster batches of
  four documents per cluster: every same-cluster document is a positive of every other,
  the rest of the batch are negatives (temperature 0.1); with ``hard_negatives=True``,
  two documents of hard-negative clusters of the batch's clusters are added per
  cluster, up to half the batch (:func:`neardup.train.data.add_hard_negatives`).

Training runs on the one trainer (:mod:`neardup.train.trainer`, transformers'
``Trainer``): the model is a ``SentenceTransformer``, the loss one of
:mod:`neardup.train.losses`, the collator tokenizes a batch with ``model.tokenize``;
AdamW (weight decay 0.01 on all but biases and LayerNorm weights) with linear warm-up
then linear decay, no gradient clipping. The base model and, after every epoch, the
model embed a validation subset (whole days, at most ``max_validation_docs`` documents)
and the best cosine threshold's ARI is logged (:func:`neardup.train.validate.embedding_ari`);
the best epoch's model is kept, training stops after ``patience`` epochs without
improvement, and the best model is exported to int8 ONNX (:mod:`neardup.embed.onnx_encoder`),
the form neardup ships.

Output directory
    ``checkpoints/``   the trainer's resumable checkpoints (model, optimizer, scheduler,
    RNG states, position in the epoch); written every ten minutes and after each epoch.
    ``run.json``       the settings, the baseline score and, once finished, the epoch log.
    Re-running the same call resumes; a finished run returns its result without
    training again.
    ``best/``          the best epoch's model, a sentence-transformers directory.
    ``onnx/``          the best model as ONNX, int8 (``export="int8"``) or float32, with
    ``tokenizer.json``; ``BiEncoder(model=<that directory>)`` runs it.
    ``training.json``  the epoch log (:class:`neardup.train.loop.TrainingLog`) and the
    result of this function.

Example
-------
>>> from neardup.eval import load_labeled                      # doctest: +SKIP
>>> from neardup.train.data import load_training_corpus
>>> from neardup.train.biencoder import train_biencoder
>>> corpus, negative_of = load_training_corpus()
>>> validation = load_labeled("data/reuters-news/validation.jsonl.gz")
>>> result = train_biencoder(corpus, validation, output_dir="out/biencoder",
...                          negative_of=negative_of, epochs=2, max_pairs=3000, threads=1)
>>> result["best_validation_ari"], result["onnx_dir"]
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.eval.labeled import LabeledCorpus
from neardup.train.loop import cpu_seconds
from neardup.train.validate import whole_days

if TYPE_CHECKING:  # torch-dependent: imported when training
    from neardup.train.trainer import TrainingTask

__all__ = ["LOSSES", "train_biencoder"]

LOSSES = ("online-contrastive", "mnrl", "supcon")
_EXPORTS = ("int8", "fp32")
_CALLER = "train_biencoder"
#: Documents per cluster in a cluster batch: MNRL needs exactly an (anchor, copy) pair;
#: SupCon gains from more positives per anchor.
_PER_CLUSTER = {"mnrl": 2, "supcon": 4}
#: Mid-epoch checkpoints, so an interrupted epoch loses at most this much work.
_CHECKPOINT_SECONDS = 600.0
#: Texts per call when embedding the validation subset (no gradients: larger is fine).
_VALIDATION_BATCH = 64
_WEIGHT_DECAY = 0.01
#: The best model's validation-subset embeddings, kept in ``best/`` for the export check.
_REFERENCE = "validation_embeddings.npy"


def train_biencoder(
    train_corpus: LabeledCorpus,
    validation_corpus: LabeledCorpus,
    *,
    output_dir: str | os.PathLike,
    negative_of: np.ndarray | None = None,
    base: str | os.PathLike = "all-MiniLM-L6-v2",
    loss: str = "online-contrastive",
    hard_negatives: bool = True,
    margin: float = 0.2,
    epochs: int = 2,
    batch_size: int = 32,
    lr: float = 2e-5,
    warmup: float = 0.1,
    max_tokens: int = 128,
    max_pairs: int = 3000,
    seed: int = 0,
    patience: int = 2,
    max_validation_docs: int = 2000,
    export: str | None = "int8",
    threads: int | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Fine-tune a bi-encoder contrastively on labeled clusters; see the module docstring.

    Parameters
    ----------
    train_corpus : LabeledCorpus
        Training documents with their true clusters, e.g. from
        :func:`neardup.train.data.load_training_corpus`. Test-split documents are refused.
    validation_corpus : LabeledCorpus
        Documents for per-epoch model selection (the validation split; never test).
    output_dir : str or os.PathLike
        Where checkpoints, the best model, its ONNX export and the log go (see the module
        docstring). Re-running with the same directory and settings resumes.
    negative_of : ndarray or None, default None
        Per training document, the cluster it is a hard negative of (None entries
        elsewhere), from :func:`~neardup.train.data.load_training_corpus`. Without it
        hard negatives are mined only.
    base : str or os.PathLike, default "all-MiniLM-L6-v2"
        The model to start from: a shipped sentence-transformers model name (see
        :data:`neardup.embed.biencoder.SHIPPED_MODELS`) or a local sentence-transformers
        directory. Nothing is downloaded.
    loss : {"online-contrastive", "mnrl", "supcon"}, default "online-contrastive"
    hard_negatives : bool, default True
        MNRL and SupCon: put documents of hard-negative clusters (``negative_of`` links
        and mined lexical neighbours) into the batches, see the module docstring. The
        pair loss always has them (:func:`~neardup.train.data.make_pairs`).
    margin : float, default 0.2
        Online contrastive loss: cosine distance negatives are pushed beyond.
    epochs : int, default 2
        Epochs at most (early stopping may end sooner).
    batch_size : int, default 32
        Pairs per step (online contrastive) or documents per cluster batch (MNRL, SupCon).
    lr : float, default 2e-5
        Peak AdamW learning rate (weight decay 0.01).
    warmup : float in [0, 1], default 0.1
        Share of all steps (rounded up) over which the learning rate rises linearly from
        0; it then decays linearly to 0 at the last step. (The paper warms up over all steps of a
        16-epoch run; a short run needs the decay.)
    max_tokens : int, default 128
        Tokens read per document, special tokens included, in training and validation.
        Training cost grows about linearly with it.
    max_pairs : int, default 3000
        Pairs per epoch at most (a seeded random subset of the pairs), or, for the cluster
        losses, documents per epoch at most ``2 * max_pairs`` (the same model inputs).
    seed : int, default 0
        Seeds pair sampling, batch order, dropout and the validation subset.
    patience : int, default 2
        Stop after this many epochs without a better validation ARI.
    max_validation_docs : int, default 2000
        Validation documents embedded per epoch at most: whole days (by the ``date``
        field; whole clusters when there are no dates), taken in date order while they fit.
    export : {"int8", "fp32"} or None, default "int8"
        Export the best model to ONNX in ``output_dir/onnx`` (dynamically quantized to
        int8, or float32), and measure the export against the torch model on the
        validation subset; None skips it.
    threads : int or None, default None
        Torch intra-op threads while training (restored afterwards); None keeps torch's
        setting. Use 1 on a machine shared with other jobs.
    progress : bool or None, default None
        Progress bar over the steps, with the running loss; None: on when stderr is an
        interactive terminal.

    Returns
    -------
    dict
        The log (:meth:`TrainingLog.to_dict`: config, per-epoch ``train_loss`` (the mean
        of the epoch's step losses),
        ``validation_ari``, ``threshold``, ``seconds``, ``cpu_seconds``; ``best_epoch``,
        ``best_validation_ari``, ``best_threshold``, total ``cpu_seconds``,
        ``resumed_at``: the 1-based epochs a call resumed in) plus ``baseline`` (the base
        model's validation ``ari`` and ``threshold``), ``loss_check`` (the mean loss of
        the first four batches under the ``base`` and the ``best`` model),
        ``model_dir`` (the best model),
        ``onnx_dir`` (or None),
        ``export_check`` (cosine agreement and validation ARI of the export, or None),
        ``training_data`` (pair or batch counts), ``validation_docs``, ``stopped_early``,
        and this call's ``wall_seconds`` and ``call_cpu_seconds`` (data preparation,
        training, validation and export).

    Raises
    ------
    ValueError
        A parameter is invalid, a corpus holds test-split documents, or ``output_dir``
        holds a checkpoint of a run with other settings.
    ImportError
        torch or sentence-transformers is missing (the ``neural`` extra); onnx or
        onnxruntime for ``export`` (the ``train`` extra).
    """
    config = _check_params(
        train_corpus, validation_corpus, negative_of=negative_of, base=base, loss=loss,
        hard_negatives=hard_negatives, margin=margin, epochs=epochs, batch_size=batch_size, lr=lr, warmup=warmup,
        max_tokens=max_tokens, max_pairs=max_pairs, seed=seed, patience=patience,
        max_validation_docs=max_validation_docs, export=export, threads=threads,
        progress=progress,
    )
    out = Path(output_dir)
    try:
        import torch
        from sentence_transformers import SentenceTransformer

        from neardup.train.trainer import (
            TrainSettings,
            fit,
            torch_threads,
        )
    except ImportError as err:
        raise ImportError(
            "train_biencoder needs torch and sentence-transformers, part of neardup's "
            "optional 'neural' extra. Install it with: pip install 'neardup[neural]'"
        ) from err
    base_path = _base_path(base)
    config["data"] = {
        "train": _fingerprint(train_corpus),
        "validation": _fingerprint(validation_corpus),
        "negative_of": None if negative_of is None else int(sum(v is not None for v in negative_of)),
    }
    started, started_cpu = time.time(), cpu_seconds()
    validation = validation_corpus.select(whole_days(validation_corpus, max_validation_docs))
    settings = TrainSettings(
        epochs=epochs, lr=lr, seed=seed, patience=patience, warmup=warmup, schedule="linear",
        weight_decay=_WEIGHT_DECAY, max_grad_norm=0.0,  # no clipping, as before the trainer
        save_seconds=_CHECKPOINT_SECONDS, baseline=True, progress=progress)
    plans: list[_TrainingData] = []

    def build() -> TrainingTask:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = SentenceTransformer(str(base_path), device=device, local_files_only=True)
        model.max_seq_length = max_tokens
        plan = _TrainingData(train_corpus, negative_of, config)
        plans.append(plan)
        return _task(model, plan, validation, config)

    with torch_threads(threads):
        fitted = fit(build, settings, output_dir=out, config=_comparable(config),
                     caller=_CALLER, resumable=frozenset({"threads", "export", "progress"}))
        if fitted.model is not None:
            _save_best(out, fitted.model, validation)
        result = fitted.log.to_dict()
        result.update(
            model_dir=str(out / "best"),
            # A finished run builds no data again: its counts are in the earlier log.
            training_data=plans[0].counts if plans else _previous(out, "training_data"),
            validation_docs=len(validation),
            stopped_early=fitted.stopped_early,
            baseline=fitted.baseline,
            loss_check=fitted.loss_check,
        )
        onnx_dir, check = None, None
        if export is not None:
            onnx_dir, check = _export(out, validation, export, max_tokens, threads)
        result.update(onnx_dir=None if onnx_dir is None else str(onnx_dir), export_check=check)
    result["wall_seconds"] = round(time.time() - started, 1)
    # This call only (a resumed run's earlier calls are in the epoch log's cpu_seconds).
    result["call_cpu_seconds"] = round(cpu_seconds() - started_cpu, 1)
    (out / "training.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result


# -- parameters ------------------------------------------------------------------------


def _check_params(
    train_corpus: Any, validation_corpus: Any, **params: Any
) -> dict[str, Any]:
    """Validate every parameter (one message shape, see neardup.errors); the config."""
    for name, corpus in (("train_corpus", train_corpus), ("validation_corpus", validation_corpus)):
        if not isinstance(corpus, LabeledCorpus):
            raise ValueError(
                f"{_CALLER}: parameter '{name}' must be a LabeledCorpus (neardup.eval."
                f"load_labeled or neardup.train.data.load_training_corpus); got "
                f"{type(corpus).__name__}."
            )
        if corpus.splits is not None and np.any(corpus.splits == "test"):
            raise ValueError(
                f"{_CALLER}: parameter '{name}' must hold no test-split documents; got "
                f"{int(np.sum(corpus.splits == 'test'))}. Train on the train split, select "
                "on validation, and report on test only at the end."
            )
        if len(corpus) < 2 or len(set(corpus.clusters.tolist())) == len(corpus):
            raise ValueError(
                f"{_CALLER}: parameter '{name}' must hold at least one cluster of two or "
                f"more documents; got {len(corpus)} documents, all in different clusters."
            )
    negative_of = params["negative_of"]
    if negative_of is not None and (
        not hasattr(negative_of, "__len__") or len(negative_of) != len(train_corpus)
    ):
        raise ValueError(
            f"{_CALLER}: parameter 'negative_of' must be None or hold one entry per training "
            f"document ({len(train_corpus)}); got {type(negative_of).__name__}"
            + (f" of length {len(negative_of)}." if hasattr(negative_of, "__len__") else ".")
        )
    base = params["base"]
    if not isinstance(base, (str, os.PathLike)):
        raise ValueError(
            f"{_CALLER}: parameter 'base' must be a shipped model name or a "
            f"sentence-transformers directory; got {base!r}."
        )
    loss = check_choice(_CALLER, "loss", params["loss"], LOSSES)
    batch_low = 2 if loss == "online-contrastive" else 2 * _PER_CLUSTER[loss]
    export = params["export"]
    if export is not None:
        check_choice(_CALLER, "export", export, _EXPORTS, hint="Or None for no export.")
    threads = params["threads"]
    if threads is not None:
        check_int(_CALLER, "threads", threads, low=1, hint="Use None for torch's default.")
    if params["progress"] not in (None, True, False):
        raise ValueError(f"{_CALLER}: parameter 'progress' must be True, False or None; "
                         f"got {params['progress']!r}.")
    return {
        "base": os.fspath(base),
        "loss": loss,
        "hard_negatives": _check_bool("hard_negatives", params["hard_negatives"]),
        "margin": check_float(_CALLER, "margin", params["margin"], low=1e-6, high=2.0),
        "epochs": check_int(_CALLER, "epochs", params["epochs"], low=1),
        "batch_size": check_int(_CALLER, "batch_size", params["batch_size"], low=batch_low,
                                hint=None if loss == "online-contrastive" else
                                f"A cluster batch holds {_PER_CLUSTER[loss]} documents per "
                                "cluster and needs two clusters at least."),
        "lr": check_float(_CALLER, "lr", params["lr"], low=1e-9, high=1.0),
        "warmup": check_float(_CALLER, "warmup", params["warmup"], low=0.0, high=1.0),
        "max_tokens": check_int(_CALLER, "max_tokens", params["max_tokens"], low=8, high=512),
        "max_pairs": check_int(_CALLER, "max_pairs", params["max_pairs"], low=2),
        "seed": check_int(_CALLER, "seed", params["seed"], low=0),
        "patience": check_int(_CALLER, "patience", params["patience"], low=1),
        "max_validation_docs": check_int(_CALLER, "max_validation_docs",
                                         params["max_validation_docs"], low=2),
        "export": export,
        "threads": threads,
    }


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{_CALLER}: parameter '{name}' must be True or False; got {value!r}.")
    return bool(value)


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    """The settings a checkpoint must share to be resumed (threads and export may change)."""
    return {k: v for k, v in config.items() if k not in ("threads", "export")}


def _fingerprint(corpus: LabeledCorpus) -> dict[str, Any]:
    """Size and a hash of ids, clusters and texts: resuming on other data is refused."""
    digest = hashlib.sha256()
    for doc_id, cluster, text in zip(corpus.ids, corpus.clusters, corpus.texts):
        digest.update(f"{doc_id}\0{cluster}\0".encode("utf-8", "surrogatepass"))
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\1")
    return {"docs": len(corpus), "sha256": digest.hexdigest()[:16]}


def _base_path(base: str | os.PathLike) -> Path:
    from neardup.embed.biencoder import SHIPPED_MODELS, shipped_model_path

    name = os.fspath(base)
    try:
        return shipped_model_path(name)
    except KeyError:  # not a shipped name (nor an alias of one): a directory?
        pass
    path = Path(name)
    if (path / "modules.json").is_file() or (path / "config.json").is_file():
        return path
    raise ValueError(
        f"{_CALLER}: parameter 'base' must be a shipped model name "
        f"({', '.join(map(repr, SHIPPED_MODELS))}) or a sentence-transformers directory "
        f"(with modules.json or config.json); got {name!r}. ONNX models cannot be trained."
    )


# -- data ----------------------------------------------------------------------------------


class _TrainingData:
    """The epoch's batches: pair batches (online contrastive) or cluster batches."""

    def __init__(self, corpus: LabeledCorpus, negative_of: Any, config: dict[str, Any]) -> None:
        from neardup.train.data import make_pairs

        self.corpus = corpus
        self.config = config
        self.loss = config["loss"]
        seed = config["seed"]
        if self.loss == "online-contrastive":
            pairs = make_pairs(corpus, negative_of=negative_of, seed=seed)
            if len(pairs) > config["max_pairs"]:
                rng = np.random.default_rng([seed, 1])
                pairs = pairs.select(np.sort(rng.choice(len(pairs), config["max_pairs"], replace=False)))
            if not np.any(pairs.label == 1) or not np.any(pairs.label == 0):
                raise ValueError(
                    f"{_CALLER}: parameter 'train_corpus' must yield both positive and "
                    f"negative pairs; got {pairs.counts()}."
                )
            self.pairs = pairs
            self.counts = {"pairs": len(pairs), **pairs.counts()}
            self.steps = -(-len(pairs) // config["batch_size"])
        else:
            from neardup.train.data import hard_negative_links, mine_hard_negatives

            self.codes = np.unique(corpus.clusters.astype(str), return_inverse=True)[1]
            self.links: dict[int, np.ndarray] = {}
            if config["hard_negatives"]:
                mined = mine_hard_negatives(corpus.texts, corpus.clusters.astype(str), seed=seed)
                self.links = hard_negative_links(corpus.clusters, negative_of, mined_pairs=mined)
            first = self.batches(0)
            self.counts = {"batches": len(first), "docs": int(sum(len(b) for b in first))}
            self.steps = len(first)

    def batches(self, epoch: int) -> list[np.ndarray]:
        """Positions (pairs or documents) of each step of ``epoch``: seeded by the epoch
        alone, so a resumed epoch sees the same batches."""
        size = self.config["batch_size"]
        seed = self.config["seed"]
        if self.loss == "online-contrastive":
            order = np.random.default_rng([seed, 2, epoch]).permutation(len(self.pairs))
            return [order[i : i + size] for i in range(0, len(order), size)]
        from neardup.train.data import add_hard_negatives, cluster_batches

        # Every epoch draws other documents of each cluster (cluster_batches' own seed).
        batch_seed = seed * 1000 + epoch
        batches = cluster_batches(
            self.corpus.clusters, batch_size=size, per_cluster=_PER_CLUSTER[self.loss],
            seed=batch_seed,
        )
        if self.loss == "supcon":
            batches = add_hard_negatives(batches, self.corpus.clusters, self.links, seed=batch_seed)
        rng = np.random.default_rng([seed, 3, epoch])
        # Documents per (anchor, copy) pair: the budget counts model inputs.
        budget, kept = 2 * self.config["max_pairs"], []
        for batch in batches:
            if self.loss == "mnrl":
                batch = _anchor_positive(batch, self.codes)
                if self.links and len(batch) >= 2:
                    batch = self._with_negatives(batch, rng)
            if batch is None or len(batch) < 2:
                continue
            if budget < len(batch):
                break
            kept.append(batch)
            budget -= len(batch)
        return kept


    def _with_negatives(self, batch: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
        """[anchors, copies] -> [anchors, copies, negatives]: per anchor, a document of
        one of its hard-negative clusters, or of a random other cluster when it has none
        outside the batch (never of a cluster of the batch: that would be a copy of
        another anchor). None when every cluster is in the batch."""
        if not hasattr(self, "_members"):
            order = np.argsort(self.codes, kind="stable")
            self._members = (order, np.searchsorted(self.codes[order], np.arange(int(self.codes.max()) + 2)))
        order, bounds = self._members
        k = len(batch) // 2
        present = set(self.codes[batch].tolist())
        outside = np.setdiff1d(np.arange(len(bounds) - 1), np.fromiter(present, np.int64))
        if len(outside) == 0:
            return None
        negatives = []
        for anchor in batch[:k].tolist():
            options = [c for c in self.links.get(int(self.codes[anchor]), ()).tolist() if c not in present]
            if options:
                c = options[int(rng.integers(len(options)))]
            else:
                c = int(outside[int(rng.integers(len(outside)))])
            members = order[bounds[c] : bounds[c + 1]]
            negatives.append(int(members[int(rng.integers(len(members)))]))
        return np.concatenate([batch, np.asarray(negatives, np.int64)])


def _anchor_positive(batch: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The batch as [anchors..., positives...]: the first two documents of each cluster
    with two in the batch (singletons dropped: MNRL has no use for them)."""
    first: dict[int, int] = {}
    anchors, positives = [], []
    for doc in batch.tolist():
        code = int(codes[doc])
        if code not in first:
            first[code] = doc
        elif first[code] >= 0:
            anchors.append(first[code])
            positives.append(doc)
            first[code] = -1
    return np.asarray(anchors + positives, np.int64)


# -- the task: model + loss + collator --------------------------------------------------


def _task(model: Any, plan: _TrainingData, validation: LabeledCorpus,
          config: dict[str, Any]) -> TrainingTask:
    """The bi-encoder as a :class:`~neardup.train.trainer.TrainingTask`."""
    import torch

    from neardup.train.losses import SentenceLoss, SupCon
    from neardup.train.trainer import AriEvaluator, TrainingTask
    loss_name = config["loss"]
    if loss_name == "supcon":
        loss_fn: Any = SupCon()
    else:
        loss_fn = SentenceLoss(loss_name, model, margin=config["margin"])
    columns = 2 if loss_name == "online-contrastive" or not plan.links else 3
    prepare = getattr(model, "preprocess", None) or model.tokenize

    def collate(batch: list[int]) -> dict[str, Any]:
        idx = np.asarray(batch, np.int64)
        if loss_name == "online-contrastive":
            # One forward for both sides of the pairs: one padding, one call.
            texts = [plan.pairs.text_a[i] for i in idx] + [plan.pairs.text_b[i] for i in idx]
            targets = torch.as_tensor(plan.pairs.label[idx])
        else:
            texts = [plan.corpus.texts[i] for i in idx]
            targets = torch.as_tensor(plan.codes[idx])
        return {"features": dict(prepare(texts)), "targets": targets}

    def loss(model: Any, inputs: dict[str, Any]) -> Any:
        embeddings = model(inputs["features"])["sentence_embedding"]
        targets = inputs["targets"]
        if loss_name == "supcon":
            return loss_fn(embeddings, targets)
        if loss_name == "online-contrastive":
            half = embeddings.shape[0] // 2
            return loss_fn([embeddings[:half], embeddings[half:]], targets)
        # MNRL: [anchors, copies] or [anchors, copies, hard negatives].
        k = embeddings.shape[0] // columns
        return loss_fn([embeddings[i * k : (i + 1) * k] for i in range(columns)], targets[:k])

    evaluator = AriEvaluator(validation.clusters, embed=lambda m: _embed(m, validation.texts))
    return TrainingTask(model=model, loss=loss, collate=collate, batches=plan.batches,
                        evaluator=evaluator)


def _previous(out: Path, key: str) -> Any:
    """``key`` of the ``training.json`` an earlier call wrote, or None."""
    path = out / "training.json"
    return json.loads(path.read_text()).get(key) if path.is_file() else None


def _save_best(out: Path, model: Any, validation: LabeledCorpus) -> None:
    """Replace ``best/`` with the best model (written beside it, then swapped)."""
    best = out / "best"
    tmp = out / "best.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save(str(tmp))
    # The export check compares against these instead of embedding the subset again.
    np.save(tmp / _REFERENCE, _embed(model, validation.texts))
    old = out / "best.old"
    shutil.rmtree(old, ignore_errors=True)
    if best.exists():
        best.rename(old)
    tmp.rename(best)
    shutil.rmtree(old, ignore_errors=True)


def _embed(model: Any, texts: list[str]) -> np.ndarray:
    """Unit-norm embeddings with dropout off; the model is left in training mode."""
    import torch

    model.eval()
    try:
        with torch.no_grad():
            emb = model.encode(
                texts, batch_size=_VALIDATION_BATCH, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            )
    finally:
        model.train()
    return np.asarray(emb, np.float32)


# -- export -------------------------------------------------------------------------------------


def _export(
    out: Path, validation: LabeledCorpus, export: str, max_tokens: int, threads: int | None
) -> tuple[Path, dict[str, Any]]:
    """Export ``out/best`` to ONNX in ``out/onnx`` and compare it with the torch model on
    the validation subset (mean and minimum embedding cosine, validation ARI of both)."""
    from sentence_transformers import SentenceTransformer

    from neardup.embed.onnx_encoder import OnnxTransformer, export_transformer
    from neardup.train.validate import embedding_ari

    best = out / "best"
    model = SentenceTransformer(str(best), device="cpu", local_files_only=True)
    model.max_seq_length = max_tokens
    onnx_dir = out / "onnx"
    export_transformer(
        model[0].auto_model, model.tokenizer, onnx_dir, task="embedding",
        quantize=export == "int8", max_tokens=max_tokens,
    )
    reference_path = best / _REFERENCE
    reference = np.load(reference_path) if reference_path.is_file() else None
    if reference is None or len(reference) != len(validation):
        reference = _embed(model, validation.texts)
    runner = OnnxTransformer(onnx_dir, threads=threads)
    exported = runner.embed(validation.texts, max_tokens=max_tokens)
    cosine = np.sum(reference * exported, axis=1)
    torch_score = embedding_ari(reference, validation.clusters)
    onnx_score = embedding_ari(exported, validation.clusters)
    check = {
        "format": export,
        "docs": len(validation),
        "cosine_mean": round(float(cosine.mean()), 6),
        "cosine_min": round(float(cosine.min()), 6),
        "torch_validation_ari": round(float(torch_score.ari), 6),
        "torch_threshold": torch_score.threshold,
        "onnx_validation_ari": round(float(onnx_score.ari), 6),
        "onnx_threshold": onnx_score.threshold,
        "size_bytes": int((onnx_dir / "model.onnx").stat().st_size),
    }
    return onnx_dir, check
