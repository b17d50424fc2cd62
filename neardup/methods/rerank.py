"""Re-ranking (``--method rerank``): fast candidates, re-scored by a pair classifier.

Silcock et al. (2022, sec. 4.2) make a cross-encoder affordable by scoring only the
pairs a cheap bi-encoder ranks as close: every document's nearest neighbours go to the
cross-encoder, and the pairs it calls duplicates (probability above a threshold) are
clustered. This method does the same with any fast method as the retriever:

1. ``candidates`` ("minhash", "retsim" or "biencoder"; by default MinHash for the
   verifier, RETSim for the cross-encoder) finds candidate pairs with a deliberately
   permissive setting (a low Jaccard or cosine threshold, ``k`` neighbours), so that
   recall is high and precision does not matter;
2. ``scorer`` re-scores every candidate with a duplicate probability:

   * ``"cross-encoder"``: a transformer reading both texts at once (the first
     ``max_tokens`` tokens of each); ONNX Runtime (int8) when the model folder holds an
     ONNX file, else PyTorch;
   * ``"verifier"``: a scikit-learn classifier over pair features
     (:mod:`neardup.methods.pair_features`: n-gram Jaccard and containment, alignment,
     length ratio, date difference, optionally RETSim cosines): thousands of pairs per
     second;

3. with ``template_guard`` (the default), accepted pairs of short notices whose figures
   differ both ways (:func:`neardup.methods.pair_types.figures_disagree`: two companies'
   ``Qtly div 25 cts ... Pay July 10`` and ``Qtly div 96 cts ... Pay August one``), and
   pairs of one template filled with different names, in its body or as the subject its
   first sentence opens with (:func:`neardup.methods.template_names.names_disagree`),
   get probability 0: the
   verifier, trained on copies damaged by OCR, takes such templates for copies;
4. pairs with probability >= ``threshold`` are the edges clustered as usual.

When the candidate method has a keyed corpus stage (MinHash), so does re-ranking: the
candidate method's keys and pre-check (the permissive Jaccard estimate), then the scorer
on the surviving edges, in bounded batches; the stage keeps the texts (cut to
``max_chars``) in an Arrow file in its work directory and fetches those of each batch,
and the dates for the verifier's date features. Over embedding candidates (RETSim,
bi-encoder) re-ranking has the candidate method's vector stage: its rows, searched
shard by shard, give the pairs above the candidate threshold, which the stage scores in
bounded batches from texts (and dates) it keeps the same way. In memory
(``engine="memory"``, ``neardup tune``) the sketch keeps each document's raw
text (UTF-8, cut to ``max_chars`` characters) beside the candidate method's sketch, and
re-scored candidates are cached on the corpus sketch, so a threshold sweep runs the
scorer once.

The verifier is the most accurate method on every labelled set, and far cheaper per pair
than the cross-encoder (MiniLM-L6, 64 tokens per text, int8 ONNX): see
docs/choosing-a-method.md and docs/decisions/0017-rerank-is-the-accuracy-default.md.
"""

from __future__ import annotations

import hashlib
import weakref

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int, parameter_error, spelled
from neardup.graph.edges import Pairs
from neardup.graph.partners import screened_mask
from neardup.methods.base import (
    CandidateKeys,
    CandidateRows,
    Matches,
    Method,
    Sketch,
    build_method,
    init_parameters,
)
from neardup.methods.capabilities import Capabilities, KeyedCandidates, Screening, Verification
from neardup.methods.embedding import BiEncoderMethod, RETSimMethod
from neardup.methods.static import StaticMethod
from neardup.methods.minhash import MinHashLSH
from neardup.methods.pair_types import figures_disagree, comparable_length_pairs
from neardup.methods.template_names import names_disagree, names_length_pairs
from neardup.models import recommended_cluster, tuned_threshold
from neardup.text import NormalizeConfig, ShingleConfig, normalize_batch

__all__ = [
    "CANDIDATE_DEFAULTS",
    "CrossEncoderScorer",
    "DEFAULT_CANDIDATES",
    "RerankMethod",
    "VerifierScorer",
    "candidate_method",
    "load_scorer",
]

#: Permissive defaults of each candidate method: many pairs, high recall (a few to a
#: dozen candidates per document on the reuters-news validation split, among which the
#: true pairs alone would score close to a perfect ARI).
CANDIDATE_DEFAULTS: dict[str, dict[str, Any]] = {
    "retsim": {"threshold": 0.7, "k": 10},
    # Character 5-grams: word 3-gram candidates miss copies in unsegmented scripts and
    # under heavy character noise (experiments/verifier_transfer/verifier_transfer.py; the bound the true pairs
    # among them put on accuracy: docs/decisions/0006-verifier-trained-on-a-mixture.md).
    "minhash": {"threshold": 0.1, "shingle": ShingleConfig("char", 5)},
    "biencoder": {"threshold": 0.5, "k": 10},
    # Static (model2vec) embeddings: candidates at transformer-free cost
    # (benchmarks/peers_static.py rerank).
    "static": {"threshold": 0.8, "k": 20},
}
#: The class of each candidate method, by its ``--method`` name (imported here, not
#: looked up in :data:`neardup.methods.METHODS`, which lists rerank itself).
CANDIDATE_CLASSES: dict[str, type[Method]] = {
    RETSimMethod.name: RETSimMethod,
    MinHashLSH.name: MinHashLSH,
    BiEncoderMethod.name: BiEncoderMethod,
    StaticMethod.name: StaticMethod,
}
SCORERS = ("cross-encoder", "verifier")
#: Shipped model used when ``model`` is None.
DEFAULT_MODELS = {"cross-encoder": "cross-encoder-news", "verifier": "verifier-news"}
#: Candidate method used when ``candidates`` is None: the verifier is cheap per pair, so
#: it takes MinHash's larger, higher-recall candidate set (no neural model at all); the
#: cross-encoder's cost grows with the pairs, so it takes RETSim's smaller one.
DEFAULT_CANDIDATES = {"cross-encoder": "retsim", "verifier": "minhash"}
#: Characters of a text read per wanted token when cutting heads before tokenizing
#: (news averages 4-5 characters per WordPiece token, OCR noise fewer).
_CHARS_PER_TOKEN = 10
_TEXT_KEY, _TEXT_LEN = "rerank_text", "rerank_text_bytes"


def candidate_method(candidates: str, params: dict[str, Any] | None = None) -> Method:
    """The fast method that proposes candidates, with :data:`CANDIDATE_DEFAULTS` under
    ``params``."""
    check_choice("candidate_method", "candidates", candidates, tuple(CANDIDATE_DEFAULTS))
    return build_method(CANDIDATE_CLASSES[candidates], candidates,
                        {**CANDIDATE_DEFAULTS[candidates], **(params or {})})


# -- scorers -----------------------------------------------------------------------------


def _read_meta(directory: Path, kind: str) -> dict[str, Any]:
    path = directory / "model.json"
    if not path.is_file():
        raise FileNotFoundError(f"{directory}: no model.json; not a neardup {kind} model folder.")
    meta = json.loads(path.read_text(encoding="utf-8"))
    if meta.get("kind") != kind:
        raise ValueError(f"{directory}: model.json says kind {meta.get('kind')!r}, not {kind!r}.")
    return meta


def pair_heads(tokenizer: Any, text_a: Sequence[str], text_b: Sequence[str], max_tokens: int,
               **kwargs: Any) -> dict[str, Any]:
    """Tokenize pairs as ``[CLS] a [SEP] b [SEP]``, about ``max_tokens`` tokens of each.

    Texts are first cut to ``max_tokens * 10`` characters (tokenizing a long text to keep
    its head is wasted time), then "longest_first" truncation to ``2 * max_tokens + 3``
    tokens gives each text ``max_tokens`` when both are long, and a short text's spare
    room to the other.
    """
    cut = max_tokens * _CHARS_PER_TOKEN
    return tokenizer(
        [t[:cut] for t in text_a], [t[:cut] for t in text_b],
        truncation="longest_first", max_length=2 * max_tokens + 3, padding=True, **kwargs,
    )


def _length_batches(text_a: Sequence[str], text_b: Sequence[str], batch_size: int, cut: int):
    """Pair positions in batches of similar length (less padding), longest first."""
    lengths = np.fromiter(
        (min(len(a), cut) + min(len(b), cut) for a, b in zip(text_a, text_b)), np.int64, len(text_a)
    )
    order = np.argsort(-lengths, kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class CrossEncoderScorer:
    """Duplicate probability of text pairs from a cross-encoder model folder.

    Parameters
    ----------
    model : str or path
        A shipped cross-encoder name or a folder with ``model.json`` (kind
        ``"cross-encoder"``, ``"max_tokens"`` per text): ``"format": "onnx"`` (an ONNX
        file named in ``"onnx"`` and the tokenizer files, run with ONNX Runtime; written
        by :func:`neardup.train.cross_encoder.export_onnx`, or an
        :func:`neardup.embed.onnx_encoder.export_transformer` folder with ``onnx.json``)
        or ``"format": "transformers"`` (a sequence-classification model with one logit,
        run with PyTorch; written by :func:`neardup.train.cross_encoder.train_cross_encoder`).
    batch_size : int, default 32
    threads : int or None, default None
        Intra-op threads of ONNX Runtime / PyTorch.
    """

    def __init__(self, model: str | os.PathLike, *, batch_size: int = 32,
                 threads: int | None = None) -> None:
        from neardup.models import resolve_model

        self.directory = resolve_model(model, "cross-encoder")
        self.meta = _read_meta(self.directory, "cross-encoder")
        self.max_tokens = int(self.meta.get("max_tokens", 128))
        self.batch_size = check_int("CrossEncoderScorer", "batch_size", batch_size, low=1)
        self.threads = threads
        self._runner: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self.meta.get("format") == "onnx" and (self.directory / "onnx.json").is_file():
            # Written by neardup.embed.onnx_encoder.export_transformer (task
            # "classification"): its runner tokenizes with the bundled tokenizer.json.
            from neardup.embed.onnx_encoder import OnnxTransformer

            runner = OnnxTransformer(self.directory, threads=self.threads)
            self._runner = ("onnx-transformer", runner)
        elif self.meta.get("format") == "onnx":
            import onnxruntime as ort
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.directory, local_files_only=True)

            options = ort.SessionOptions()
            if self.threads is not None:
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
            session = ort.InferenceSession(
                str(self.directory / self.meta["onnx"]), options, providers=["CPUExecutionProvider"]
            )
            names = [i.name for i in session.get_inputs()]

            def run(enc: dict[str, np.ndarray]) -> np.ndarray:
                feed = {n: enc[n].astype(np.int64) for n in names if n in enc}
                return session.run(None, feed)[0].reshape(-1)

            self._runner = ("onnx", run)
        else:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.directory, local_files_only=True)
            net = AutoModelForSequenceClassification.from_pretrained(
                self.directory, local_files_only=True
            ).eval()
            self._runner = ("torch", net)

    def logits(self, text_a: Sequence[str], text_b: Sequence[str]) -> np.ndarray:
        """One logit per pair, float32 (sigmoid gives the probability)."""
        if self._runner is None:
            self._load()
        out = np.zeros(len(text_a), np.float32)
        if not len(text_a):
            return out
        backend, runner = self._runner
        if backend == "onnx-transformer":
            cut = self.max_tokens * _CHARS_PER_TOKEN
            pairs = [(a[:cut], b[:cut]) for a, b in zip(text_a, text_b)]
            return runner.logits(pairs, max_tokens=2 * self.max_tokens + 3,
                                 batch_size=self.batch_size)[:, 0].astype(np.float32)
        cut = self.max_tokens * _CHARS_PER_TOKEN
        batches = _length_batches(text_a, text_b, self.batch_size, cut)
        if backend == "onnx":
            for idx in batches:
                enc = pair_heads(self._tokenizer, [text_a[i] for i in idx],
                                 [text_b[i] for i in idx], self.max_tokens, return_tensors="np")
                out[idx] = runner(dict(enc))
            return out
        return torch_logits(runner, self._tokenizer, text_a, text_b, self.max_tokens,
                            batch_size=self.batch_size, threads=self.threads)

    def score(self, text_a: Sequence[str], text_b: Sequence[str]) -> np.ndarray:
        """Duplicate probability of each pair, float32 in [0, 1]."""
        return _sigmoid(self.logits(text_a, text_b))


def torch_logits(net: Any, tokenizer: Any, text_a: Sequence[str], text_b: Sequence[str],
                 max_tokens: int, *, batch_size: int = 32,
                 threads: int | None = None) -> np.ndarray:
    """Logits of a PyTorch sequence-classification model over pairs (eval mode, no grad)."""
    import torch

    out = np.zeros(len(text_a), np.float32)
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    was_training = net.training
    net.eval()
    try:
        with torch.inference_mode():
            for idx in _length_batches(text_a, text_b, batch_size, max_tokens * _CHARS_PER_TOKEN):
                enc = pair_heads(tokenizer, [text_a[i] for i in idx], [text_b[i] for i in idx],
                                 max_tokens, return_tensors="pt")
                out[idx] = net(**enc).logits.reshape(-1).float().numpy()
    finally:
        net.train(was_training)
        torch.set_num_threads(before)
    return out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-np.clip(x, -60, 60)))).astype(np.float32)


class VerifierScorer:
    """Duplicate probability of document pairs from a verifier model folder
    (``model.json`` kind ``"verifier"``, the classifier pickled with joblib).

    Parameters
    ----------
    model : str or path
        A shipped verifier name or a folder written by
        :func:`neardup.train.verifier.train_verifier`.
    threads : int or None, default None
        Threads for the alignment and RETSim features.
    """

    def __init__(self, model: str | os.PathLike, *, threads: int | None = None) -> None:
        from neardup.models import resolve_model

        self.directory = resolve_model(model, "verifier")
        self.meta = _read_meta(self.directory, "verifier")
        self.features = tuple(self.meta["features"])
        self.threads = threads
        self._classifier: Any = None
        self._thread_control: Any = None
        self._bound: Any = False  # not built yet; None: the model has none
        self._saved_trees: Any = False  # not looked for yet; None: the folder has none
        self._profile_cache: Any = None

    #: Features left out of the first pass of :meth:`decide_positions` (the alignment of
    #: a head inside the other text costs about ten times all the others together).
    deferred_features = ("align_partial",)

    def __getstate__(self) -> dict[str, Any]:
        # The thread controller holds library handles: found again where it is unpickled.
        # The profile cache is the process's own (and refers weakly to its text source).
        return {**self.__dict__, "_thread_control": None, "_profile_cache": None}

    @property
    def profile_cache(self):
        """The :class:`~neardup.methods.profile_cache.ProfileCache` of this scorer's
        documents between the corpus stage's batches."""
        if self._profile_cache is None:
            from neardup.methods.profile_cache import ProfileCache

            self._profile_cache = ProfileCache(self.PROFILE_CACHE_BYTES)
        return self._profile_cache

    #: Memory kept for document profiles between batches (a news story's profile is
    #: tens of KB: its shingle sets and heads), on top of a batch's working memory. Enough
    #: to profile each document of a news collection about once; a smaller cache profiles
    #: documents again as they meet later partners (experiments/rerank_cost/README.md, "Eighth round").
    PROFILE_CACHE_BYTES = 512 << 20

    @property
    def classifier(self) -> Any:
        if self._classifier is None:
            import joblib

            self._classifier = joblib.load(self.directory / self.meta["file"])
        return self._classifier

    #: The tree ensemble's nodes as plain arrays, beside a gradient-boosted model's pickle
    #: (:meth:`TreeEnsembleBound.save`): scoring with them loads no scikit-learn, whose
    #: import and unpickling cost a run more than the trees' predictions
    #: (docs/decisions/0044-openmp-threads-sleep-when-idle.md).
    TREES_FILE = "trees.npz"

    def _trees(self):
        """The model's :class:`~neardup.methods.tree_bound.TreeEnsembleBound` from its
        folder's :attr:`TREES_FILE` when ``model.json`` lists one, else None."""
        if self._saved_trees is False:  # looked for once
            self._saved_trees = None
            if self.TREES_FILE in self.meta.get("files", ()):
                from neardup.methods.tree_bound import TreeEnsembleBound

                self._saved_trees = TreeEnsembleBound.load(self.directory / self.TREES_FILE)
        return self._saved_trees

    def score_positions(self, texts: Sequence[str], left: np.ndarray, right: np.ndarray,
                        dates: np.ndarray | None = None) -> np.ndarray:
        """Probability of each pair (``left[i]``, ``right[i]``) of positions in ``texts``."""
        if len(left) == 0:
            return np.zeros(0, np.float32)
        x = self._features(texts, left, right, dates, self.features)
        return self._predict(x)

    @property
    def profiled(self) -> bool:
        """True when every feature of the model comes from per-document profiles
        (:func:`~neardup.methods.pair_features.document_profiles`): no RETSim feature."""
        from neardup.methods.pair_features import RETSIM_FEATURES

        return not set(self.features) & set(RETSIM_FEATURES)

    @property
    def feature_options(self) -> dict[str, Any]:
        """How the model's features were computed in training, from ``model.json``:
        ``fold_diacritics``, and ``align_chars`` (characters ``align_ratio`` aligns) when
        the model records one."""
        options: dict[str, Any] = {"fold_diacritics": bool(self.meta.get("fold_diacritics", False))}
        if "align_chars" in self.meta:
            options["align_chars"] = int(self.meta["align_chars"])
        return options

    def document_profiles(self, texts: Sequence[str]):
        """:class:`~neardup.methods.pair_features.DocumentProfiles` of raw ``texts`` for
        this model's features (see :meth:`decide_profiles`)."""
        from neardup.methods.pair_features import document_profiles

        return document_profiles(texts, features=self.features, **self.feature_options)

    def decide_positions(self, texts: Sequence[str], left: np.ndarray, right: np.ndarray,
                         dates: np.ndarray | None = None, *,
                         threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """``(score, accept)`` of each pair: ``accept`` is exactly ``score_positions(...)
        >= threshold``; ``score`` is the probability for accepted pairs and, for rejected
        ones, the probability or an upper bound on it below ``threshold``.

        The features but :attr:`deferred_features` are computed first; pairs whose
        probability cannot reach ``threshold`` whatever those are
        (:class:`~neardup.methods.tree_bound.TreeEnsembleBound`, or
        :class:`~neardup.methods.verifier_correction.CorrectedBound` for a verifier
        corrected to labels) are rejected without them. Models without a bound compute
        every feature."""
        left = np.asarray(left, np.int64)
        right = np.asarray(right, np.int64)
        if self.profiled and len(left):
            docs, local = np.unique(np.concatenate([left, right]), return_inverse=True)
            profiles = self.document_profiles([texts[i] for i in docs.tolist()])
            return self.decide_profiles(profiles, local[: left.size], local[left.size:],
                                        None if dates is None else np.asarray(dates)[docs],
                                        threshold=threshold)

        def features(rows, names):
            return self._features(texts, left[rows], right[rows], dates, names)

        return self._decide(features, left.size, threshold)

    def decide_profiles(self, profiles, left: np.ndarray, right: np.ndarray,
                        dates: np.ndarray | None = None, *,
                        threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`decide_positions` of pairs of positions in ``profiles``
        (:meth:`document_profiles`, kept between calls by a caller that meets documents
        again; a model with RETSim features cannot be profiled: see :attr:`profiled`);
        ``dates`` aligned with the profiles."""
        from neardup.methods.pair_features import profile_pair_features

        if not self.profiled:
            raise ValueError("VerifierScorer.decide_profiles: this model reads RETSim "
                             "features, which profiles do not hold; use decide_positions.")
        left = np.asarray(left, np.int64)
        right = np.asarray(right, np.int64)

        def features(rows, names):
            cols = profile_pair_features(profiles, left[rows], right[rows], dates=dates,
                                         features=names, threads=self.threads)
            out = np.empty((left[rows].size, len(names)), np.float32)
            for j, name in enumerate(names):
                out[:, j] = cols[name]
            return out

        return self._decide(features, left.size, threshold)

    def _decide(self, features, n_pairs: int, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        # ``features(rows, names)``: the float32 feature matrix of pairs ``rows``.
        if self._bound is False:
            self._bound = self._trees()
            if self._bound is None:
                from neardup.methods.tree_bound import TreeEnsembleBound
                from neardup.methods.verifier_correction import CorrectedBound

                self._bound = (TreeEnsembleBound.from_classifier(self.classifier)
                               or CorrectedBound.from_classifier(self.classifier))
        if n_pairs == 0:
            return np.zeros(0, np.float32), np.zeros(0, bool)
        every = slice(None)
        deferred = [f for f in self.deferred_features if f in self.features]
        if self._bound is None or not deferred:
            prob = self._predict(features(every, list(self.features)))
            return prob, prob >= threshold
        first = [f for f in self.features if f not in deferred]
        columns = [self.features.index(f) for f in first]
        x = np.zeros((n_pairs, len(self.features)), np.float32)
        x[:, columns] = features(every, first)
        free = np.isin(np.array(self.features), deferred)
        # The same float32 rounding and comparison as the full prediction's: the bound's
        # probability is at least the pair's, so below the threshold the pair's is too.
        prob = self._bound.upper_proba(x, free).astype(np.float32)
        open_ = np.flatnonzero(prob >= threshold)
        if open_.size:
            later = [self.features.index(f) for f in deferred]
            x[np.ix_(open_, later)] = features(open_, deferred)
            prob[open_] = self._predict(x[open_])
        return prob, prob >= threshold

    def features_of(self, texts: Sequence[str], left: np.ndarray, right: np.ndarray,
                    dates: np.ndarray | None = None) -> np.ndarray:
        """The model's features of each pair (``left[i]``, ``right[i]``) of positions in
        ``texts``, as it computes them to score (for correcting it to labels)."""
        return self._features(texts, np.asarray(left, np.int64), np.asarray(right, np.int64),
                              dates, self.features)

    def _features(self, texts, left, right, dates, names) -> np.ndarray:
        from neardup.methods.pair_features import pair_features

        return pair_features(texts, left, right, dates=dates, features=names,
                             threads=self.threads, **self.feature_options)

    def _predict(self, x: np.ndarray) -> np.ndarray:
        trees = self._trees()
        if trees is not None:
            return trees.predict_proba(x).astype(np.float32)  # the classifier's bits
        # One thread: the trees cost little next to the features, and OpenMP threads on
        # a busy machine made them several times dearer (measured on 2 cores).
        classifier = self.classifier
        if self._thread_control is None:  # found once: a scan of the loaded libraries each call
            from threadpoolctl import ThreadpoolController  # cost 4% of rerank's linking

            self._thread_control = ThreadpoolController()
        with self._thread_control.limit(limits=1):
            return classifier.predict_proba(x)[:, 1].astype(np.float32)

    def score(self, text_a: Sequence[str], text_b: Sequence[str]) -> np.ndarray:
        """Probability of each pair of texts (no dates: the date features say missing)."""
        n = len(text_a)
        texts = list(text_a) + list(text_b)
        return self.score_positions(texts, np.arange(n), np.arange(n, 2 * n))


def load_scorer(scorer: str, model: str | os.PathLike | None = None, *, batch_size: int = 32,
                threads: int | None = None) -> CrossEncoderScorer | VerifierScorer:
    """A :class:`CrossEncoderScorer` or :class:`VerifierScorer` (``model`` None: the
    shipped default of that scorer)."""
    check_choice("load_scorer", "scorer", scorer, SCORERS)
    model = DEFAULT_MODELS[scorer] if model is None else model
    if scorer == "cross-encoder":
        return CrossEncoderScorer(model, batch_size=batch_size, threads=threads)
    return VerifierScorer(model, threads=threads)


class _LastScores:
    """The candidate scores of the last sketch scored, shared by every :class:`RerankMethod`
    of this process: a sweep (``neardup tune``, :func:`neardup.eval.evaluate` with a
    sketch cache) builds one method per threshold over one sketch, and the scorer
    dominates the cost. One entry, held through a weak reference to its sketch, so the
    scores go when the sketch does and memory stays one corpus's candidate pairs."""

    def __init__(self) -> None:
        self._entry: tuple | None = None

    def get(self, sketch: Sketch, key: tuple) -> tuple[Pairs, dict] | None:
        entry = self._entry
        if entry is None or entry[0]() is not sketch or entry[1] != key:
            return None
        return entry[2], entry[3]

    def put(self, sketch: Sketch, key: tuple, scored: Pairs) -> tuple[Pairs, dict]:
        guard: dict = {}  # the template guard's mask, computed on first use
        self._entry = (weakref.ref(sketch), key, scored, guard)
        return scored, guard


_LAST_SCORES = _LastScores()


def _template_pairs(texts: Sequence[str], left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """:func:`~neardup.methods.pair_types.figures_disagree` of pairs of positions in raw
    ``texts``, normalized here as the verifier's features normalize them (only the texts
    the pairs use)."""
    if not len(left):
        return np.zeros(0, bool)
    used, where = np.unique(np.concatenate((left, right)), return_inverse=True)
    raw = [texts[i] for i in used.tolist()]
    norm = normalize_batch(raw, NormalizeConfig())
    return figures_disagree(norm, where[: len(left)], where[len(left):]) \
        | names_disagree(raw, where[: len(left)], where[len(left):])


def _text_source(texts: Any) -> Any:
    """What stands for the corpus behind a step's texts, for the profile cache: the
    :class:`~neardup.engine.rows.TextSource` a ``LazyTexts`` reads from (its ``source``;
    the cache keys positions by it); None (nothing kept) for texts given as a sequence.
    The attribute was named ``reader`` until the engine's row sources were unified
    (77fc0e9), and the cache silently kept nothing from then on: 18 profiles a document on
    Reuters-21578 (experiments/rerank_cost/README.md, "Fourth round")."""
    return getattr(texts, "source", None)


def _take_texts(texts: Any, positions: np.ndarray) -> list[str]:
    """``texts[positions]`` as Python strings, from an object with ``take`` (the corpus
    stage's texts, read only now) or a sequence."""
    if hasattr(texts, "take"):
        taken = texts.take(np.asarray(positions, np.int64))
        return taken if isinstance(taken, list) else taken.to_pylist()
    return [texts[i] for i in positions.tolist()]


# -- the method ---------------------------------------------------------------------------


class RerankMethod(Method):
    """Candidates from a fast method, re-scored by a cross-encoder or a light verifier
    (``--method rerank``; see the module docstring).

    Parameters
    ----------
    scorer : {"verifier", "cross-encoder"}, default "verifier"
        What re-scores the candidates.
    model : str or None, default None
        A shipped model name or a model folder of the scorer's kind; None: the shipped
        default (``verifier-news`` or ``cross-encoder-news``).
    threshold : float in [0, 1] or None, default None
        Duplicate probability at which a candidate becomes an edge. Tune it on validation
        data (``neardup tune --method rerank``). None: the threshold tuned on validation
        for the scorer's model and candidates (0.9 for both shipped scorers with their
        default candidates), else 0.5.
    candidates : {"retsim", "minhash", "biencoder", "static"} or None, default None
        The fast method proposing candidate pairs; None: "minhash" for the verifier,
        "retsim" for the cross-encoder (see :data:`DEFAULT_CANDIDATES`). On the
        reuters-news validation split, MinHash at Jaccard 0.1 proposes ~50,000 pairs
        (12 per document) and RETSim ~20,000.
    candidate_params : dict or None, default None
        Its parameters, over :data:`CANDIDATE_DEFAULTS` (e.g. ``{"threshold": 0.6,
        "k": 20}``; on the command line ``--param 'candidate_params={"k": 20}'``).
    max_chars : int, default 20000
        Characters of each raw text kept for re-scoring (the cross-encoder reads only the
        first ``max_tokens`` tokens; the verifier's n-gram features read all it is given).
    batch_size : int, default 32
        Pairs per cross-encoder call.
    threads : int or None, default None
        Threads for the scorer (and the candidate method when it takes ``threads``).
    template_guard : bool, default True
        Give probability 0 to candidate pairs of short notices of similar length whose
        figures differ both ways (:func:`~neardup.methods.pair_types.figures_disagree`):
        dividend or earnings notices of different companies, not copies; and to pairs
        whose aligned words put different names face to face, or that open on different
        companies' names (:func:`~neardup.methods.template_names.names_disagree`). What it
        changes on Reuters-21578 and the labelled sets:
        docs/decisions/0011-rerank-template-guard.md, 0029-template-guard-compares-names.md,
        0036-template-guard-opening-names.md. Recommended: True. False: the
        scorer alone decides.
    low_partners : int or None, default 3
        Over keyed candidates (MinHash): of the candidate pairs estimated below
        ``low_estimate``, each document keeps its ``low_partners`` highest for the scorer
        (a pair is scored when it is among those of either document); pairs at
        ``low_estimate`` or more are all scored. Those low-estimate pairs are mostly false
        and their number a document grows with the corpus; the cap bounds them
        (docs/decisions/0041-rerank-screens-low-estimate-pairs.md). None: every candidate
        pair is scored.
    low_estimate : float in (0, 1], default 0.3
        The estimate under which ``low_partners`` applies.
    accept_estimate : float in (0, 1] or None, default None
        Over MinHash candidates: pairs whose estimate reaches it are accepted without the
        scorer, with probability 1 (the template guard still applies), so near-identical
        copies cost no classifier call. None: every pair is scored.

    Examples
    --------
    >>> m = RerankMethod(scorer="verifier", threshold=0.5)        # doctest: +SKIP
    >>> texts = ["Oil rose 2 pct.", "Oil rose 2 pct!", "Snow in Alps."]   # doctest: +SKIP
    >>> m.find_pairs(m.sketch(texts))                             # doctest: +SKIP
    """

    name = "rerank"
    pair_params = frozenset({"threshold", "template_guard"})

    def __init__(
        self,
        *,
        scorer: str = "verifier",
        model: str | None = None,
        threshold: float | None = None,
        candidates: str | None = None,
        candidate_params: dict[str, Any] | None = None,
        max_chars: int = 20_000,
        batch_size: int = 32,
        threads: int | None = None,
        template_guard: bool = True,
        low_partners: int | None = 3,
        low_estimate: float = 0.3,
        accept_estimate: float | None = None,
    ) -> None:
        caller = "RerankMethod"
        self.scorer = check_choice(caller, "scorer", scorer, SCORERS)
        if model is not None and not isinstance(model, (str, os.PathLike)):
            raise ValueError(
                f"{caller}: parameter 'model' must be a model name or folder; got {model!r}."
            )
        self.model = None if model is None else str(model)
        if candidates is not None:
            check_choice(caller, "candidates", candidates, tuple(CANDIDATE_DEFAULTS))
        self.candidates = candidates
        effective = DEFAULT_CANDIDATES[self.scorer] if candidates is None else candidates
        self._effective_candidates = effective
        self.threshold = threshold  # None: the model's tuned one, looked up on first read
        if candidate_params is not None and not isinstance(candidate_params, dict):
            raise ValueError(
                f"{caller}: parameter 'candidate_params' must be a dict of {effective} "
                f"parameters or None; got {candidate_params!r}."
            )
        self.candidate_params = None if candidate_params is None else dict(candidate_params)
        self.max_chars = check_int(caller, "max_chars", max_chars, low=1)
        self.batch_size = check_int(caller, "batch_size", batch_size, low=1)
        self.threads = None if threads is None else check_int(caller, "threads", threads, low=1)
        if not isinstance(template_guard, bool):
            raise parameter_error(caller, "template_guard", spelled("True or False", "true or false"),
                                  template_guard)
        self.template_guard = template_guard
        self.low_partners = None if low_partners is None else check_int(
            caller, "low_partners", low_partners, low=1)
        self.low_estimate = check_float(caller, "low_estimate", low_estimate, low=0.0, high=1.0)
        self.accept_estimate = None if accept_estimate is None else check_float(
            caller, "accept_estimate", accept_estimate, low=0.0, high=1.0)
        # Built now so that bad candidate parameters fail here, not after sketching.
        params = dict(self.candidate_params or {})
        if "threads" in init_parameters(CANDIDATE_CLASSES[effective]) and self.threads is not None:
            params.setdefault("threads", self.threads)
        self._candidate = candidate_method(effective, params)
        self._scorer: Any = None

    @property
    def threshold(self) -> float:
        """The ``threshold`` given, else the one tuned on validation for the scorer's
        model with these candidates, else 0.5; looked up on first read (not in the
        constructor: no model file is read before the method is used)."""
        if self._threshold is None:
            tuned = tuned_threshold(self.model or DEFAULT_MODELS[self.scorer], self.scorer,
                                    self._effective_candidates)
            self._threshold = 0.5 if tuned is None else tuned
        return self._threshold

    @threshold.setter
    def threshold(self, value: float | None) -> None:
        self._threshold = None if value is None else check_float(
            "RerankMethod", "threshold", value, low=0.0, high=1.0)

    def recommended_cluster(self) -> dict[str, Any]:
        """The scorer model's ``recommended_cluster`` (see
        :func:`neardup.models.recommended_cluster`): for ``verifier-news``, Leiden at
        resolution 0.4, measured held out in ``experiments/verifier_transfer/verifier_clustering.py``."""
        return recommended_cluster(self.model or DEFAULT_MODELS[self.scorer], self.scorer)

    @property
    def candidate(self) -> Method:
        """The candidate method instance."""
        return self._candidate

    def _get_scorer(self) -> CrossEncoderScorer | VerifierScorer:
        if self._scorer is None:
            self._scorer = load_scorer(self.scorer, self.model, batch_size=self.batch_size,
                                       threads=self.threads)
        return self._scorer

    def sketch(self, texts: Sequence[str]) -> Sketch:
        sketch = self._candidate.sketch(texts)
        # Raw text as UTF-8 bytes, ragged: one row-aligned length, one flat byte array,
        # which Sketch.concat stacks in order like any other ragged array.
        encoded = [t[: self.max_chars].encode("utf-8", "surrogatepass") for t in texts]
        sketch.arrays[_TEXT_LEN] = np.fromiter(map(len, encoded), np.int64, len(encoded))
        sketch.ragged[_TEXT_KEY] = np.frombuffer(b"".join(encoded), np.uint8).copy()
        return sketch

    @staticmethod
    def _texts(sketch: Sketch, docs: np.ndarray) -> dict[int, str]:
        sizes = sketch.arrays[_TEXT_LEN]
        offsets = np.zeros(sizes.size + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        data = sketch.ragged[_TEXT_KEY]
        return {
            int(d): data[offsets[d] : offsets[d + 1]].tobytes().decode("utf-8", "surrogatepass")
            for d in docs.tolist()
        }

    def scored_candidates(self, sketch: Sketch, dates: np.ndarray | None = None) -> Pairs:
        """Every candidate pair with its duplicate probability (before ``threshold``; 0
        for the pairs ``template_guard`` rejects), computed once per sketch (and dates):
        the scores of the last sketch scored in this process are kept (:class:`_LastScores`),
        so every point of a threshold sweep shares them. ``dates`` (datetime64[s], NaT
        where unknown) feed the verifier's date features."""
        if _TEXT_KEY not in sketch.ragged:
            raise ValueError(
                "RerankMethod.find_pairs: parameter 'sketch' must come from "
                "RerankMethod.sketch (it keeps the texts re-scoring reads); got another "
                "method's sketch."
            )
        key = (self.sketch_key(), None if dates is None else hashlib.sha1(
            np.ascontiguousarray(dates).view(np.int64).tobytes()).hexdigest())
        # The verifier's state: the scorer dominates the cost, so the scores are kept for
        # the same sketch and dates; the threshold and the guard are applied after.
        kept = _LAST_SCORES.get(sketch, key)
        if kept is None:
            kept = _LAST_SCORES.put(sketch, key, self._score_candidates(sketch, dates))
        scored, guard = kept
        if not self.template_guard or len(scored) == 0:
            return scored
        if "mask" not in guard:
            docs = np.unique(np.concatenate([scored.left, scored.right]))
            texts = self._texts(sketch, docs)
            local = np.searchsorted(docs, np.concatenate([scored.left, scored.right]))
            guard["mask"] = _template_pairs([texts[d] for d in docs.tolist()],
                                            local[: len(scored)], local[len(scored):])
        return Pairs(scored.left, scored.right,
                     np.where(guard["mask"], np.float32(0), scored.score))

    def _score_candidates(self, sketch: Sketch, dates: np.ndarray | None) -> Pairs:
        candidates = self._candidate.find_pairs(sketch).canonical()
        screening = self.capabilities.screening
        if screening is not None and len(candidates):
            # The Screen step over the pairs in memory; their score is the estimate.
            candidates = candidates.select(screened_mask(len(sketch), candidates,
                                                         screening.below, screening.keep))
        if len(candidates) == 0:
            scored = Pairs.empty()
        else:
            # Near-identical pairs (their score is the estimate) skip the scorer.
            certain = self._certain(candidates.score, len(candidates))
            prob = np.ones(len(candidates), np.float32)
            rest = candidates.select(~certain)
            if len(rest):
                prob[~certain] = self._score_pairs(sketch, rest, dates)
            scored = Pairs(candidates.left, candidates.right, prob)
        return scored

    def _certain(self, estimate: np.ndarray | None, n_pairs: int) -> np.ndarray:
        """Pairs accepted without the scorer: estimate at ``accept_estimate`` or more
        (none without an estimate)."""
        if self.accept_estimate is None or estimate is None or not self._keyed:
            return np.zeros(n_pairs, bool)
        return np.asarray(estimate) >= self.accept_estimate

    def _score_pairs(self, sketch: Sketch, pairs: Pairs, dates: np.ndarray | None) -> np.ndarray:
        """The scorer's probability of ``pairs`` (positions in ``sketch``)."""
        docs = np.unique(np.concatenate([pairs.left, pairs.right]))
        texts = self._texts(sketch, docs)
        scorer = self._get_scorer()
        if isinstance(scorer, VerifierScorer):
            local = np.searchsorted(docs, np.concatenate([pairs.left, pairs.right]))
            m = len(pairs)
            doc_dates = None if dates is None else np.asarray(dates)[docs]
            return scorer.score_positions([texts[d] for d in docs.tolist()], local[:m],
                                          local[m:], doc_dates)
        return scorer.score([texts[d] for d in pairs.left.tolist()],
                            [texts[d] for d in pairs.right.tolist()])

    # -- keyed contract: the candidate method's keys, then the scorer on its edges --------

    @property
    def _keyed(self) -> bool:
        # The candidate method verifies from fixed-width rows in the stage's own linking
        # (no link_bucket of its own, which would not re-score).
        base = self._candidate.capabilities
        return base.fixed_width and not base.keyed.links_buckets

    @property
    def capabilities(self) -> Capabilities:
        # Keyed: the candidate method's keys and bucket rule, its fixed-width rows plus the
        # texts (and dates) the scorer reads. Embedding candidates (RETSim, bi-encoder):
        # the vector stage searches the candidate method's rows and hands the pairs above
        # its threshold to score_candidate_rows. Costly: tens of features (alignment,
        # char and word n-grams) or a transformer per pair.
        base = self._candidate.capabilities
        if self._keyed:
            keyed = KeyedCandidates(all_pairs_upto=base.keyed.all_pairs_upto,
                                    star_upto=base.keyed.star_upto)
            arrays = base.reads.arrays
        elif base.vectors is not None:
            keyed, arrays = None, ()
        else:
            return Capabilities()
        screening = None
        if keyed is not None and self.low_partners is not None:
            screening = Screening(below=self.low_estimate, keep=self.low_partners)
        return Capabilities(keyed=keyed, vectors=None if keyed else base.vectors,
                            verification=Verification(arrays=arrays, text_chars=self.max_chars,
                                                      dates=self.scorer == "verifier",
                                                      costly=True),
                            screening=screening)

    def vector_rows(self, sketch: Sketch) -> tuple[np.ndarray, np.ndarray]:
        return self._candidate.vector_rows(sketch)

    #: Most pairs given to the scorer at once by :meth:`score_candidate_rows` (its
    #: working memory per pair bounds the batch: ~140 MB for news stories).
    SCORE_BATCH = 1024

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        return self._candidate.candidate_keys(sketch)

    def score_candidate_rows(self, rows: CandidateRows, left: np.ndarray, right: np.ndarray):
        """The candidate method's check (its permissive threshold), then the scorer's
        probability on the edges that pass it (0 for the others; for edges the verifier
        rejects, possibly an upper bound below the threshold:
        :meth:`VerifierScorer.decide_positions`). Over embedding candidates the vector
        stage has applied the candidate threshold already: every edge is scored."""
        estimate = None
        if self._keyed:
            estimate, passed = self._candidate.score_candidate_rows(rows, left, right)
        else:
            passed = np.ones(len(left), bool)
        return self._score_verified(rows, left, right, passed, estimate)

    def screen_candidate_rows(self, rows: CandidateRows, left: np.ndarray, right: np.ndarray):
        """The candidate method's estimate and check (keyed candidates only)."""
        return self._candidate.score_candidate_rows(rows, left, right)

    def verify_screened_rows(self, rows: CandidateRows, left: np.ndarray, right: np.ndarray):
        """The scorer on edges that passed :meth:`screen_candidate_rows`."""
        estimate = None
        if self.accept_estimate is not None:  # the estimate again: a cheap lookup
            estimate, _ = self._candidate.score_candidate_rows(rows, left, right)
        return self._score_verified(rows, left, right, np.ones(len(left), bool), estimate)

    def _score_verified(self, rows: CandidateRows, left: np.ndarray, right: np.ndarray,
                        passed: np.ndarray, estimate: np.ndarray | None = None,
                        ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`score_candidate_rows` after the candidate check (``passed``, and the
        candidate method's ``estimate`` for ``accept_estimate``)."""
        certain = passed & self._certain(estimate, len(left))
        passing = np.flatnonzero(passed & ~certain)
        prob = np.zeros(len(left), np.float32)
        # The scorer's working memory grows with the pairs it is given (the verifier's
        # shingle arrays: 660 MB for a step of 8,192 news-story pairs,
        # benchmarks/rerank_score_memory.py), so the edges that passed go to it in batches.
        scorer = self._get_scorer() if passing.size else None  # loaded only when needed
        for start in range(0, passing.size, self.SCORE_BATCH):
            keep = passing[start:start + self.SCORE_BATCH]
            # Only the texts of the edges that passed become Python strings: the scorer's
            # features cost per text it is given.
            used, where = np.unique(np.concatenate((left[keep], right[keep])), return_inverse=True)
            a, b = where[: keep.size], where[keep.size:]
            lengths = None
            if isinstance(scorer, VerifierScorer) and scorer.profiled:
                # Documents met in earlier batches keep their profiles: their texts are
                # neither read nor normalized and shingled again.
                # Pairs index the cache's profiles through ``at`` (each used document's
                # row among them), so no profile is copied for the batch.
                profiles, at = scorer.profile_cache.lookup(
                    rows.docs[used], _text_source(rows.texts),
                    lambda missing: scorer.document_profiles(_take_texts(rows.texts, used[missing])))
                dates = None
                if rows.dates is not None:  # only the batch's rows are read
                    dates = np.zeros(len(profiles), rows.dates.dtype)
                    dates[at] = rows.dates[used]
                prob[keep] = scorer.decide_profiles(profiles, at[a], at[b], dates,
                                                    threshold=self.threshold)[0]
                if not scorer.meta.get("fold_diacritics", False):
                    lengths = profiles.lengths[at]  # as the guard's normalization measures them
                texts = None
            elif isinstance(scorer, VerifierScorer):
                # Only the decision counts here: rejected pairs may get an upper bound.
                texts = _take_texts(rows.texts, used)
                dates = None if rows.dates is None else rows.dates[used]
                prob[keep] = scorer.decide_positions(texts, a, b, dates,
                                                     threshold=self.threshold)[0]
            else:
                texts = _take_texts(rows.texts, used)
                prob[keep] = scorer.score([texts[i] for i in a.tolist()],
                                          [texts[i] for i in b.tolist()])
            if self.template_guard:
                accepted = np.flatnonzero(prob[keep] >= self.threshold)
                if lengths is not None:  # only short notices can be templates
                    la, lb = lengths[a[accepted]], lengths[b[accepted]]
                    accepted = accepted[comparable_length_pairs(la, lb) | names_length_pairs(la, lb)]
                if accepted.size:
                    pa, pb = a[accepted], b[accepted]
                    if texts is None:  # read now: only the texts of these pairs
                        need, inverse = np.unique(np.concatenate((pa, pb)), return_inverse=True)
                        guarded = _template_pairs(_take_texts(rows.texts, used[need]),
                                                  inverse[: pa.size], inverse[pa.size:])
                    else:
                        guarded = _template_pairs(texts, pa, pb)
                    prob[keep[accepted[guarded]]] = 0.0
        sure = np.flatnonzero(certain)
        if sure.size:
            prob[sure] = 1.0
            if self.template_guard:  # the guard reads their texts (no profile needed)
                used, where = np.unique(np.concatenate((left[sure], right[sure])), return_inverse=True)
                guarded = _template_pairs(_take_texts(rows.texts, used), where[:sure.size],
                                          where[sure.size:])
                prob[sure[guarded]] = 0.0
        return prob, passed & (prob >= self.threshold)

    def pair_verdict(self, text_a: str, text_b: str,
                     dates: np.ndarray | None = None) -> dict[str, Any]:
        """How a run decides the pair of ``text_a`` and ``text_b``, step by step (for
        ``neardup explain``): ``candidate`` (the candidate method's score, None when the
        two are not candidates, so that a run never scores them), ``probability`` (the
        scorer's, computed even then), ``template`` (the template guard keeps them apart)
        and ``linked`` (this method links them). ``dates``: two datetime64[s] (NaT when
        unknown) for the verifier's date features."""
        sketch = self.sketch([text_a, text_b])
        candidates = self._candidate.find_pairs(sketch)
        one = Pairs(np.array([0]), np.array([1]), np.ones(1, np.float32))
        probability = float(self._score_pairs(sketch, one, dates)[0])
        template = bool(self.template_guard
                        and _template_pairs([text_a, text_b], one.left, one.right)[0])
        return {"candidate": float(candidates.score[0]) if len(candidates) else None,
                "probability": probability, "template": template,
                "linked": bool(len(self.find_pairs(sketch, dates)))}

    def find_pairs(self, sketch: Sketch, dates: np.ndarray | None = None) -> Pairs:
        if len(sketch) < 2:
            return Pairs.empty()
        return self.scored_candidates(sketch, dates).above(self.threshold)

    def match(self, sketch: Sketch, *, dates: np.ndarray | None = None) -> Matches:
        return Matches(self.find_pairs(sketch, dates))
