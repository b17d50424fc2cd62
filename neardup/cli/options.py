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
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from neardup.graph.keep import KEEP_RULES, KeepPolicy, record_values
from neardup.methods import METHODS, method_parameters
from neardup.pipeline import ClusterConfig
from neardup.text import NormalizeConfig, ShingleConfig

__all__ = [
    "CLUSTER_OPTION_NAMES",
    "DECODE_ERRORS_OPTION",
    "METHOD_OPTION_NAMES",
    "OPTION_RULES",
    "apply_options",
    "check_option_rules",
    "cluster_config_from_options",
    "cluster_options",
    "method_options",
    "method_params_from_options",
    "reader_config_from_options",
    "keep_options",
    "keep_policy_from_options",
    "keep_values_from_options",
    "reader_options",
    "run_options",
    "PATH_OR_URL",
    "STORAGE_OPTION",
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
    """Map CLI options onto the method's constructor (:func:`check_option_rules` has
    refused the options it does not take)."""
    accepted = set(method_parameters(method))
    params = {k: v for k, v in options.items() if v is not None and k in accepted}
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
            from neardup.cli.errors import FLAGS

            # Each parameter as the command line sets it: its own flag, else --param.
            usable = ", ".join(FLAGS.get(p, f"--param {p}=...") for p in accepted
                               if p not in ("normalize", "shingle"))
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
        For an option the method does not take, or another option that would be
        ignored (:func:`check_option_rules`).
    """
    check_option_rules({**opts, "method": method})
    params = _direct_params(method, {name: opts[name] for name in _DIRECT_PARAMS})
    accepted = method_parameters(method)
    shingle_n = opts["ngram_n"]
    if "shingle" in accepted:
        params["shingle"] = ShingleConfig(
            unit=opts["shingle_unit"], n=3 if shingle_n is None else shingle_n
        )
    if "normalize" in accepted:
        params["normalize"] = normalize_config(opts)
    if "seed" in accepted:
        params["seed"] = seed
    extra = _parse_extra_params(method, tuple(opts.get("extra_params") or ()))
    clash = sorted(set(extra) & set(params))
    if clash:
        raise click.UsageError(f"--param {clash[0]} repeats an option given by its own flag.")
    return params | extra


# --------------------------------------------------------------------------- ignored options
#
# One rule for every command: an option given on the command line that the run would
# not read is a usage error (exit 2) naming the option and the one that makes it
# inapplicable. The table below is the only place that says when an option is read.


@dataclass
class _Situation:
    """What decides whether an option is read: the parsed options and, once known, the
    method object and the clustering it resolves to."""

    opts: dict[str, Any]
    method: Any = None  # a Method, when known
    algorithm: str | None = None  # the resolved clustering, when known

    @property
    def method_name(self) -> str:
        return self.opts.get("method") or ""

    def accepted(self) -> tuple[str, ...]:
        name = self.method_name
        return tuple(method_parameters(name)) if name in METHODS else ()

    def stage(self) -> str | None:
        """Which stage runs: "memory" or "ray" (the engines), "keyed" or "vector" (the
        local engine's out-of-core stages), "fallback" (the local engine runs it in
        memory), None when not known yet (no method object)."""
        engine = self.opts.get("engine", "local")
        if engine != "local":
            return engine
        if self.method is None:
            return None
        from neardup.engine.support import placement

        placed = placement(self.method, self.algorithm or "components", "local")
        return "fallback" if placed.fallback else placed.stage

    def engine_text(self) -> str:
        if self.stage() == "fallback":
            return (f"--method {self.method_name} and --cluster {self.algorithm}, which "
                    "--engine local runs in memory (see --engine)")
        return f"--engine {self.opts.get('engine', 'local')}"


@dataclass(frozen=True)
class _Rule:
    """Option ``name`` (click destination, spelt ``flag``) is read only where ``applies``
    (None: not known yet, so not refused); ``scope`` says where, ``current`` what the
    user has instead, ``add`` what to add for it to apply (None: only dropping helps)."""

    name: str
    flag: str
    scope: str | Callable[[_Situation], str]
    applies: Callable[[_Situation], bool | None]
    current: Callable[[_Situation], str]
    add: str | None = None
    counts: Callable[[Any], bool] = lambda value: True  # which values are "given"
    swept_by: tuple[str, ...] = ()  # tune --grid names that make it apply
    commands: tuple[str, ...] | None = None  # None: every command that has the option


def _methods_taking(parameter: str) -> str:
    names = [m for m in METHODS if parameter in method_parameters(m)]
    return "--method " + (" or ".join(names) if len(names) < 3
                          else ", ".join(names[:-1]) + " or " + names[-1])


def _method_rule(name: str, flag: str, parameter: str) -> _Rule:
    return _Rule(name, flag, lambda s: _methods_taking(parameter),
                 lambda s: parameter in s.accepted() if s.method_name in METHODS else None,
                 lambda s: f"--method {s.method_name}")


def _algorithm(s: _Situation) -> str:
    return s.algorithm or s.opts.get("cluster_algorithm") or "auto"


def _out_of_core(s: _Situation) -> bool | None:
    stage = s.stage()
    return None if stage is None else stage in ("keyed", "vector")


def _names_a_url(opts: dict[str, Any]) -> bool:
    """Whether an input or an output of the command is a URL (``--storage-option`` is read
    for those only)."""
    from neardup.io.locations import is_url

    outputs = [opts.get(k) for k in ("clusters_out", "pairs_out", "out", "report", "html")]
    return any(is_url(p) for p in (*opts.get("inputs", ()), *outputs) if p is not None)


_SEED_CLUSTERINGS = ("leiden", "louvain")

#: Every option that some setting of another option makes the run ignore.
OPTION_RULES: tuple[_Rule, ...] = (
    *(_method_rule(name, "--" + name.replace("_", "-"), name) for name in _DIRECT_PARAMS),
    _method_rule("shingle_unit", "--shingle", "shingle"),
    _method_rule("ngram_n", "--ngram", "shingle"),
    *(_method_rule(name, "--" + name.replace("_", "-"), "normalize")
      for name in (*_NORMALIZE_FLAGS, "spell_correct")),
    _Rule("spell_max_edit_distance", "--spell-max-edit-distance", "--spell-correct",
          lambda s: bool(s.opts.get("spell_correct")), lambda s: "no --spell-correct",
          add="--spell-correct"),
    _Rule("linkage", "--linkage", "--cluster hac", lambda s: _algorithm(s) == "hac",
          lambda s: f"--cluster {s.opts.get('cluster_algorithm')}", add="--cluster hac",
          swept_by=("cluster.algorithm", "cluster")),
    _Rule("distance_threshold", "--hac-distance", "--cluster hac",
          lambda s: _algorithm(s) == "hac",
          lambda s: f"--cluster {s.opts.get('cluster_algorithm')}", add="--cluster hac",
          swept_by=("cluster.algorithm", "cluster")),
    _Rule("resolution", "--resolution", "--cluster leiden or --cluster louvain",
          lambda s: s.opts.get("cluster_algorithm") in ("leiden", "louvain"),
          lambda s: f"--cluster {s.opts.get('cluster_algorithm')}", add="--cluster leiden",
          swept_by=("cluster.algorithm", "cluster")),
    _Rule("oversized", "--oversized", "clusters larger than --max-cluster-size",
          lambda s: s.opts.get("max_cluster_size") is not None,
          lambda s: "no --max-cluster-size", add="--max-cluster-size N",
          swept_by=("cluster.max_cluster_size",)),
    _Rule("seed", "--seed", lambda s: f"{_methods_taking('seed')}, or --cluster leiden or louvain",
          lambda s: (None if s.method_name not in METHODS else "seed" in s.accepted()
                     or (s.algorithm in _SEED_CLUSTERINGS if s.algorithm is not None
                         else s.opts.get("cluster_algorithm") in (*_SEED_CLUSTERINGS, "auto"))),
          lambda s: f"--method {s.method_name} and --cluster {_algorithm(s)}",
          commands=("dedup",)),
    _Rule("ray_address", "--ray-address", "--engine ray",
          lambda s: s.opts.get("engine") == "ray", lambda s: f"--engine {s.opts.get('engine')}",
          add="--engine ray"),
    _Rule("ray_shard_rows", "--ray-shard-rows", "--engine ray",
          lambda s: s.opts.get("engine") == "ray", lambda s: f"--engine {s.opts.get('engine')}",
          add="--engine ray"),
    *(_Rule(name, flag, "the out-of-core stages of --engine local", _out_of_core,
            _Situation.engine_text)
      for name, flag in (("work_dir", "--work-dir"), ("memory_limit", "--memory-limit"),
                         ("resume", "--resume"))),
    _Rule("partitions", "--partitions", "the keyed out-of-core stage of --engine local and "
          "to --engine ray", lambda s: (None if s.stage() is None
                                        else s.stage() in ("keyed", "ray")),
          _Situation.engine_text),
    _Rule("resume", "--resume", "a run kept in --work-dir",
          lambda s: s.opts.get("work_dir") is not None, lambda s: "no --work-dir",
          add="--work-dir DIR (the directory of the run to continue)"),
    _Rule("time_window_hours", "--time-window",
          "documents with dates (--date-field FIELD, or Reuters SGML inputs)",
          lambda s: (None if "inputs" not in s.opts else s.opts.get("date_field") is not None
                     or any(str(p).lower().endswith(".sgm") for p in s.opts["inputs"])),
          lambda s: "no --date-field", add="--date-field FIELD", commands=("dedup",)),
    _Rule("storage_options", "--storage-option",
          "inputs and outputs given as URLs (s3://, gs://, memory://, ...)",
          lambda s: None if "inputs" not in s.opts else _names_a_url(s.opts),
          lambda s: "only local paths"),
    _Rule("progress", "--progress", "runs without -q/--quiet",
          lambda s: not s.opts.get("quiet"), lambda s: "-q/--quiet",
          counts=lambda value: value is True),
)


def _given(context: click.Context | None, opts: dict[str, Any], name: str) -> bool:
    """Whether option ``name`` was set by the user (command line, environment)."""
    from click.core import ParameterSource

    if context is not None:
        return context.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)
    return opts.get(name) not in (None, False)


def check_option_rules(
    opts: dict[str, Any], *, method: Any = None, algorithm: str | None = None,
    sweep: Collection[str] = (),
) -> None:
    """UsageError for the first option the user gave that the run would ignore
    (:data:`OPTION_RULES`), naming it and the option that makes it inapplicable.

    ``method`` (a Method object) and ``algorithm`` (the resolved clustering), when given,
    settle the rules that depend on them (which stage ``--engine local`` runs); before
    they are known those rules pass. ``sweep``: the parameters ``tune --grid`` varies.
    Options that the current command does not have are skipped.
    """
    context = click.get_current_context(silent=True)
    command = context.command.name if context is not None else None
    situation = _Situation(opts, method, algorithm)
    for rule in OPTION_RULES:
        if rule.name not in opts or (rule.commands is not None and command not in rule.commands):
            continue
        if not _given(context, opts, rule.name) or not rule.counts(opts[rule.name]):
            continue
        if set(rule.swept_by) & set(sweep):
            continue
        if rule.applies(situation) is not False:
            continue
        scope = rule.scope(situation) if callable(rule.scope) else rule.scope
        remedy = (f"Add {rule.add} or drop {rule.flag}." if rule.add is not None
                  else f"Drop {rule.flag}.")
        raise click.UsageError(
            f"{rule.flag} applies to {scope} only; with {rule.current(situation)} it would "
            f"be ignored. {remedy}"
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
    check_option_rules(opts, sweep=sweep)
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


class _PathOrUrl(click.ParamType):
    """A local path (as a :class:`pathlib.Path`) or a URL fsspec reads (kept as a string:
    a Path would fold ``s3://`` into ``s3:/``)."""

    name = "path"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from pathlib import Path

        from neardup.io.locations import locate

        if isinstance(value, Path):
            return value
        location = locate(value)
        return Path(location.path) if location.local else location.url


#: The type of INPUT arguments and output options that may name a URL (docs/storage.md).
PATH_OR_URL = _PathOrUrl()


def _storage_options(ctx: Any, param: Any, values: tuple[str, ...]) -> dict[str, Any] | None:
    """``("KEY=VALUE", ...)`` -> ``{KEY: VALUE}``, VALUE read as JSON when it parses."""
    if not values:
        return None
    options: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"takes KEY=VALUE; got {item!r}.", ctx=ctx, param=param)
        try:
            options[key.strip()] = json.loads(raw)
        except ValueError:
            options[key.strip()] = raw
    return options


#: ``--storage-option``: fsspec options for inputs and outputs given as URLs.
STORAGE_OPTION = click.option(
    "--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE",
    callback=_storage_options,
    help="An option of the filesystem of INPUT and output URLs (s3://, gs://, memory://; "
         "repeatable), e.g. --storage-option endpoint_url=http://127.0.0.1:9000 or "
         "--storage-option anon=true; VALUE is read as JSON when it parses. Credentials "
         "otherwise come from the environment (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...) and "
         "fsspec's configuration (docs/storage.md).")

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
        storage_options=opts.get("storage_options"),
    )


_KEEP_OPTIONS = (
    click.option("--keep", type=click.Choice(list(KEEP_RULES)), default=None,
                 help="Which copy of each cluster survives (default: longest): first or last "
                      "in input order, longest text, earliest or latest --date-field, or "
                      "most-complete (most non-empty fields, then longest). Ties: first in "
                      "input order. See docs/policies.md."),
    click.option("--keep-by", "keep_by", metavar="FIELD", default=None,
                 help="Keep the copy with the largest value of the numeric FIELD (copies "
                      "without one last; ties: first in input order). Instead of --keep."),
    click.option("--annotate", is_flag=True,
                 help="--out gets every input record, none removed, with the columns "
                      "cluster, cluster_size, is_representative and duplicate_of (the kept "
                      "copy's id; empty for the kept copy)."),
)


def keep_options(function: F) -> F:
    """Add ``--keep``, ``--keep-by`` and ``--annotate``."""
    return apply_options(_KEEP_OPTIONS, function)


def keep_policy_from_options(opts: dict[str, Any], inputs: Collection[Any] = ()) -> KeepPolicy:
    """The :class:`~neardup.graph.keep.KeepPolicy` of ``--keep``/``--keep-by``; a
    UsageError for a combination that cannot work (before any work)."""
    if opts["keep"] is not None and opts["keep_by"] is not None:
        raise click.UsageError(f"--keep {opts['keep']} and --keep-by {opts['keep_by']} both "
                               "choose the surviving copy; give one of them.")
    policy = KeepPolicy(rule=opts["keep"] or "longest", field=opts["keep_by"])
    native_dates = any(str(p).lower().endswith(".sgm") for p in inputs)
    if policy.needs_dates and opts.get("date_field") is None and not native_dates:
        raise click.UsageError(f"--keep {policy.rule} chooses by date: give --date-field FIELD "
                               "(the field holding each record's date).")
    if opts.get("annotate") and opts.get("out") is None:
        raise click.UsageError("--annotate marks the records it writes to --out: give --out FILE.")
    return policy


def keep_values_from_options(policy: KeepPolicy, inputs: Collection[Any], reader: Any):
    """Each input record's value for ``policy`` (one pass over the records), or None when
    the policy reads none."""
    if not policy.needs_values:
        return None
    from neardup.io import iter_records

    return record_values(iter_records(list(inputs), reader), policy, flag="--keep-by")
