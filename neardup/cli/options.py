"""Command-line options shared by the commands that run a method (dedup, eval, tune).

Each group is one decorator, so every command offers the same flags with the same help,
and one function per group turns the parsed flags into library objects:

* :func:`method_options` (``--method``, its parameters, shingling and normalization) and
  :func:`method_params_from_options` -> keyword parameters for
  :func:`neardup.methods.make_method`;
* :func:`cluster_options` (``--cluster``, ``--resolution``, ``--max-cluster-size``,
  ``--oversized``, ``--time-window``) and :func:`cluster_config_from_options` -> a
  :class:`~neardup.pipeline.ClusterConfig`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any, TypeVar

import click

from neardup.methods import METHODS, method_parameters
from neardup.pipeline import ClusterConfig
from neardup.text import NormalizeConfig, ShingleConfig

__all__ = [
    "CLUSTER_OPTION_NAMES",
    "DECODE_ERRORS_OPTION",
    "METHOD_OPTION_NAMES",
    "apply_options",
    "cluster_config_from_options",
    "cluster_options",
    "method_options",
    "method_params_from_options",
    "reader_config_from_options",
    "reader_options",
    "run_options",
]

F = TypeVar("F", bound=Callable[..., Any])

# Options whose value goes to the method constructor under the same name (None = not given).
_DIRECT_PARAMS = (
    "threshold",
    "num_perm",
    "bands",
    "rows",
    "verify",
    "max_bucket_pairs",
    "similarity",
    "max_df",
    "weighting",
    "model",
)
_NORMALIZE_FLAGS = (
    "keep_invisible",
    "no_nfkc",
    "no_hyphen_repair",
    "no_homoglyph_fold",
    "no_casefold",
    "keep_punctuation",
)

#: Parameter names (click destinations) of the options :func:`method_options` adds,
#: ``method`` excepted.
METHOD_OPTION_NAMES = (
    *_DIRECT_PARAMS,
    "shingle_unit",
    "ngram_n",
    *_NORMALIZE_FLAGS,
    "spell_correct",
    "spell_max_edit_distance",
    "extra_params",
)
#: Parameter names of the options :func:`cluster_options` adds.
CLUSTER_OPTION_NAMES = (
    "cluster_algorithm", "linkage", "distance_threshold", "resolution", "max_cluster_size",
    "oversized", "time_window_hours",
)

_METHOD_OPTIONS = (
    click.option("--method", "method", type=click.Choice(list(METHODS)), default="minhash",
                 show_default=True, help="Near-duplicate detection method."),
    click.option("--threshold", type=float, default=None,
                 help="Similarity cut-off. minhash/ngram: Jaccard (or containment) in [0, 1], "
                      "default 0.5; simhash: maximum Hamming distance in bits, default 3; "
                      "retsim/biencoder: cosine, default the shipped model's threshold tuned "
                      "on validation (biencoder-news 0.68, retsim-news 0.75), else 0.9; "
                      "rerank: duplicate probability, default the scorer's tuned threshold "
                      "(0.9 with its default candidates). Tune it on labelled validation data."),
    click.option("--num-perm", type=int, default=None,
                 help="minhash: signature length (default 128)."),
    click.option("--bands", type=int, default=None,
                 help="minhash: LSH bands; with --rows overrides the choice from --threshold."),
    click.option("--rows", type=int, default=None, help="minhash: rows per LSH band."),
    click.option("--verify", type=click.Choice(["signature", "exact", "none"]), default=None,
                 help="minhash: confirm candidates by estimated Jaccard (default), exact "
                      "Jaccard, or not at all (every band collision is an edge). exact reads "
                      "the documents' shingle sets: --engine local stores them in --work-dir "
                      "instead of the signatures (8 bytes per distinct shingle plus 8 per "
                      "document)."),
    click.option("--max-bucket-pairs", type=int, default=None,
                 help="minhash: LSH buckets with more members are chained, not fully paired "
                      "(default 50)."),
    click.option("--similarity", type=click.Choice(["jaccard", "containment"]), default=None,
                 help="ngram: Jaccard, or containment |A&B|/min(|A|,|B|) for abridged copies."),
    click.option("--max-df", type=int, default=None,
                 help="ngram: shingles in more documents than this are chained (each "
                      "document compared with its neighbours in two MinHash orders) instead "
                      "of paired all-to-all (default 1000): exact copies are always found, "
                      "the summary counts the shingles and documents concerned; similarity "
                      "stays exact."),
    click.option("--weighting", type=click.Choice(["tf", "binary"]), default=None,
                 help="simhash: shingle votes by occurrence (tf, default) or once (binary)."),
    click.option("--model", default=None,
                 help="biencoder: a shipped model name (all-MiniLM-L6-v2) or a local "
                      "sentence-transformers model directory."),
    click.option("--shingle", "shingle_unit", type=click.Choice(["word", "char"]),
                 default="word", show_default=True, help="Shingle unit."),
    click.option("--ngram", "ngram_n", type=click.IntRange(1, 255), default=None,
                 help="Shingle length in units (default 3 words; try 10-25 for --shingle char)."),
    click.option("--keep-invisible", is_flag=True,
                 help="Do not remove zero-width/format characters."),
    click.option("--no-nfkc", is_flag=True, help="Skip Unicode NFKC normalization."),
    click.option("--no-hyphen-repair", is_flag=True, help="Do not join end-of-line hyphenation."),
    click.option("--no-homoglyph-fold", is_flag=True,
                 help="Do not fold Cyrillic/Greek look-alikes."),
    click.option("--no-casefold", is_flag=True, help="Keep letter case."),
    click.option("--keep-punctuation", is_flag=True, help="Keep punctuation in tokens."),
    click.option("--spell-correct", is_flag=True,
                 help="Correct words to the nearest English dictionary word (SymSpell) before "
                      "shingling; helps n-gram methods on OCR text."),
    click.option("--spell-max-edit-distance", type=click.IntRange(1, 5), default=2,
                 show_default=True, help="Largest edit distance --spell-correct repairs."),
    click.option("--param", "extra_params", multiple=True, metavar="NAME=VALUE",
                 help="Any other method parameter, by its Python name (repeatable), e.g. "
                      "--param rare_fraction=0.25, or for the embedding methods "
                      "--param index=auto|flat|ivf|hnsw (auto: exact up to --param "
                      "exact_limit=50000 rows, IVF above). VALUE is read as JSON when it parses "
                      "(numbers, true/false, null, lists), else as a string. See the "
                      "method's docstring for its parameters."),
)

_CLUSTER_OPTIONS = (
    click.option("--cluster", "cluster_algorithm",
                 type=click.Choice(["auto", "components", "leiden", "louvain", "hac"]),
                 default="auto", show_default=True,
                 help="Connected components, community detection to cut weak bridges "
                      "(leiden, louvain), or agglomerative clustering (hac). auto: the "
                      "clustering the method's model was measured best with on held-out "
                      "sets, else components; today --method rerank with its shipped "
                      "verifier gets leiden at resolution 0.4 (docs/transfer.md), every "
                      "other method components. Leiden and Louvain run "
                      "out of core for exact, minhash, simhash, wminhash and rerank, HAC in memory; "
                      "--engine ray runs Leiden and Louvain for exact, minhash, simhash and rerank "
                      "(per component, in its assign tasks)."),
    click.option("--linkage", type=click.Choice(["average", "single", "complete"]),
                 default="average", show_default=True, help="--cluster hac: linkage."),
    click.option("--hac-distance", "distance_threshold", type=click.FloatRange(0.0, 2.0),
                 default=0.2, show_default=True,
                 help="--cluster hac: merge while the linkage distance (1 - score) is at "
                      "most this."),
    click.option("--resolution", type=float, default=1.0, show_default=True,
                 help="--cluster leiden or louvain: community-detection resolution "
                      "(higher: smaller communities; --cluster auto picks 0.4 for rerank's "
                      "verifier)."),
    click.option("--max-cluster-size", type=int, default=None,
                 help="Flag clusters larger than this as templates/boilerplate."),
    click.option("--oversized", type=click.Choice(["flag", "split"]), default="flag",
                 show_default=True,
                 help="Keep flagged oversized clusters, or leave their members unmerged."),
    click.option("--time-window", "time_window_hours",
                 type=click.FloatRange(min=0.0, min_open=True), default=None,
                 metavar="HOURS",
                 help="Do not merge documents dated more than HOURS apart, unless their "
                      "texts are identical after normalization; such pairs are "
                      "listed in --pairs-out with outside_window=true. News copies appear "
                      "within a day or two, recurring reports reuse wording days apart "
                      "(Sanderson 1997 used 48). Needs dates (--date-field; Reuters SGML "
                      "has them)."),
)


def apply_options(options: tuple[Callable[[F], F], ...], function: F) -> F:
    # click lists options in the order their decorators appear top to bottom, i.e. the
    # reverse of the order they are applied in.
    for option in reversed(options):
        function = option(function)
    return function


def method_options(function: F) -> F:
    """Add ``--method``, the method parameters, ``--shingle``/``--ngram`` and the
    normalization flags to a click command (in that order in ``--help``)."""
    return apply_options(_METHOD_OPTIONS, function)


def cluster_options(function: F) -> F:
    """Add ``--cluster``, ``--resolution``, ``--max-cluster-size``, ``--oversized`` and
    ``--time-window``."""
    return apply_options(_CLUSTER_OPTIONS, function)


def _direct_params(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """Map CLI options onto the method's constructor; reject options it does not take."""
    accepted = set(method_parameters(method))
    params: dict[str, Any] = {}
    given = {k: v for k, v in options.items() if v is not None}
    for name, value in given.items():
        if name not in accepted:
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"option {flag} does not apply to --method {method}.")
        params[name] = value
    if method == "simhash" and "threshold" in params:
        value = params["threshold"]
        if float(value) != int(value):
            raise click.UsageError(
                f"--threshold for simhash is a Hamming distance in bits (an integer); got {value}."
            )
        params["threshold"] = int(value)
    return params


def normalize_config(flags: dict[str, bool]) -> NormalizeConfig:
    """The :class:`NormalizeConfig` the normalization flags describe."""
    return NormalizeConfig(
        remove_invisible=not flags["keep_invisible"],
        nfkc=not flags["no_nfkc"],
        repair_hyphens=not flags["no_hyphen_repair"],
        fold_homoglyphs=not flags["no_homoglyph_fold"],
        casefold=not flags["no_casefold"],
        strip_punctuation=not flags["keep_punctuation"],
        collapse_whitespace=True,
        spell_correct=flags.get("spell_correct", False),
        spell_max_edit_distance=flags.get("spell_max_edit_distance", 2),
    )


def _parse_extra_params(method: str, items: tuple[str, ...]) -> dict[str, Any]:
    """``("name=value", ...)`` -> ``{name: value}``; values parsed as JSON when possible."""
    params: dict[str, Any] = {}
    accepted = method_parameters(method)
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise click.UsageError(f"--param takes NAME=VALUE; got {item!r}.")
        if name not in accepted or name in ("normalize", "shingle"):
            usable = ", ".join(p for p in accepted if p not in ("normalize", "shingle"))
            raise click.UsageError(
                f"--param {name}: --method {method} has no such parameter; it takes: {usable}."
            )
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        params[name] = tuple(value) if isinstance(value, list) else value
    return params


def method_params_from_options(method: str, opts: dict[str, Any], *, seed: int) -> dict[str, Any]:
    """Keyword parameters for ``make_method(method, ...)`` from the parsed options.

    Parameters
    ----------
    method : str
        A name in ``neardup.METHODS``.
    opts : dict
        The command's keyword arguments; must hold every name in
        :data:`METHOD_OPTION_NAMES`.
    seed : int
        Passed on when the method takes a ``seed``.

    Raises
    ------
    click.UsageError
        For an option the method does not take.
    """
    params = _direct_params(method, {name: opts[name] for name in _DIRECT_PARAMS})
    accepted = method_parameters(method)
    shingle_n = opts["ngram_n"]
    if "shingle" in accepted:
        params["shingle"] = ShingleConfig(
            unit=opts["shingle_unit"], n=3 if shingle_n is None else shingle_n
        )
    elif shingle_n is not None or opts["shingle_unit"] != "word":
        raise click.UsageError(f"--shingle/--ngram do not apply to --method {method}.")
    if "normalize" in accepted:
        params["normalize"] = normalize_config(opts)
    if "seed" in accepted:
        params["seed"] = seed
    extra = _parse_extra_params(method, tuple(opts.get("extra_params") or ()))
    clash = sorted(set(extra) & set(params))
    if clash:
        raise click.UsageError(f"--param {clash[0]} repeats an option given by its own flag.")
    return params | extra


# Options that only one clustering algorithm reads: given with another, they would be
# silently ignored.
_ALGORITHM_OPTIONS = (
    ("linkage", "--linkage", ("hac",)),
    ("distance_threshold", "--hac-distance", ("hac",)),
    ("resolution", "--resolution", ("leiden", "louvain")),
)


def _check_algorithm_options(opts: dict[str, Any], sweep: Collection[str]) -> None:
    """UsageError for an option given on the command line that the chosen ``--cluster``
    does not read (defaults are fine); nothing outside a click command or when ``sweep``
    (``tune --grid`` names) varies the algorithm."""
    from click.core import ParameterSource

    context = click.get_current_context(silent=True)
    if context is None or {"cluster.algorithm", "cluster"} & set(sweep):
        return
    algorithm = opts["cluster_algorithm"]
    for name, flag, algorithms in _ALGORITHM_OPTIONS:
        source = context.get_parameter_source(name)
        if source in (None, ParameterSource.DEFAULT) or algorithm in algorithms:
            continue
        needed = " or ".join(f"--cluster {a}" for a in algorithms)
        raise click.UsageError(
            f"{flag} applies to {needed} only; with --cluster {algorithm} it would be "
            f"ignored. Add {needed.split(' or ')[0]} or drop {flag}."
        )
    if (context.get_parameter_source("oversized") not in (None, ParameterSource.DEFAULT)
            and opts["max_cluster_size"] is None
            and "cluster.max_cluster_size" not in sweep):
        raise click.UsageError(
            "--oversized applies to clusters larger than --max-cluster-size; give "
            "--max-cluster-size too, or drop --oversized."
        )


def cluster_config_from_options(
    opts: dict[str, Any], *, seed: int, sweep: Collection[str] = ()
) -> ClusterConfig:
    """The :class:`ClusterConfig` from the options :func:`cluster_options` added.

    Raises
    ------
    click.UsageError
        For an option given on the command line that the chosen ``--cluster`` does not
        read (``--linkage``/``--hac-distance`` without ``hac``, ``--resolution`` without
        ``leiden``/``louvain``, ``--oversized`` without ``--max-cluster-size``), unless
        ``sweep`` (the parameters ``tune --grid`` varies) includes the algorithm or the
        maximum cluster size.
    """
    _check_algorithm_options(opts, sweep)
    return ClusterConfig(
        algorithm=opts["cluster_algorithm"],
        max_cluster_size=opts["max_cluster_size"],
        oversized=opts["oversized"],
        resolution=opts["resolution"],
        seed=seed,
        linkage=opts.get("linkage", "average"),
        distance_threshold=opts.get("distance_threshold", 0.2),
        time_window_hours=opts.get("time_window_hours"),
    )


#: ``--errors``: what to do with invalid UTF-8 (every command that reads files).
DECODE_ERRORS_OPTION = click.option(
    "--errors", "decode_errors", type=click.Choice(["strict", "replace"]), default="strict",
    show_default=True,
    help="Invalid UTF-8: fail naming file and byte offset, or replace with U+FFFD and warn.",
)

_READER_OPTIONS = (
    click.option("--text-field", default="text", show_default=True,
                 help="Field holding the text (JSONL, Parquet, CSV/TSV; for Reuters SGML "
                      "'text' = title + body, or 'body', 'title')."),
    click.option("--id-field", default=None,
                 help="Field holding a unique document id (default: the row number)."),
    click.option("--date-field", default=None,
                 help="Field holding a date (parsed; optional)."),
    DECODE_ERRORS_OPTION,
    click.option("--batch-size", type=click.IntRange(min=1), default=10_000,
                 show_default=True, help="Documents per batch (bounds memory for raw text)."),
    click.option("--limit", type=click.IntRange(min=0), default=None,
                 help="Read at most this many documents."),
)

_RUN_OPTIONS = (
    click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                 help="Seeds hashing, permutations and community detection."),
    click.option("--progress/--no-progress", default=None,
                 help="Show progress bars (default: when stderr is a terminal)."),
    click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors."),
)


def reader_options(function: F) -> F:
    """Add ``--text-field``, ``--id-field``, ``--date-field``, ``--errors``,
    ``--batch-size`` and ``--limit``."""
    return apply_options(_READER_OPTIONS, function)


def run_options(function: F) -> F:
    """Add ``--seed``, ``--progress/--no-progress`` and ``--quiet``."""
    return apply_options(_RUN_OPTIONS, function)


def reader_config_from_options(opts: dict[str, Any]):
    """The :class:`~neardup.io.ReaderConfig` from the options :func:`reader_options` added."""
    from neardup.io import ReaderConfig

    return ReaderConfig(
        text_field=opts["text_field"],
        id_field=opts["id_field"],
        date_field=opts["date_field"],
        errors=opts["decode_errors"],
        batch_size=opts["batch_size"],
        limit=opts["limit"],
    )
