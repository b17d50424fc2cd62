"""Fine-tune a cross-encoder pair classifier for ``--method rerank``.

Silcock et al. (2022, sec. 4.2) re-score a bi-encoder's nearest neighbours with a
cross-encoder trained on duplicate and non-duplicate pairs (RoBERTa-base, AdamW, learning
rate 2e-5, 20% warm-up, batch 32, 5 epochs). Here the base is the small
all-MiniLM-L6-v2 (22M parameters; its pretrained encoder plus a new one-logit head) so
that training fits a CPU budget, trained with binary cross-entropy on logits
(:class:`neardup.train.losses.PairBCE`) on the one trainer (:mod:`neardup.train.trainer`,
transformers' ``Trainer``: AdamW with weight decay 0.01 on all but biases and LayerNorm
weights, linear warm-up then linear decay, gradient norm clipped at 1):

* **Pairs.** Half of ``max_pairs`` are the pairs the reranker will actually see: the
  candidates a fast method (``candidates``, default RETSim at a low cosine) proposes on
  the *train* split, labelled by the true clusters, drawn evenly over candidate-score bins
  so the uncertain middle is not drowned by easy near-copies. The other half come from
  :func:`neardup.train.data.make_pairs` (positives capped per cluster, about two thirds
  hard negatives: updates, same-topic stories, shared quotes, templates, lexical
  neighbours). Each pair's order is flipped at random, so the model learns a symmetric
  relation.
* **Input.** ``[CLS] a [SEP] b [SEP]`` with about ``max_tokens`` tokens of each text.
* **Validation** after each epoch: the same candidate method on a day-aligned subset of
  the validation split (whole days, about ``validation_docs`` documents), candidates
  re-scored, connected components at a sweep of probability thresholds, best ARI
  (:func:`neardup.train.validate.pairs_ari`). The best epoch's model is kept.
* **Checkpoints** in ``checkpoints/`` every ``checkpoint_every`` steps and at each epoch
  end (model, optimizer, scheduler, RNG states, position in the epoch); re-running the
  same call resumes where it stopped (``run.json`` holds the settings; other settings
  are refused). Training stops early after ``patience`` epochs without a better
  validation ARI (transformers' ``EarlyStoppingCallback``).

The output folder is a model folder for :class:`neardup.methods.rerank.CrossEncoderScorer`
(``model.json`` kind "cross-encoder", format "transformers"); :func:`export_onnx` adds an
int8 ONNX copy for fast CPU inference.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.eval.labeled import LabeledCorpus
from neardup.graph.edges import Pairs
from neardup.train.loop import EpochRecord
from neardup.train.validate import whole_days

if TYPE_CHECKING:  # torch-dependent: imported when training
    from neardup.train.trainer import TrainingTask

__all__ = ["export_onnx", "train_cross_encoder", "training_pairs"]

_RUN = "run.json"  # the trainer's record of the run (neardup.train.trainer)
_LOG = "training.json"
_PAIRS = "train_pairs.json"
_SCORE_BINS = 8
#: Probability thresholds swept by the per-epoch validation.
PROBABILITY_THRESHOLDS = (0.02, 0.05, *np.round(np.arange(0.1, 0.91, 0.05), 2).tolist(), 0.95, 0.98)


def _resolve_base(base: str) -> Path:
    path = Path(base)
    if path.is_dir():
        return path
    from neardup.embed.biencoder import SHIPPED_MODELS, shipped_model_path

    try:
        return shipped_model_path(base)
    except KeyError:
        raise ValueError(
            f"train_cross_encoder: parameter 'base' must be a shipped model "
            f"({', '.join(SHIPPED_MODELS)}) or a local transformers directory; got {base!r}."
        ) from None


def candidate_pairs(corpus: LabeledCorpus, candidates: str, params: dict | None,
                threads: int | None) -> Pairs:
    from neardup.io import DocumentBatch
    from neardup.methods.rerank import candidate_method
    from neardup.pipeline import sketch_corpus

    params = dict(params or {})
    method = candidate_method(candidates, params)
    if threads is not None and "threads" in method.get_params() and "threads" not in params:
        method = candidate_method(candidates, {**params, "threads": threads})
    # The corpus as one batch: training corpora fit in memory.
    batch = DocumentBatch(ids=corpus.ids.tolist(), texts=corpus.texts, dates=corpus.dates,
                          source="<labeled>", rows=np.arange(len(corpus), dtype=np.int64))
    sketch = sketch_corpus([batch], method, progress=False).sketch
    return method.find_pairs(sketch).canonical()


def training_pairs(
    corpus: LabeledCorpus,
    *,
    negative_of: np.ndarray | None = None,
    max_pairs: int | None = None,
    candidate_share: float = 0.5,
    linked_share: float = 0.0,
    linked_anchor: bool = False,
    candidates: str = "retsim",
    candidate_params: dict | None = None,
    seed: int = 0,
    threads: int | None = None,
) -> dict[str, Any]:
    """Labelled pairs for a reranker: candidates of a fast method plus :func:`make_pairs`.

    Parameters
    ----------
    corpus : LabeledCorpus
        Training documents (never a test split).
    negative_of : ndarray or None
        Hard-negative links from :func:`neardup.train.data.load_training_corpus`.
    max_pairs : int or None
        Total pairs (None: every candidate plus every ``make_pairs`` pair).
    candidate_share : float in [0, 1], default 0.5
        Share of ``max_pairs`` taken from the candidates, drawn evenly over 8 equal-width
        candidate-score bins (bins short of pairs give their quota to the others).
    linked_share : float in [0, 1], default 0.0
        Share of ``max_pairs`` taken from the generator's hard-negative links
        (``negative_of``: templates, updates, same-topic stories, shared quotes): a linked
        document paired with a random document of the cluster it is a hard negative of,
        at most 3 per linked document, drawn at random. Through ``make_pairs`` alone
        these are a few percent of the pairs, yet they are the pairs a candidate method
        hands the reranker that it gets wrong (real Reuters templates differ only in
        names and figures). ``candidate_share + linked_share`` must be at most 1.
    linked_anchor : bool, default False
        Spend half the linked budget on positives: each linked document with another
        copy of its own story, so the model sees the same wording as a duplicate (same
        figures) and as a non-duplicate (other figures) around the same anchor.
    candidates, candidate_params
        The candidate method (see :func:`neardup.methods.rerank.candidate_method`).
    seed : int, default 0
    threads : int or None

    Returns
    -------
    dict
        ``left``, ``right`` (int64 positions in ``corpus``), ``label`` (float32 0/1),
        ``kind`` (str: "candidate", "linked_negative" or a ``make_pairs`` kind) and
        ``counts`` by kind.
    """
    from neardup.train.data import cluster_members, make_pairs

    _check_shares("training_pairs", candidate_share, linked_share)
    rng = np.random.default_rng(seed)
    labels = np.asarray(corpus.clusters).astype(str)
    found = candidate_pairs(corpus, candidates, candidate_params, threads)
    c_left, c_right = found.left, found.right
    if max_pairs is not None and len(found):
        budget = min(len(found), int(round(max_pairs * candidate_share)))
        edges = np.linspace(found.score.min(), found.score.max() + 1e-6, _SCORE_BINS + 1)
        bins = np.clip(np.searchsorted(edges, found.score, side="right") - 1, 0, _SCORE_BINS - 1)
        members = [rng.permutation(np.flatnonzero(bins == b)) for b in range(_SCORE_BINS)]
        take: list[np.ndarray] = []
        remaining = budget
        # Even quotas; bins with too few pairs hand their share on to the fuller bins.
        for i, m in enumerate(sorted(members, key=len)):
            quota = remaining // (_SCORE_BINS - i)
            take.append(m[:quota])
            remaining -= min(quota, len(m))
        pick = np.sort(np.concatenate(take))
        c_left, c_right = c_left[pick], c_right[pick]
    l_left = l_right = np.zeros(0, np.int64)
    l_kind = np.zeros(0, dtype=object)
    # Drawn only when asked for, so runs without them keep their pairs (and random state).
    if linked_share > 0:
        names, members = cluster_members(labels)
        members_of = dict(zip(names.tolist(), members))
        l_left, l_right = _linked_pairs(labels, members_of, negative_of, rng)
        budget = None if max_pairs is None else int(round(max_pairs * linked_share))
        if linked_anchor and budget is not None:
            budget //= 2
        if budget is not None:
            pick = np.sort(rng.permutation(len(l_left))[:budget])
            l_left, l_right = l_left[pick], l_right[pick]
        l_kind = np.full(len(l_left), "linked_negative", dtype=object)
        if linked_anchor:
            p_left, p_right = _own_cluster_partners(labels, members_of, l_left, rng)
            l_left, l_right = np.concatenate([l_left, p_left]), np.concatenate([l_right, p_right])
            l_kind = np.concatenate([l_kind, np.full(len(p_left), "linked_positive", dtype=object)])
    # make_pairs returns texts; positions are recovered through an index of the texts
    # (exact duplicate texts map to one position, which has the same label anyway).
    made = make_pairs(corpus, negative_of=negative_of, seed=seed)
    position = {t: i for i, t in enumerate(corpus.texts)}
    m_left = np.fromiter((position[t] for t in made.text_a), np.int64, len(made))
    m_right = np.fromiter((position[t] for t in made.text_b), np.int64, len(made))
    m_kind = made.kind.astype(str)
    if max_pairs is not None:
        rest = max(0, max_pairs - len(c_left) - len(l_left))
        pick = np.sort(rng.permutation(len(made))[:rest])
        m_left, m_right, m_kind = m_left[pick], m_right[pick], m_kind[pick]
    left = np.concatenate([c_left, l_left, m_left]).astype(np.int64)
    right = np.concatenate([c_right, l_right, m_right]).astype(np.int64)
    kind = np.concatenate([np.full(len(c_left), "candidate", dtype=object),
                           l_kind, m_kind.astype(object)])
    label = (labels[left] == labels[right]).astype(np.float32)
    order = rng.permutation(len(left))
    left, right, label, kind = left[order], right[order], label[order], kind[order]
    kinds, counts = np.unique(kind.astype(str), return_counts=True)
    return {"left": left, "right": right, "label": label, "kind": kind,
            "counts": {str(k): int(c) for k, c in zip(kinds, counts)}}


def _check_shares(caller: str, candidate_share: float, linked_share: float) -> None:
    if candidate_share + linked_share > 1.0 + 1e-9:
        raise ValueError(f"{caller}: parameters 'candidate_share' + 'linked_share' must be at "
                         f"most 1; got {candidate_share} + {linked_share}.")


def _own_cluster_partners(labels: np.ndarray, members_of: dict[str, np.ndarray],
                          anchors: np.ndarray,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each anchor with a random other document of its own cluster (skipped if alone)."""
    left: list[int] = []
    right: list[int] = []
    for i in anchors.tolist():
        others = members_of[labels[i]][members_of[labels[i]] != i]
        if len(others):
            left.append(i)
            right.append(int(rng.choice(others)))
    return np.asarray(left, np.int64), np.asarray(right, np.int64)


def _linked_pairs(labels: np.ndarray, members_of: dict[str, np.ndarray],
                  negative_of: np.ndarray | None, rng: np.random.Generator,
                  per_doc: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Every linked document with up to ``per_doc`` random documents of its target cluster."""
    empty = np.zeros(0, np.int64)
    if negative_of is None:
        return empty, empty
    left: list[int] = []
    right: list[int] = []
    for i, target in enumerate(negative_of):
        if target is None or str(target) == labels[i] or str(target) not in members_of:
            continue
        members = members_of[str(target)]
        for j in rng.choice(members, min(per_doc, len(members)), replace=False).tolist():
            left.append(i)
            right.append(int(j))
    return np.asarray(left, np.int64), np.asarray(right, np.int64)


def _validate_params(caller: str, **p: Any) -> None:
    check_int(caller, "epochs", p["epochs"], low=1)
    check_int(caller, "batch_size", p["batch_size"], low=2)
    check_float(caller, "lr", p["lr"], low=1e-8, high=1.0)
    check_float(caller, "warmup", p["warmup"], low=0.0, high=1.0)
    check_int(caller, "max_tokens", p["max_tokens"], low=8, high=254)
    if p["max_pairs"] is not None:
        check_int(caller, "max_pairs", p["max_pairs"], low=2)
    check_int(caller, "seed", p["seed"], low=0)
    check_int(caller, "patience", p["patience"], low=1)
    check_int(caller, "validation_docs", p["validation_docs"], low=2)
    check_int(caller, "checkpoint_every", p["checkpoint_every"], low=1)
    check_float(caller, "candidate_share", p["candidate_share"], low=0.0, high=1.0)
    check_float(caller, "linked_share", p["linked_share"], low=0.0, high=1.0)
    _check_shares(caller, p["candidate_share"], p["linked_share"])
    if p["threads"] is not None:
        check_int(caller, "threads", p["threads"], low=1)


def train_cross_encoder(
    train_corpus: LabeledCorpus,
    validation_corpus: LabeledCorpus,
    *,
    output_dir: str | os.PathLike,
    negative_of: np.ndarray | None = None,
    base: str = "all-MiniLM-L6-v2",
    epochs: int = 2,
    batch_size: int = 16,
    lr: float = 2e-5,
    warmup: float = 0.2,
    max_tokens: int = 128,
    max_pairs: int | None = 3000,
    candidate_share: float = 0.5,
    linked_share: float = 0.0,
    linked_anchor: bool = False,
    candidates: str = "retsim",
    candidate_params: dict | None = None,
    validation_docs: int = 300,
    seed: int = 0,
    patience: int = 1,
    checkpoint_every: int = 25,
    threads: int | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Fine-tune a cross-encoder on duplicate / non-duplicate pairs (see the module doc).

    Parameters
    ----------
    train_corpus : LabeledCorpus
        Training documents with cluster labels (e.g. from
        :func:`neardup.train.data.load_training_corpus`; test documents are refused).
    validation_corpus : LabeledCorpus
        Validation documents (never test); a day-aligned subset is scored every epoch.
    output_dir : path
        Where the model, ``model.json``, ``training.json``, the training pairs and the
        checkpoint go. An unfinished run there is resumed.
    negative_of : ndarray or None
        Hard-negative links of ``train_corpus``.
    base : str, default "all-MiniLM-L6-v2"
        A shipped model name or a local transformers directory (read offline).
    epochs : int, default 2
    batch_size : int, default 16
    lr : float, default 2e-5
        Peak AdamW learning rate (linear warm-up, then linear decay to 0).
    warmup : float in [0, 1], default 0.2
        Share of all steps spent warming up.
    max_tokens : int, default 128
        Tokens of each text read (the pair is at most ``2 * max_tokens + 3``).
    max_pairs : int or None, default 3000
        Training pairs per epoch (see :func:`training_pairs`); CPU time grows linearly.
    candidate_share : float, default 0.5
        Share of the pairs drawn from the candidate method's output on the train split.
    linked_share : float, default 0.0
        Share of the pairs drawn from the training data's hard-negative links
        (``negative_of``; see :func:`training_pairs`).
    linked_anchor : bool, default False
        Half the linked pairs are positives around the same documents (see
        :func:`training_pairs`).
    candidates : {"retsim", "minhash", "biencoder"}, default "retsim"
    candidate_params : dict or None
        Candidate-method parameters (defaults: :data:`neardup.methods.rerank.CANDIDATE_DEFAULTS`).
    validation_docs : int, default 300
        Size of the day-aligned validation subset (whole days, so a little more).
    seed : int, default 0
    patience : int, default 1
        Epochs without a better validation ARI before stopping.
    checkpoint_every : int, default 25
        Optimizer steps between mid-epoch checkpoints.
    threads : int or None, default None
        PyTorch intra-op threads (and the candidate method's).
    progress : bool or None, default None
        Progress bar with the running loss; None: when stderr is a terminal.

    Returns
    -------
    dict
        The training log (:meth:`TrainingLog.to_dict`: config, epochs, best_epoch,
        best_validation_ari, best_threshold, cpu_seconds) plus ``output_dir``,
        ``pair_counts``, ``validation_docs``, ``validation_pairs``, ``stopped_early``,
        ``loss_check`` (the mean loss of the first four batches under the base model, a
        new head, and the ``best`` one) and ``wall_seconds``.

    Raises
    ------
    ValueError
        Invalid parameters, a test split among the training documents, an unknown base.
    ImportError
        Without torch / transformers (the ``neural`` extra).
    """
    caller = "train_cross_encoder"
    _validate_params(caller, epochs=epochs, batch_size=batch_size, lr=lr, warmup=warmup,
                     max_tokens=max_tokens, max_pairs=max_pairs, seed=seed, patience=patience,
                     validation_docs=validation_docs, checkpoint_every=checkpoint_every,
                     candidate_share=candidate_share, linked_share=linked_share,
                     threads=threads)
    check_choice(caller, "candidates", candidates, ("retsim", "minhash", "biencoder"))
    for name, corpus in (("train_corpus", train_corpus), ("validation_corpus", validation_corpus)):
        if not isinstance(corpus, LabeledCorpus):
            raise ValueError(f"{caller}: parameter '{name}' must be a LabeledCorpus; got "
                             f"{type(corpus).__name__}.")
        if corpus.splits is not None and np.any(corpus.splits == "test"):
            raise ValueError(f"{caller}: parameter '{name}' holds test-split documents; the "
                             "test split is for the final report only.")
    try:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from neardup.train.trainer import TrainSettings, fit, torch_threads
    except ImportError as err:
        raise ImportError(
            f"{caller} needs torch, transformers and accelerate: "
            "pip install 'neardup[neural,train]'."
        ) from err

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    base_path = _resolve_base(base)
    started_wall = time.perf_counter()
    config = {
        "base": base, "epochs": epochs, "batch_size": batch_size, "lr": lr, "warmup": warmup,
        "max_tokens": max_tokens, "max_pairs": max_pairs, "candidate_share": candidate_share,
        # Only recorded when used, so earlier runs' checkpoints stay resumable.
        **({"linked_share": linked_share} if linked_share else {}),
        **({"linked_anchor": True} if linked_anchor else {}),
        "candidates": candidates,
        # Run-time settings (a cache folder, threads) do not change the model.
        "candidate_params": {k: v for k, v in (candidate_params or {}).items()
                             if k not in ("cache_dir", "threads")} or None,
        "validation_docs": validation_docs, "seed": seed, "patience": patience,
        "train_docs": len(train_corpus), "train_hash": train_corpus.content_hash(),
        "validation_hash": validation_corpus.content_hash(),
    }
    with torch_threads(threads):
        data = _stored_pairs(out, config, train_corpus, negative_of=negative_of,
                             max_pairs=max_pairs, candidate_share=candidate_share,
                             linked_share=linked_share, linked_anchor=linked_anchor,
                             candidates=candidates, candidate_params=candidate_params,
                             seed=seed, threads=threads)
        # Validation subset and its candidates (fixed for the whole run).
        subset = validation_corpus.select(
            whole_days(validation_corpus, validation_docs, at_least=True))
        val_pairs = candidate_pairs(subset, candidates, candidate_params, threads)
        tokenizer = AutoTokenizer.from_pretrained(base_path, local_files_only=True)

        def build() -> TrainingTask:
            # Built after fit() seeds: the new one-logit head is drawn from the seed.
            model = AutoModelForSequenceClassification.from_pretrained(
                base_path, num_labels=1, local_files_only=True)
            return _task(model, tokenizer, train_corpus.texts, data, subset, val_pairs,
                         batch_size=batch_size, max_tokens=max_tokens, seed=seed)

        settings = TrainSettings(
            epochs=epochs, lr=lr, seed=seed, patience=patience, warmup=warmup,
            schedule="linear", weight_decay=0.01, max_grad_norm=1.0,
            save_seconds=None, save_steps=checkpoint_every, progress=progress)
        fitted = fit(build, settings, output_dir=out, config=config, caller=caller)
        if fitted.model is not None:
            _save_model(out, fitted.model, tokenizer, max_tokens=max_tokens, base=base,
                        record=fitted.log.best, config=config)
    fitted.log.save(out / _LOG)
    return {**fitted.log.to_dict(), "output_dir": str(out), "pair_counts": data["counts"],
            "validation_docs": len(subset), "validation_pairs": len(val_pairs),
            "stopped_early": fitted.stopped_early, "loss_check": fitted.loss_check,
            "wall_seconds": round(time.perf_counter() - started_wall, 1)}


def _stored_pairs(out: Path, config: dict[str, Any], corpus: LabeledCorpus,
                  **params: Any) -> dict[str, Any]:
    """:func:`training_pairs`, built once (the candidate search costs minutes) and kept in
    ``out``; each pair's order flipped at random (seeded): a symmetric relation from
    one-sided input."""
    pairs_path = out / _PAIRS
    pairs_key = {k: config[k] for k in ("train_hash", "max_pairs", "candidate_share",
                                        "linked_share", "linked_anchor", "candidates",
                                        "candidate_params", "seed") if k in config}
    stored = json.loads(pairs_path.read_text()) if pairs_path.is_file() else None
    if stored is not None and stored.get("key") == pairs_key:
        data = {k: np.asarray(stored[k]) for k in ("left", "right", "label")}
        data["counts"] = stored["counts"]
    else:
        data = training_pairs(corpus, **params)
        pairs_path.write_text(json.dumps({
            "key": pairs_key, "counts": data["counts"],
            **{k: data[k].tolist() for k in ("left", "right", "label")}}))
    left, right = data["left"], data["right"]
    flip = np.random.default_rng(params["seed"] + 1).random(len(left)) < 0.5
    data["left"], data["right"] = np.where(flip, right, left), np.where(flip, left, right)
    data["label"] = data["label"].astype(np.float32)
    return data


def _task(model: Any, tokenizer: Any, texts: list[str], data: dict[str, Any],
          subset: LabeledCorpus, val_pairs: Pairs, *, batch_size: int, max_tokens: int,
          seed: int) -> TrainingTask:
    """The cross-encoder as a :class:`~neardup.train.trainer.TrainingTask`: pairs in a
    seeded order per epoch, ``[CLS] a [SEP] b [SEP]``, binary cross-entropy on the logit,
    validation ARI of the candidate pairs re-scored."""
    import torch

    from neardup.methods.rerank import torch_logits
    from neardup.train.losses import PairBCE
    from neardup.train.trainer import AriEvaluator, TrainingTask

    left, right, label = data["left"], data["right"], data["label"]
    bce = PairBCE()

    def batches(epoch: int) -> list[np.ndarray]:
        order = np.random.default_rng(seed * 1000 + epoch).permutation(len(left))
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

    def collate(batch: list[int]) -> dict[str, Any]:
        idx = np.asarray(batch, np.int64)
        return {"encoded": _pair_batch(tokenizer, texts, left[idx], right[idx], max_tokens),
                "targets": torch.from_numpy(label[idx])}

    def loss(model: Any, inputs: dict[str, Any]) -> Any:
        return bce(model(**inputs["encoded"]).logits, inputs["targets"])

    val_a = [subset.texts[i] for i in val_pairs.left.tolist()]
    val_b = [subset.texts[i] for i in val_pairs.right.tolist()]

    def score_pairs(model: Any) -> np.ndarray:
        logits = torch_logits(model, tokenizer, val_a, val_b, max_tokens, batch_size=32)
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -60, 60)))

    evaluator = AriEvaluator(np.asarray(subset.clusters).astype(str), pairs=val_pairs,
                             score_pairs=score_pairs, thresholds=PROBABILITY_THRESHOLDS)
    return TrainingTask(model=model, loss=loss, collate=collate, batches=batches,
                        evaluator=evaluator)


def _pair_batch(tokenizer: Any, texts: list[str], left: np.ndarray, right: np.ndarray,
                max_tokens: int) -> dict[str, Any]:
    from neardup.methods.rerank import pair_heads

    return pair_heads(tokenizer, [texts[i] for i in left.tolist()],
                      [texts[i] for i in right.tolist()], max_tokens, return_tensors="pt")


def _save_model(out: Path, model: Any, tokenizer: Any, *, max_tokens: int, base: str,
                record: EpochRecord, config: dict) -> None:
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    meta = {
        "kind": "cross-encoder", "format": "transformers", "base": base,
        "max_tokens": max_tokens, "threshold": record.threshold,
        "validation_ari": record.validation_ari, "epoch": record.epoch,
        "files": sorted(p.name for p in out.iterdir() if p.is_file() and p.name not in
                        (_RUN, _LOG, _PAIRS, "model.json", "model.json.tmp")),
        "training": {k: config[k] for k in ("epochs", "batch_size", "lr", "warmup", "max_pairs",
                                             "candidates", "seed")},
    }
    tmp = out / "model.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, out / "model.json")


def export_onnx(model_dir: str | os.PathLike, output_dir: str | os.PathLike, *,
                quantize: bool = True, opset: int = 17,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Export a trained cross-encoder folder to ONNX (dynamic int8 weights by default).

    Writes ``model.onnx``, the tokenizer files and a ``model.json`` with format "onnx"
    into ``output_dir``.

    Parameters
    ----------
    model_dir : path
        A folder written by :func:`train_cross_encoder` (format "transformers").
    output_dir : path
    quantize : bool, default True
        Dynamic int8 quantization of the weights (ONNX Runtime), about 4x smaller.
    opset : int, default 17

    Returns
    -------
    dict
        ``path`` of the ONNX file and its ``bytes``.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    src, dst = Path(model_dir), Path(output_dir)
    meta = json.loads((src / "model.json").read_text())
    if meta.get("kind") != "cross-encoder" or meta.get("format") != "transformers":
        raise ValueError(f"export_onnx: parameter 'model_dir' must be a transformers "
                         f"cross-encoder folder; {src} has "
                         f"{meta.get('kind')}/{meta.get('format')}.")
    dst.mkdir(parents=True, exist_ok=True)
    model = AutoModelForSequenceClassification.from_pretrained(src, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(src, local_files_only=True)
    model.config.return_dict = False
    enc = tokenizer(["a b c"], ["d e f"], return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in enc]
    fp32 = dst / ("model-fp32.onnx" if quantize else "model.onnx")
    dynamic = {n: {0: "batch", 1: "sequence"} for n in names}
    with torch.no_grad():
        torch.onnx.export(model, tuple(enc[n] for n in names), str(fp32), input_names=names,
                          output_names=["logits"], dynamic_axes={**dynamic, "logits": {0: "batch"}},
                          opset_version=opset, dynamo=False)
    final = fp32
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        final = dst / "model.onnx"
        # 7-bit weights, as neardup.embed.onnx_encoder's exports: 8-bit ones saturate on x86
        # CPUs without VNNI (experiments/int8_export_cosine/int8_export_cosine.py).
        quantize_dynamic(str(fp32), str(final), weight_type=QuantType.QInt8, per_channel=True,
                         reduce_range=True)
        fp32.unlink()
    tokenizer.save_pretrained(dst)
    files = sorted(p.name for p in dst.iterdir() if p.is_file() and p.name != "model.json")
    new_meta = {**meta, "format": "onnx", "onnx": final.name, "quantized": quantize, "files": files}
    (dst / "model.json").write_text(json.dumps(new_meta, indent=2) + "\n")
    return {"path": str(final), "bytes": final.stat().st_size}
