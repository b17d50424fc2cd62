"""Threshold tuning on a validation split, with a protocol that cannot touch test data.

Silcock et al. (2022, section 3.2) select every hyperparameter on the NEWS-COPY
validation day and use the test days only to report results; the same split discipline
as sentence-transformers' threshold sweeps. :func:`tune` enforces it by construction:

* it refuses ``split="test"``;
* it selects the requested split *first* and passes only that subset on, so no method
  ever sees a text from another split (``tests/eval/test_tuning.py`` proves it by
  recording every text the method sketches);
* the result records a content hash of the data it was tuned on, so a report can check
  that it evaluates on different data.

Each grid point is a full run (sketch, pairs, clusters) scored by ARI; the best point
(ties: the first in grid order) becomes :attr:`TuningResult.params`, ready for
``evaluate(test, method, params=result.params, cluster=result.cluster)`` or
``neardup eval --split test --from-tuning FILE``.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from neardup.errors import InputError
from neardup.eval.evaluate import build_method, cluster_config, evaluate
from neardup.eval.labeled import LabeledCorpus
from neardup.io import atomic_path
from neardup.methods import METHODS, method_parameters
from neardup.params import RENAMED, group
from neardup.pipeline import ClusterConfig
from neardup.progress import progress_bar

#: Grid names that sweep a clustering parameter (neardup.params' cluster group).
_CLUSTER_GRID_NAMES = frozenset(p.name for p in group("cluster"))

__all__ = [
    "DEFAULT_GRIDS",
    "FORBIDDEN_SPLITS",
    "TuningResult",
    "default_grid",
    "load_tuning",
    "tune",
]

#: Threshold sweeps used when ``grid`` is None. Jaccard/containment thresholds for
#: minhash and ngram, Hamming distances in bits (out of 64) for simhash; exact has
#: nothing to tune.
DEFAULT_GRIDS: dict[str, dict[str, list]] = {
    "minhash": {
        "threshold": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    },
    "ngram": {
        "threshold": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    },
    "simhash": {"threshold": list(range(0, 21))},
    "exact": {},
    "sanderson": {"threshold": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]},
    "spotsigs": {"threshold": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]},
    "retsim": {"threshold": [0.6, 0.65, 0.7, 0.75, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9, 0.92, 0.94, 0.96]},
    "retsim-partial": {
        "threshold": [0.6, 0.65, 0.7, 0.75, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9, 0.92, 0.94, 0.96]
    },
    # Fine-tuned models put copies at cosine 0.95-0.99: the grid reaches that far.
    "biencoder": {"threshold": [0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.94, 0.95,
                                0.96, 0.97, 0.98, 0.99]},
    # Static embeddings spread less than a transformer's: copies and neighbours both
    # sit higher, so the grid is finer near the top.
    "static": {"threshold": [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.94, 0.95, 0.96,
                             0.97, 0.98, 0.99]},
    "wminhash": {
        "threshold": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    },
    # Duplicate probability; the scorer runs once per sweep (scores are cached on the sketch).
    "rerank": {
        "threshold": [0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98]
    },
}

#: Split names :func:`tune` refuses (compared case-insensitively).
FORBIDDEN_SPLITS = frozenset({"test"})

_FORMAT = "neardup-tuning/1"
#: Metrics kept for each grid point (the sweep table and plots of ARI vs threshold).
POINT_METRICS = (
    "ari", "f1", "precision", "recall", "mcc", "v_measure", "n_pred_clusters", "n_pairs",
    "seconds",
)


@dataclass
class TuningResult:
    """A finished sweep: every grid point's scores and the chosen parameters.

    Attributes
    ----------
    method : str
    split : str or None
        The split tuned on (None: the corpus had no splits).
    params : dict
        Chosen method parameters, complete and JSON-ready (nested configs as dicts):
        pass them to :func:`neardup.eval.evaluate` or ``build_method``.
    cluster : dict
        Clustering parameters of the chosen point (:class:`ClusterConfig` fields).
    grid : dict of str -> list
        The values swept, by parameter ("shingle.n" names a field of a nested config).
    base_params : dict
        Fixed method parameters the grid was applied to (JSON-ready).
    points : list of dict
        One per grid point, in grid order: ``{"values": {...}, "ari": ..., "f1": ...,
        "precision", "recall", "mcc", "v_measure", "n_pred_clusters", "n_pairs",
        "seconds"}``.
    best_index : int
        Position in ``points`` of the chosen point (highest ARI, first on ties).
    data_hash : str
        :meth:`LabeledCorpus.content_hash` of the tuning data.
    n_docs, n_true_clusters : int
        Size of the tuning data.
    metric : str
        The selection metric ("ari").
    """

    method: str
    split: str | None
    params: dict[str, Any]
    cluster: dict[str, Any]
    grid: dict[str, list]
    base_params: dict[str, Any]
    points: list[dict[str, Any]]
    best_index: int
    data_hash: str
    n_docs: int
    n_true_clusters: int
    metric: str = "ari"
    version: str = field(default="")

    @property
    def best(self) -> dict[str, Any]:
        """The chosen grid point."""
        return self.points[self.best_index]

    @property
    def best_score(self) -> float:
        """The chosen point's ARI on the tuning split."""
        return float(self.best[self.metric])

    def cluster_config(self) -> ClusterConfig:
        return ClusterConfig(**self.cluster)

    def to_dict(self) -> dict[str, Any]:
        return {"format": _FORMAT, **asdict(self)}

    def to_json(self) -> str:
        """The JSON text :meth:`save` writes."""
        return json.dumps(self.to_dict(), indent=2, default=_json_default) + "\n"

    def save(self, path: str | os.PathLike) -> None:
        """Write the result as JSON, atomically (see :func:`neardup.io.atomic_path`)."""
        text = self.to_json()
        with atomic_path(path) as temporary:
            Path(temporary).write_text(text, encoding="utf-8")


def _json_default(value: Any) -> Any:
    if hasattr(value, "get_params"):
        return value.get_params()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} {value!r:.60} as JSON")


def load_tuning(path: str | os.PathLike) -> TuningResult:
    """Read a file written by :meth:`TuningResult.save`.

    Raises
    ------
    InputError
        If the file is missing, not JSON, or not a neardup tuning file.
    """
    where = os.fspath(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{where}: no such file.") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{where}: not a readable JSON file ({exc}).") from None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise InputError(
            f"{where}: not a neardup tuning file (expected \"format\": {_FORMAT!r}). Write "
            "one with `neardup tune ... --out FILE` or TuningResult.save()."
        )
    data = dict(data)
    data.pop("format")
    try:
        result = TuningResult(**data)
    except TypeError as exc:
        raise InputError(f"{where}: malformed tuning file ({exc}).") from None
    if result.method not in METHODS:
        raise InputError(
            f"{where}: unknown method {result.method!r}; this neardup has "
            f"{', '.join(repr(m) for m in METHODS)}."
        )
    if not 0 <= result.best_index < len(result.points):
        raise InputError(f"{where}: malformed tuning file (best_index out of range).")
    return result


def default_grid(method: str) -> dict[str, list]:
    """The default sweep for ``method`` (see :data:`DEFAULT_GRIDS`).

    Raises
    ------
    ValueError
        For a method without a default grid (pass ``grid=`` explicitly).
    """
    if method not in DEFAULT_GRIDS:
        if method not in METHODS:
            build_method(method)  # the standard unknown-method error
        raise ValueError(
            f"tune: method {method!r} has no default grid; pass grid={{'threshold': [...]}}."
        )
    return {name: list(values) for name, values in DEFAULT_GRIDS[method].items()}


def _check_split(split: str | None) -> None:
    if split is not None and split.strip().casefold() in FORBIDDEN_SPLITS:
        raise ValueError(
            f"tune: parameter 'split' must not be {split!r}. Tuning on the test split would "
            "choose the threshold that looks best on the very data the result is reported "
            "on, which makes the test score optimistic. Tune on the validation split, then "
            "report on test: evaluate(corpus.select_split('test'), method, "
            "params=result.params) or `neardup eval --split test --from-tuning FILE`."
        )


def _json_params(method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Parameters in JSON form (nested configs as dicts), validated by building once."""
    built = build_method(method, params)
    given = dict(params or {})
    full = built.get_params()
    return {name: full[name] for name in given}


def _check_grid(method: str, grid: Mapping[str, Sequence], base: dict[str, Any]) -> dict:
    accepted = method_parameters(method)
    checked: dict[str, list] = {}
    for name, values in grid.items():
        head = name.split(".", 1)[0]
        if head not in accepted:
            raise ValueError(
                f"tune: grid parameter {name!r} is not a parameter of method {method!r}; it "
                f"accepts: {', '.join(accepted)}."
            )
        if name in base or ("." in name and head in base and not isinstance(base[head], dict)):
            raise ValueError(
                f"tune: parameter {name!r} is both fixed (base_params) and swept (grid); "
                "give it in one place only."
            )
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ValueError(
                f"tune: grid values for {name!r} must be a non-empty list; got {values!r:.60}."
            )
        checked[name] = list(values)
    return checked


def _cluster_field(method: str, name: str) -> str | None:
    """The :class:`ClusterConfig` field a grid name sweeps, or None for a method
    parameter. Clustering parameters are named as everywhere (:mod:`neardup.params`:
    ``cluster``, ``resolution``, ``distance_threshold``, ...); the older
    ``cluster.<field>`` names still work. A method's own parameter of the same name wins
    (sanderson's ``time_window_hours``), as in :func:`neardup.dedup`."""
    schema_name = RENAMED.get(name, name)
    if schema_name not in _CLUSTER_GRID_NAMES or (name == schema_name and name in
                                                  method_parameters(method)):
        if name.startswith("cluster."):
            listed = ", ".join(sorted(_CLUSTER_GRID_NAMES))
            raise ValueError(f"tune: grid parameter {name!r} is not a clustering parameter; "
                             f"clustering accepts: {listed}.")
        return None
    return "algorithm" if schema_name == "cluster" else schema_name


def _check_cluster_grid(grid: Mapping[str, Sequence], names: list[str]) -> dict:
    """Validate the clustering entries of a grid (non-empty lists)."""
    checked: dict[str, list] = {}
    for name in names:
        values = grid[name]
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ValueError(
                f"tune: grid values for {name!r} must be a non-empty list; got {values!r:.60}."
            )
        checked[name] = list(values)
    return checked


def _point_params(method: str, base: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    params = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for name, value in values.items():
        if "." in name:
            head, sub = name.split(".", 1)
            if head not in params:
                params[head] = build_method(method).get_params()[head]
            params[head] = {**params[head], sub: value}
        else:
            params[name] = value
    return params


def tune(
    corpus: LabeledCorpus,
    method: str,
    *,
    split: str | None = "validation",
    grid: Mapping[str, Sequence] | None = None,
    base_params: Mapping[str, Any] | None = None,
    cluster: ClusterConfig | Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> TuningResult:
    """Sweep ``method``'s parameters on one split and keep the values with the best ARI.

    Parameters
    ----------
    corpus : LabeledCorpus
        Labeled data; only the documents of ``split`` are used.
    method : str
        A name in ``neardup.METHODS``.
    split : str or None, default "validation"
        The split to tune on. "test" is refused (ValueError). None is allowed only for a
        corpus without splits (data you have already held out).
    grid : dict of str -> list, or None
        Values to sweep, by parameter name; several parameters give their Cartesian
        product, in the order given (the last varies fastest). A dotted name sweeps a
        field of a nested config, e.g. ``{"shingle.n": [3, 5, 7]}``; a clustering
        parameter's name (:mod:`neardup.params`: ``cluster``, ``distance_threshold``,
        ``resolution``, ``time_window_hours``, ...) sweeps it, e.g.
        ``{"distance_threshold": [0.1, 0.2]}`` with ``cluster={"algorithm": "hac"}``
        (the older ``cluster.distance_threshold`` spelling still works). None uses
        :func:`default_grid`; ``{}`` evaluates ``base_params`` once (nothing to tune,
        as for "exact").
    base_params : dict or None
        Fixed method parameters (nested configs as objects or dicts).
    cluster : ClusterConfig, dict or None
        Clustering for every point (default: connected components); clustering grid
        names override its fields point by point.
    progress : bool or None, default False
        Progress bar over grid points.

    Returns
    -------
    TuningResult
        All points and the chosen parameters; ``.save(path)`` writes them as JSON.

    Raises
    ------
    ValueError
        For ``split="test"``, an unknown split, a corpus with splits but ``split=None``,
        grid names the method does not take, or invalid values (checked for every point
        before any run).

    Examples
    --------
    >>> result = tune(corpus, "minhash", split="validation")  # doctest: +SKIP
    >>> test = corpus.select_split("test")  # doctest: +SKIP
    >>> evaluate(test, "minhash", params=result.params, cluster=result.cluster)  # doctest: +SKIP
    """
    import neardup

    _check_split(split)
    if not isinstance(corpus, LabeledCorpus):
        raise ValueError(
            f"tune: parameter 'corpus' must be a LabeledCorpus; got {type(corpus).__name__}."
        )
    if split is None:
        if corpus.splits is not None:
            raise ValueError(
                "tune: parameter 'split' must name the split to tune on, because the corpus "
                f"has splits ({', '.join(repr(s) for s in corpus.split_names)}); got None."
            )
        data = corpus
    else:
        data = corpus.select_split(split)
    # From here on only the selected split exists for this function: no other text can
    # reach a method.
    del corpus
    config = cluster_config(cluster)
    base = _json_params(method, base_params)
    given = default_grid(method) if grid is None else grid
    # "cluster.<field>" names sweep a clustering parameter (e.g. HAC's distance threshold)
    # together with the method's own.
    fields = {name: _cluster_field(method, name) for name in given}
    cluster_names = [name for name, found in fields.items() if found is not None]
    method_grid = {k: v for k, v in given.items() if k not in cluster_names}
    sweep = {**_check_grid(method, method_grid, base), **_check_cluster_grid(given, cluster_names)}
    names = list(sweep)
    combos = [dict(zip(names, combo)) for combo in itertools.product(*sweep.values())]
    point_params = [
        _point_params(method, base, {k: v for k, v in values.items() if k not in cluster_names})
        for values in combos
    ]
    point_configs = [
        cluster_config({**config.get_params(), **{
            fields[k]: v for k, v in values.items() if k in cluster_names
        }})
        for values in combos
    ]
    for params in point_params:  # fail on a bad value before hours of sweeping
        build_method(method, params)
    points: list[dict[str, Any]] = []
    sketches: dict[str, Any] = {}  # one corpus sketch per distinct sketch_key
    best_index = 0
    best_params: dict[str, Any] = {}
    with progress_bar(f"tuning {method}", total=len(combos), unit="points",
                      enabled=progress) as advance:
        for index, (values, params, point_config) in enumerate(
            zip(combos, point_params, point_configs)
        ):
            report = evaluate(
                data, method, params=params, cluster=point_config, sketch_cache=sketches
            )
            point = {"values": values, **{m: report[m] for m in POINT_METRICS}}
            points.append(point)
            # Strictly greater: ties keep the first point in grid order.
            if index == 0 or _score(point) > _score(points[best_index]):
                best_index = index
                best_params = report["params"]
                config = point_config
            advance(1)
    return TuningResult(
        method=method,
        split=split,
        params=best_params,
        cluster=config.get_params(),
        grid=sweep,
        base_params=base,
        points=points,
        best_index=best_index,
        data_hash=data.content_hash(),
        n_docs=len(data),
        n_true_clusters=int(len(set(data.clusters.tolist()))),
        version=neardup.__version__,
    )


def _score(point: dict[str, Any]) -> float:
    value = float(point["ari"])
    return -math.inf if math.isnan(value) else value
