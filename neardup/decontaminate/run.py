"""Decontamination: training documents that contain an evaluation item, found by n-gram
overlap (:mod:`.ngrams`) and by near-duplicate matching through the index (:mod:`.near`).

The evaluation sets are small and held in memory; the training corpus is streamed batch by
batch, and only a flag per training document (1 byte) and the leaks found are kept. The
result says, per evaluation set, how many items leaked and into which training documents,
with the kind of match ("ngram", "near"; "exact" when the normalized texts are equal).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.errors import check_choice, check_int
from neardup.io.batch import DocumentBatch
from neardup.progress import StageTimer, timed_batches
from neardup.text import NormalizeConfig, ShingleConfig

__all__ = ["ContaminationResult", "DecontaminationConfig", "EvalSets", "find_contamination"]

KINDS = ("ngram", "near", "exact")
NEAR_ENGINES = ("index", "memory")


def index_methods() -> tuple[str, ...]:
    """The near methods ``near_engine='index'`` takes: those a persistent index holds
    (:func:`neardup.index.supported_methods`, derived from what each method declares)."""
    from neardup.index import supported_methods

    return supported_methods()



@dataclass(frozen=True)
class DecontaminationConfig:
    """How training documents are matched against evaluation items.

    Parameters
    ----------
    ngram : int, default 13
        N-gram length in words (GPT-3's and datatrove's 13); 0 turns n-gram matching off.
    min_words : int, default 8
        Items shorter than ``ngram`` words are matched on all their words when they have
        at least this many; shorter ones only by near-duplicate matching.
    near : bool, default True
        Also match near-duplicates (paraphrased, OCR-noised copies) through an index.
    near_engine : {"index", "memory"}, default "index"
        "index": the items in a persistent index, each training batch queried against it
        (streams; methods exact, minhash, simhash). "memory": any dedup method, every
        training document's sketch held until the items are matched at the end
        (:mod:`neardup.decontaminate.memory`; ``neardup leakage``'s way).
    near_method : str or Method, default "minhash"
        The near-duplicate method (a name, or with ``near_engine="memory"`` a Method).
    near_params : dict or None, default None
        Parameters of ``near_method``. None: character 5-grams, which resist OCR noise
        inside words better than word n-grams (Silcock et al. 2022, Table A2), and for
        minhash the threshold 0.5 (:meth:`near_method_params`).
    near_window : int or None, default None
        Width in words of the windows a long training document is queried by; None: the
        median item length; 0: whole documents only.
    eval_index : str or None
        Directory of the index over the evaluation items (reused when it holds exactly
        these items, built otherwise); None: a temporary one.
    """

    ngram: int = 13
    min_words: int = 8
    near: bool = True
    near_engine: str = "index"
    near_method: Any = "minhash"
    near_params: dict | None = None
    near_window: int | None = None
    eval_index: str | None = None
    normalize: NormalizeConfig = NormalizeConfig()

    def __post_init__(self) -> None:
        check_int("DecontaminationConfig", "ngram", self.ngram, low=0, high=255)
        check_int("DecontaminationConfig", "min_words", self.min_words, low=1, high=255)
        if self.near_window is not None:
            check_int("DecontaminationConfig", "near_window", self.near_window, low=0)
        check_choice("DecontaminationConfig", "near_engine", self.near_engine, NEAR_ENGINES)
        if self.near_engine == "index" and self.near_method not in index_methods():
            from neardup.errors import ParameterError

            raise ParameterError("DecontaminationConfig", "near_method",
                                 f"one of {', '.join(map(repr, index_methods()))} with near_engine='index'",
                                 self.near_method, "Use near_engine='memory' for any other method.")
        if self.near and self.near_engine == "index":
            planned = self.near_plan()
            if not planned.supported:  # the named method, but with parameters the index cannot hold
                from neardup.errors import ParameterError

                raise ParameterError("DecontaminationConfig", "near_params",
                                     "parameters a persistent index can hold with near_engine='index'",
                                     self.near_params, f"The index refuses them: {planned.reason}. "
                                     "Use near_engine='memory' for them.")
        if not self.ngram and not self.near:
            from neardup.errors import ParameterError

            raise ParameterError("DecontaminationConfig", "ngram", "at least 1 when near is off",
                                 self.ngram, "Turn on n-gram or near-duplicate matching.")

    def near_plan(self):
        """The :func:`neardup.plan.plan` of the near method on ``near_engine`` (the
        persistent index, or in memory), from what the method declares."""
        from neardup.graph.config import ClusterConfig
        from neardup.methods import make_method
        from neardup.plan import RunSpec, plan

        method = self.near_method
        if isinstance(method, str):
            method = make_method(method, **self.near_method_params())
        return plan(RunSpec(method, ClusterConfig(algorithm="components"), executor=self.near_engine))

    def near_method_params(self) -> dict[str, Any]:
        """The near method's parameters, defaults filled in (see ``near_params``)."""
        if self.near_params is not None:
            return dict(self.near_params)
        if self.near_method not in ("minhash", "simhash"):
            return {}
        defaults: dict[str, Any] = {"shingle": ShingleConfig(unit="char", n=5)}
        if self.near_method == "minhash":
            defaults["threshold"] = 0.5
        return defaults

    def get_params(self) -> dict[str, Any]:
        params = asdict(self)
        params.pop("normalize")
        if not isinstance(self.near_method, str):
            params["near_method"] = {"name": self.near_method.name, **self.near_method.get_params()}
        params["near_params"] = {k: (v.get_params() if hasattr(v, "get_params") else v)
                                 for k, v in self.near_method_params().items()}
        return params


@dataclass(frozen=True)
class EvalSets:
    """Evaluation items in memory: ``ids``, ``texts`` and the set of each (``set_of``, an
    index into ``names``)."""

    names: list[str]
    ids: list[str]
    texts: list[str]
    set_of: np.ndarray

    @classmethod
    def from_batches(cls, sets: Iterable[tuple[str, Iterable[DocumentBatch]]]) -> EvalSets:
        names, ids, texts, set_of = [], [], [], []
        for number, (name, batches) in enumerate(sets):
            names.append(name)
            for batch in batches:
                ids.extend(batch.ids)
                texts.extend(batch.texts)
                set_of.append(np.full(len(batch), number, np.int64))
        return cls(names, ids, texts, np.concatenate(set_of) if set_of else np.zeros(0, np.int64))

    @classmethod
    def by_source(cls, batches: Iterable[DocumentBatch]) -> EvalSets:
        """One set per source file of ``batches``, in order of first appearance."""
        names: dict[str, int] = {}
        ids, texts, set_of = [], [], []
        for batch in batches:
            number = names.setdefault(batch.source, len(names))
            ids.extend(batch.ids)
            texts.extend(batch.texts)
            set_of.append(np.full(len(batch), number, np.int64))
        return cls(list(names), ids, texts,
                   np.concatenate(set_of) if set_of else np.zeros(0, np.int64))

    def keys(self) -> list[str]:
        """A unique key per item (its set number and id) for the index."""
        return [f"{s}:{i}" for s, i in zip(self.set_of.tolist(), self.ids)]


@dataclass
class ContaminationResult:
    """What :func:`find_contamination` found.

    Attributes
    ----------
    contaminated : ndarray of bool, shape (n_train,)
        Per training document, in input order.
    leaks : pyarrow.Table
        One row per (training document, evaluation item) match: ``train_row`` (the
        document's position in the training input, from 0), ``train_id``,
        ``train_file``, ``eval_set``, ``eval_id``, ``eval_row`` (the item's position
        among all evaluation items, from 0), ``kind`` (ngram, near, exact),
        ``score`` (shared n-grams for ngram; similarity for near and exact); an
        item matched both ways has a row of each kind.
    per_set : list of dict
        Per evaluation set: ``eval_set``, ``items``, ``items_leaked``,
        ``leaked_fraction``, ``items_leaked_ngram``, ``items_leaked_near``,
        ``items_too_short_for_ngrams``.
    params, timings : dict
    """

    contaminated: np.ndarray
    leaks: pa.Table
    per_set: list[dict[str, Any]]
    params: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "train_documents": int(self.contaminated.size),
            "train_contaminated": int(self.contaminated.sum()),
            "eval_items": sum(s["items"] for s in self.per_set),
            "eval_items_leaked": sum(s["items_leaked"] for s in self.per_set),
        }

    def report(self, max_train_ids: int = 20) -> dict[str, Any]:
        """The JSON report: summary, per set, and per leaked item where it leaked (up to
        ``max_train_ids`` training ids per item and kind, with the full count)."""
        sets = []
        rows = self.leaks.to_pydict()
        by_item: dict[tuple[str, str], dict[str, Any]] = {}
        for train_id, eval_set, eval_id, kind in zip(rows["train_id"], rows["eval_set"],
                                                     rows["eval_id"], rows["kind"]):
            entry = by_item.setdefault((eval_set, eval_id), {"eval_id": eval_id, "matches": {}})
            found = entry["matches"].setdefault(kind, {"count": 0, "train_ids": []})
            found["count"] += 1
            if len(found["train_ids"]) < max_train_ids:
                found["train_ids"].append(train_id)
        for s in self.per_set:
            leaked = [v for (name, _), v in by_item.items() if name == s["eval_set"]]
            sets.append({**s, "leaked_items": leaked})
        return {"summary": self.summary(), "eval_sets": sets, "params": self.params,
                "timings_seconds": self.timings}


def find_contamination(
    train_batches: Iterable[DocumentBatch],
    evals: EvalSets,
    config: DecontaminationConfig = DecontaminationConfig(),
    *,
    progress: bool | None = None,
    total: int | None = None,
) -> ContaminationResult:
    """Match every training document against the evaluation items (see the module)."""
    from neardup.decontaminate.ngrams import EvalNgrams

    timer = StageTimer()
    with timer.stage("evaluation items"):
        grams = EvalNgrams(evals.texts, config.ngram or 255, config.min_words, config.normalize) \
            if config.ngram else None
        indexed = config.near and config.near_engine == "index"
        near = _eval_index(evals, config) if indexed and evals.texts else None
    memory = _memory_matcher(config) if config.near and config.near_engine == "memory" else None
    seen_ids: list[str] = []
    seen_files: list[str] = []
    flags: list[np.ndarray] = []
    found: dict[str, list] = {k: [] for k in ("train_id", "train_file", "position", "item", "kind", "score")}
    start = 0
    try:
        for batch in timed_batches(train_batches, timer, total=total, progress=progress):
            flag = np.zeros(len(batch), bool)
            if grams is not None:
                with timer.stage("ngrams"):
                    hits = grams.match(batch.texts)
                _collect(found, batch, start, hits.train, hits.item, "ngram",
                         hits.shared.astype(np.float32))
                flag[hits.train] = True
            if near is not None:
                with timer.stage("near"):
                    doc, item, score, types = near.match(batch.texts)
                kinds = np.where(np.asarray(types, object) == "exact", "exact", "near")
                for kind in ("near", "exact"):
                    at = kinds == kind
                    _collect(found, batch, start, doc[at], item[at], kind, score[at])
                flag[doc] = True
            if memory is not None:
                with timer.stage("sketch"):
                    memory.add(batch.texts)
                seen_ids.extend(batch.ids)
                seen_files.extend([batch.source] * len(batch))
            flags.append(flag)
            start += len(batch)
    finally:
        if near is not None:
            near.close()
    contaminated = np.concatenate(flags) if flags else np.zeros(0, bool)
    if memory is not None:
        with timer.stage("near"):
            found_near = memory.match(evals.texts)
        train = found_near["train"]
        found["position"].append(train)
        found["train_id"].extend(seen_ids[t] for t in train.tolist())
        found["train_file"].extend(seen_files[t] for t in train.tolist())
        found["item"].append(found_near["item"])
        found["kind"].extend(found_near["kind"].tolist())
        found["score"].append(found_near["score"])
        contaminated[train] = True
    leaks = _leak_table(found, evals)
    per_set = _per_set(leaks, evals, grams)
    params = {**config.get_params(), "eval_index_reused": bool(near and near.reused)}
    return ContaminationResult(contaminated, leaks, per_set, params, timer.seconds)


def _memory_matcher(config: DecontaminationConfig):
    from neardup.decontaminate.memory import MemoryMatcher

    return MemoryMatcher(config.near_plan().spec.method)


def _eval_index(evals: EvalSets, config: DecontaminationConfig):
    from neardup.decontaminate.near import EvalIndex

    window = config.near_window
    if window is None:  # the median item length, in words
        window = int(np.median([len(t.split()) for t in evals.texts]))
    return EvalIndex(evals.keys(), evals.texts, config.eval_index, config.near_method,
                     config.near_method_params(), window)


def _collect(found: dict[str, list], batch: DocumentBatch, start: int, docs: np.ndarray,
             items: np.ndarray, kind: str, score: np.ndarray) -> None:
    if not docs.size:
        return
    found["position"].append(start + docs)
    found["train_id"].extend(batch.ids[d] for d in docs.tolist())
    found["train_file"].extend([batch.source] * docs.size)
    found["item"].append(items)
    found["kind"].extend([kind] * docs.size)
    found["score"].append(score)


def _leak_table(found: dict[str, list], evals: EvalSets) -> pa.Table:
    item = np.concatenate([np.zeros(0, np.int64)] + found["item"])
    names = np.asarray(evals.names, object)
    ids = np.asarray(evals.ids, object)
    return pa.table({
        "train_row": pa.array(np.concatenate([np.zeros(0, np.int64)] + found["position"]), pa.int64()),
        "train_id": pa.array(found["train_id"], pa.string()),
        "train_file": pa.array(found["train_file"], pa.string()),
        "eval_set": pa.array(names[evals.set_of[item]].tolist() if item.size else [], pa.string()),
        "eval_id": pa.array(ids[item].tolist() if item.size else [], pa.string()),
        "eval_row": pa.array(item, pa.int64()),
        "kind": pa.array(found["kind"], pa.string()),
        "score": pa.array(np.concatenate([np.zeros(0, np.float32)] + found["score"]), pa.float32()),
    })


def _per_set(leaks: pa.Table, evals: EvalSets, grams) -> list[dict[str, Any]]:
    rows = leaks.to_pydict()
    leaked: dict[str, set] = {}
    for eval_set, eval_id, kind in zip(rows["eval_set"], rows["eval_id"], rows["kind"]):
        leaked.setdefault(eval_set, set()).add((eval_id, "ngram" if kind == "ngram" else "near"))
    short = grams.too_short if grams is not None else np.zeros(len(evals.ids), bool)
    out = []
    for number, name in enumerate(evals.names):
        in_set = evals.set_of == number
        found = leaked.get(name, set())
        items = int(in_set.sum())
        n_leaked = len({i for i, _ in found})
        out.append({
            "eval_set": name, "items": items, "items_leaked": n_leaked,
            "leaked_fraction": n_leaked / items if items else 0.0,
            "items_leaked_ngram": len({i for i, k in found if k == "ngram"}),
            "items_leaked_near": len({i for i, k in found if k == "near"}),
            "items_too_short_for_ngrams": int((short & in_set).sum()),
        })
    return out
