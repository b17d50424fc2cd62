"""One declaration per run parameter, and the rules between them.

Every front door reads this module: the command line generates its options from
:data:`PARAMS` (:mod:`neardup.cli.options`), :func:`neardup.dedup` checks its keywords
with :func:`check_value` and :func:`check_rules`, and ``tune`` grids name clustering
parameters by the same names. Each concept has one name (``cluster``, not
``cluster_algorithm`` or ``cluster.algorithm``), which is the Python keyword, the tune
grid name and the click destination; :attr:`Param.flag` is how the command line spells it.

The rules (:data:`RULES`) say when a parameter is read: one given where the run would
ignore it is an error, raised here as a :class:`RuleError` and worded per interface by a
:class:`Wording` (``--linkage`` on the command line, ``linkage=`` in Python).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from neardup.errors import ParameterError, check_choice, check_float, check_int
from neardup.graph.config import CLUSTER_ALGORITHMS
from neardup.method_choice import AUTO
from neardup.profiles import PROFILED_METHODS, PROFILES

__all__ = ["CLI", "CLUSTERINGS", "DIRECT_METHOD_PARAMS", "ENGINES", "NORMALIZE_FLAGS", "PARAM", "PARAMS", "PYTHON", "RULES", "Param", "Rule", "RuleError",
           "RENAMED", "Situation", "Wording", "check_rules", "check_value", "choices_of",
           "group"]

_ANY = object()  # "some value": Wording.set names the parameter without one


@dataclass(frozen=True)
class Param:
    """One run parameter.

    ``name`` is its only name in Python, in tune grids and as the click destination;
    ``flag`` how the command line spells it (default ``--`` + name with dashes). ``kind``
    says how it is read: "str", "int", "float", "choice", "flag" (on/off), "switch" (an
    on/off pair, ``--x/--no-x``), "path_or_url", "dir", "memory" (``2GB``), "key_value"
    and "name_value" (repeatable ``KEY=VALUE``). ``python``: whether :func:`neardup.dedup`
    takes it as a keyword; ``cli``: whether ``neardup dedup`` has it.
    """

    name: str
    group: str
    help: str
    default: Any = None
    kind: str = "str"
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    flag_name: str | None = None
    short: str | None = None
    metavar: str | None = None
    show_default: bool = False
    python: bool = True
    cli: bool = True

    @property
    def flag(self) -> str:
        return self.flag_name or "--" + self.name.replace("_", "-")


def _p(name: str, group: str, help: str, **kw: Any) -> Param:
    return Param(name, group, help, **kw)


_M, _C, _K, _E, _R, _O, _U = "method", "cluster", "keep", "engine", "reader", "output", "run"
#: The clusterings (``cluster``); "auto" is resolved per method before a run.
CLUSTERINGS = CLUSTER_ALGORITHMS
#: The executors (``engine``): out of core on this machine, in process, on Ray.
ENGINES = ("local", "memory", "ray")

#: Every run parameter, grouped as the command line lists them.
PARAMS: tuple[Param, ...] = (
    # ---- method and its parameters
    _p("method", _M, "Near-duplicate detection method. auto: rerank (the most accurate) when "
       "the input holds at most 10,000 documents and 50 million characters (or a quarter of "
       "--memory-limit when less), minhash (the fast one) otherwise; the summary and the "
       "report say which ran (docs/choosing-a-method.md). A method parameter (--threshold, "
       "--param, ...) needs the method named.", default=AUTO, kind="choice",
       show_default=True),  # choices: "auto" and neardup.METHODS, filled in by choices_of
    _p("profile", _M, "Settings of the lexical methods (minhash, ngram) for the kind of "
       "text. auto: reads the first 2,000 documents and takes noisy when they look noisy "
       "(broken words, punctuation stuck between letters), clean otherwise; the summary "
       "and the report say which and why. clean: word 3-grams at Jaccard 0.5, for clean "
       "web or wire text. noisy: character 5-grams at Jaccard 0.3 (the best worst case over "
       "the ten labelled sets' validation splits), for OCR, typos, look-alike letters and "
       "other scripts, where the clean settings find almost nothing; finds more pairs, so "
       "costs more (docs/choosing-a-method.md). --threshold, --shingle and --ngram win "
       "over it.",
       default="auto", kind="choice", choices=PROFILES, show_default=True),
    _p("threshold", _M, "Similarity cut-off. minhash/ngram: Jaccard (or containment) in [0, 1], "
       "default 0.5; simhash: maximum Hamming distance in bits, default 3; retsim/biencoder: "
       "cosine, default the shipped model's threshold tuned on validation (biencoder-news "
       "0.68, retsim-news 0.75), else 0.9; rerank: duplicate probability, default the "
       "scorer's tuned threshold (0.9 with its default candidates). Tune it on labelled "
       "validation data.", kind="float"),
    _p("num_perm", _M, "minhash: signature length (default 128).", kind="int"),
    _p("bands", _M, "minhash: LSH bands; with --rows overrides the choice from --threshold.",
       kind="int"),
    _p("rows", _M, "minhash: rows per LSH band.", kind="int"),
    _p("verify", _M, "minhash: confirm candidates by estimated Jaccard (default), exact "
       "Jaccard, or not at all (every band collision is an edge). exact reads the documents' "
       "shingle sets: --engine local stores them in --work-dir instead of the signatures (8 "
       "bytes per distinct shingle plus 8 per document).", kind="choice",
       choices=("signature", "exact", "none")),
    _p("max_bucket_pairs", _M, "minhash: LSH buckets with more members are chained, not fully "
       "paired (default 50).", kind="int"),
    _p("similarity", _M, "ngram: Jaccard, or containment |A&B|/min(|A|,|B|) for abridged "
       "copies.", kind="choice", choices=("jaccard", "containment")),
    _p("max_df", _M, "ngram: shingles in more documents than this are chained (each document "
       "compared with its neighbour in a MinHash order) instead of paired all-to-all "
       "(default 1000): exact copies are always found, the summary counts the shingles and "
       "documents concerned; similarity stays exact.", kind="int"),
    _p("weighting", _M, "simhash: shingle votes by occurrence (tf, default) or once (binary).",
       kind="choice", choices=("tf", "binary")),
    _p("model", _M, "biencoder: a shipped model name (all-MiniLM-L6-v2) or a local "
       "sentence-transformers model directory."),
    _p("shingle_unit", _M, "Shingle unit.", default="word", kind="choice",
       choices=("word", "char"), flag_name="--shingle", show_default=True, python=False),
    _p("ngram_n", _M, "Shingle length in units (default 3 words; try 10-25 for --shingle char).",
       kind="int", low=1, high=255, flag_name="--ngram", python=False),
    _p("keep_invisible", _M, "Do not remove zero-width/format characters.", default=False,
       kind="flag", python=False),
    _p("no_nfkc", _M, "Skip Unicode NFKC normalization.", default=False, kind="flag",
       python=False),
    _p("no_hyphen_repair", _M, "Do not join end-of-line hyphenation.", default=False,
       kind="flag", python=False),
    _p("no_homoglyph_fold", _M, "Do not fold Cyrillic/Greek look-alikes.", default=False,
       kind="flag", python=False),
    _p("no_casefold", _M, "Keep letter case.", default=False, kind="flag", python=False),
    _p("keep_punctuation", _M, "Keep punctuation in tokens.", default=False, kind="flag",
       python=False),
    _p("spell_correct", _M, "Correct words to the nearest English dictionary word (SymSpell) "
       "before shingling; helps n-gram methods on OCR text.", default=False, kind="flag",
       python=False),
    _p("spell_max_edit_distance", _M, "Largest edit distance --spell-correct repairs.",
       default=2, kind="int", low=1, high=5, show_default=True, python=False),
    _p("extra_params", _M, "Any other method parameter, by its Python name (repeatable), e.g. "
       "--param rare_fraction=0.25, or for the embedding methods --param "
       "index=auto|flat|ivf|hnsw (auto: exact up to --param exact_limit=50000 rows, IVF "
       "above). VALUE is read as JSON when it parses (numbers, true/false, null, lists), else "
       "as a string. See the method's docstring for its parameters.", kind="name_value",
       flag_name="--param", metavar="NAME=VALUE", python=False),
    # ---- reading the input
    _p("text_field", _R, "Field holding the text (JSONL, Parquet, CSV/TSV; for Reuters SGML "
       "'text' = title + body, or 'body', 'title').", default="text", show_default=True),
    _p("id_field", _R, "Field holding a unique document id (default: the row number)."),
    _p("date_field", _R, "Field holding a date (parsed; optional)."),
    _p("decode_errors", _R, "Invalid UTF-8: fail naming file and byte offset, or replace with "
       "U+FFFD and warn.", default="strict", kind="choice", choices=("strict", "replace"),
       flag_name="--errors", show_default=True, python=False),
    _p("batch_size", _R, "Documents per batch (bounds memory for raw text).", default=10_000,
       kind="int", low=1, show_default=True),
    _p("limit", _R, "Read at most this many documents.", kind="int", low=0, python=False),
    _p("storage_options", _R, "An option of the filesystem of INPUT and output URLs (s3://, "
       "gs://, memory://; repeatable), e.g. --storage-option endpoint_url=http://127.0.0.1:9000 "
       "or --storage-option anon=true; VALUE is read as JSON when it parses. Credentials "
       "otherwise come from the environment (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...) and "
       "fsspec's configuration (docs/storage.md).", kind="key_value",
       flag_name="--storage-option", metavar="KEY=VALUE", python=False),
    # ---- clustering
    _p("cluster", _C, "Connected components, community detection to cut weak bridges (leiden, "
       "louvain), or agglomerative clustering (hac). auto: the clustering the method's model "
       "was measured best with on held-out sets, else components; today --method rerank with "
       "its shipped verifier gets leiden at resolution 0.4 (docs/transfer.md), every other "
       "method components. Leiden and Louvain run out of core for exact, minhash, simhash, "
       "wminhash and rerank, all three for the embedding methods (and rerank over their "
       "candidates), HAC in memory for the others; --engine ray runs Leiden and Louvain for "
       "exact, minhash, simhash and rerank, all three for the embedding methods (per "
       "component, in its assign tasks).", default="auto",
       kind="choice", choices=CLUSTERINGS, show_default=True),
    _p("linkage", _C, "--cluster hac: linkage.", default="average", kind="choice",
       choices=("average", "single", "complete"), show_default=True),
    _p("distance_threshold", _C, "--cluster hac: merge while the linkage distance (1 - score) "
       "is at most this.", default=0.2, kind="float", low=0.0, high=2.0,
       flag_name="--hac-distance", show_default=True),
    _p("resolution", _C, "--cluster leiden or louvain: community-detection resolution (higher: "
       "smaller communities; --cluster auto picks 0.4 for rerank's verifier).", default=1.0,
       kind="float", low=0.0, show_default=True),
    _p("max_cluster_size", _C, "Flag clusters larger than this as templates/boilerplate.",
       kind="int", low=2),
    _p("oversized", _C, "Keep flagged oversized clusters, or leave their members unmerged.",
       default="flag", kind="choice", choices=("flag", "split"), show_default=True),
    _p("time_window_hours", _C, "Do not merge documents dated more than HOURS apart, unless "
       "their texts are identical after normalization; such pairs are listed in --pairs-out "
       "with outside_window=true. News copies appear within a day or two, recurring reports "
       "reuse wording days apart (Sanderson 1997 used 48). Needs dates (--date-field; Reuters "
       "SGML has them).", kind="float", low=0.0, low_open=True, flag_name="--time-window",
       metavar="HOURS"),
    # ---- which copy survives
    _p("keep", _K, "Which copy of each cluster survives (default: longest): first or last in "
       "input order, longest text, earliest or latest --date-field, or most-complete (most "
       "non-empty fields, then longest). Ties: first in input order. See docs/policies.md.",
       kind="choice"),  # choices: neardup.graph.keep.KEEP_RULES
    _p("keep_by", _K, "Keep the copy with the largest value of the numeric FIELD (copies "
       "without one last; ties: first in input order). Instead of --keep.", metavar="FIELD"),
    _p("annotate", _K, "--out gets every input record, none removed, with the columns cluster, "
       "cluster_size, is_representative and duplicate_of (the kept copy's id; empty for the "
       "kept copy).", default=False, kind="flag", python=False),
    # ---- outputs
    _p("clusters_out", _O, "Write one row per input document (id, cluster, cluster_size, "
       "representative, status, template): .parquet, .jsonl, .jsonl.gz, .csv or .tsv.",
       kind="path_or_url", python=False),
    _p("pairs_out", _O, "Write the scored edges (id_a, id_b, score, method, type = exact / "
       "expanded / corrected / template / near, outside_window); same formats.",
       kind="path_or_url", python=False),
    _p("out", _O, "Write the de-duplicated corpus (one representative per cluster, all fields "
       "kept): .jsonl, .jsonl.gz, .parquet, .csv or .tsv. From Parquet inputs of one schema, "
       ".parquet keeps every column's type. A binary text column stays binary "
       "in .parquet and becomes UTF-8 text otherwise; a field of mixed types becomes strings "
       "in .parquet (with a warning); NaN and Infinity are kept. CSV quotes values as needed; "
       "TSV has no quoting and refuses values with tabs or line breaks. The input is read "
       "again: it must be a file (not a pipe) that does not change during the run.",
       kind="path_or_url", python=False),
    _p("report", _O, "Write the run summary, parameters (with the LSH bands and rows used), "
       "neardup version and timings as JSON (.json).", kind="path_or_url", python=False),
    _p("html", _O, "Write an HTML report of the run (one offline page; see neardup report).",
       kind="path_or_url", python=False),
    # ---- the run
    _p("seed", _U, "Seeds hashing, permutations and community detection.", default=0,
       kind="int", low=0, show_default=True),
    _p("progress", _U, "Show progress bars (default: when stderr is a terminal).",
       kind="switch"),
    _p("quiet", _U, "Print nothing but errors.", default=False, kind="flag", short="-q",
       python=False),
    # ---- executor and budget
    _p("engine", _E, "local: the out-of-core corpus stage: sketches, keys and embeddings "
       "spilled to --work-dir, memory bounded by --memory-limit plus a few hundred bytes a "
       "document (docs/scale.md); a method or clustering it cannot run out of core runs in "
       "memory instead, and the run's summary names the reason (engine_fallback). memory: "
       "every candidate pair held and verified in RAM. ray: the local engine's stage as tasks "
       "on a Ray cluster (the ray extra; docs/scale-out.md): workers read the inputs and write "
       "--clusters-out, --pairs-out and --out as directories of Parquet files; --report and "
       "--html are written by the driver as for the other engines. Which method and "
       "clustering each engine runs: the support matrix in the README and docs/scale.md; a "
       "combination an engine cannot run is refused before any work, naming the engines that "
       "run it.", default="local", kind="choice", choices=ENGINES,
       show_default=True),
    _p("ray_address", _E, "With --engine ray: the cluster to run on (host:6379 as printed by "
       "`ray start --head`, ray://host:10001, or auto); default: RAY_ADDRESS, else a new "
       "single-machine cluster. The workers' settings go to an existing cluster as the job's "
       "runtime_env; NEARDUP_RAY_RUNTIME_ENV=0 sends none (nodes with neardup installed, "
       "started with NUMBA_NUM_THREADS=1: less start-up CPU per node).", metavar="ADDR"),
    _p("ray_shard_rows", _E, "With --engine ray: rows per read-and-sketch task (whole Parquet "
       "row groups; other formats one file per task). Larger shards mean fewer objects per "
       "exchange (shards x partitions): use ~1000000 with ~2048 --partitions beyond 10^8 "
       "documents (docs/scale-out.md).", default=25_000, kind="int", low=1, metavar="N",
       show_default=True, python=False),
    _p("work_dir", _E, "Directory for the out-of-core stages (default: a temporary directory, "
       "removed at the end). Must be new or empty, unless --resume continues the run it "
       "holds.", kind="dir"),
    _p("memory_limit", _E, "Memory for the out-of-core stages' buffers, e.g. 2GB or 512MB "
       "(default: an eighth of physical memory, at most 1GB).", kind="memory", metavar="SIZE"),
    _p("partitions", _E, "Key partitions of the out-of-core stage (default: from the corpus "
       "size, counted when the input is a single batch; 256 when it is unknown).", kind="int",
       low=1, high=65536),
    _p("resume", _E, "Continue a killed run from the completed stages in --work-dir (same "
       "input and options give the same outputs).", default=False, kind="flag"),
)

#: Parameters by name.
PARAM: dict[str, Param] = {p.name: p for p in PARAMS}


def group(name: str) -> tuple[Param, ...]:
    """The parameters of one group ("method", "reader", "cluster", "keep", "output", "run",
    "engine"), in declaration order."""
    found = tuple(p for p in PARAMS if p.group == name)
    if not found:
        raise ValueError(f"group: no parameter group {name!r}.")
    return found


def choices_of(param: Param) -> tuple[Any, ...]:
    """The valid values of a choice parameter (the method and keep names are read from
    their registries, so that a method added later is offered)."""
    if param.name == "method":
        from neardup.methods import METHODS

        return (AUTO, *METHODS)
    if param.name == "keep":
        from neardup.graph.keep import KEEP_RULES

        return tuple(KEEP_RULES)
    return param.choices


def check_value(caller: str, name: str, value: Any) -> Any:
    """``value`` checked against parameter ``name``'s declared type, range and choices
    (None passes for a parameter without a default); the value, or a ParameterError."""
    param = PARAM[name]
    if value is None and param.default is None:
        return None
    if param.kind == "choice":
        return check_choice(caller, name, value, choices_of(param))
    if param.kind == "int":
        low = param.low if param.low is None else int(param.low)
        high = param.high if param.high is None else int(param.high)
        return check_int(caller, name, value, low=low, high=high)
    if param.kind == "float":
        number = check_float(caller, name, value, low=param.low, high=param.high)
        if param.low_open and number == param.low:
            raise ParameterError(caller, name, f"a number > {param.low}", value)
        return number
    if param.kind in ("flag", "switch") and not isinstance(value, bool):
        raise ParameterError(caller, name, "True or False", value)
    return value


# --------------------------------------------------------------------------- wording


@dataclass(frozen=True)
class Wording:
    """How one interface names parameters and settings in its messages: "cli"
    (``--cluster hac``) or "python" (``cluster='hac'``)."""

    interface: str

    @property
    def cli(self) -> bool:
        return self.interface == "cli"

    def name(self, name: str) -> str:
        """The parameter as a subject: ``--linkage``, or ``parameter 'linkage'``."""
        return PARAM[name].flag if self.cli else f"parameter {name!r}"

    def set(self, name: str, value: Any = _ANY, placeholder: str = "...") -> str:
        """A setting: ``--cluster hac`` / ``cluster='hac'``; without a value, the
        parameter with ``placeholder`` (``--date-field FIELD`` / ``date_field=...``)."""
        param = PARAM[name]
        if self.cli:
            if param.kind == "flag":
                return param.flag
            shown = placeholder if value is _ANY else value
            return f"{param.flag} {shown}"
        return f"{name}={'...' if value is _ANY else repr(value)}"

    def one_of(self, name: str, values: Collection[Any]) -> str:
        """``--method a, b or c`` / ``method='a', 'b' or 'c'``."""
        shown = [str(v) if self.cli else repr(v) for v in values]
        listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
        if len(shown) == 2:
            listed = " or ".join(shown)
        return f"{PARAM[name].flag} {listed}" if self.cli else f"{name}={listed}"

    def unset(self, name: str) -> str:
        """``no --date-field`` / ``date_field=None``."""
        return f"no {PARAM[name].flag}" if self.cli else f"{name}=None"

    def drop(self, name: str) -> str:
        return f"drop {PARAM[name].flag}" if self.cli else f"leave out {name}"


#: The command line's wording and Python's.
CLI = Wording("cli")
PYTHON = Wording("python")


# --------------------------------------------------------------------------- rules


@dataclass
class Situation:
    """What decides whether a parameter is read: the values by parameter name (given or
    default), which of them the user gave, and, once known, the method object and the
    clustering it resolves to. ``inputs``: the input paths, when the interface has them."""

    values: Mapping[str, Any]
    method: Any = None  # a Method, when known
    algorithm: str | None = None  # the resolved clustering, when known

    @property
    def method_name(self) -> str:
        return self.values.get("method") or ""

    def accepted(self) -> tuple[str, ...] | None:
        from neardup.methods import METHODS, method_parameters

        name = self.method_name
        return tuple(method_parameters(name)) if name in METHODS else None

    def clustering(self) -> str:
        return self.algorithm or self.values.get("cluster") or "auto"

    def stage(self) -> str | None:
        """Which stage runs: "memory" or "ray" (the executors), "keyed" or "vector" (the
        local executor's out-of-core stages), "fallback" (the local executor runs it in
        memory), None when not known yet (no method object)."""
        engine = self.values.get("engine", "local")
        if engine != "local":
            return engine
        if self.method is None:
            return None
        from neardup.engine.support import placement

        placed = placement(self.method, self.algorithm or "components", "local")
        return "fallback" if placed.fallback else placed.stage

    def engine_text(self, w: Wording) -> str:
        if self.stage() == "fallback":
            return (f"{w.set('method', self.method_name)} and "
                    f"{w.set('cluster', self.algorithm)}, which {w.set('engine', 'local')} "
                    f"runs in memory{' (see --engine)' if w.cli else ''}")
        return w.set("engine", self.values.get("engine", "local"))


def _always(value: Any) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    """Parameter ``name`` is read only where ``applies`` (None: not known yet, so not
    refused); ``scope`` says where, ``current`` what the user has instead, ``add`` what
    to add for it to apply (None: only leaving it out helps). Each text is worded by the
    interface's :class:`Wording`."""

    name: str
    scope: Callable[[Wording], str]
    applies: Callable[[Situation], bool | None]
    current: Callable[[Situation, Wording], str]
    add: Callable[[Wording], str] | None = None
    counts: Callable[[Any], bool] = _always  # which values are "given"
    swept_by: tuple[str, ...] = ()  # tune grid names that make it apply
    commands: tuple[str, ...] | None = None  # None: every command that has the parameter
    interfaces: tuple[str, ...] = ("cli", "python")  # where the rule is checked

    @property
    def flag(self) -> str:
        return PARAM[self.name].flag

    def message(self, situation: Situation, w: Wording) -> str:
        """The error for this rule broken in ``situation``, in ``w``'s words."""
        remedy = (f"Add {self.add(w)} or {w.drop(self.name)}." if self.add is not None
                  else f"{w.drop(self.name)[0].upper()}{w.drop(self.name)[1:]}.")
        return (f"{w.name(self.name)} applies to {self.scope(w)} only; with "
                f"{self.current(situation, w)} it would be ignored. {remedy}")


class RuleError(ParameterError):
    """A parameter given where the run would ignore it (:data:`RULES`). ``str()`` is the
    Python wording; :meth:`render` gives the command line's when its subject is a flag."""

    def __init__(self, caller: str, rule: Rule, situation: Situation) -> None:
        self.rule = rule
        self.situation = situation
        self.caller = caller
        self.parameter = rule.name
        self.accepted = rule.scope(PYTHON)
        self.value = situation.values.get(rule.name)
        self.hint = None
        Exception.__init__(self, f"{caller}: {rule.message(situation, PYTHON)}")

    def render(self, subject: str) -> str:
        return self.rule.message(self.situation, CLI if subject.startswith("-") else PYTHON)


def _methods_taking(parameter: str, w: Wording) -> str:
    from neardup.methods import METHODS, method_parameters

    return w.one_of("method", [m for m in METHODS if parameter in method_parameters(m)])


def _method_named(s: Situation, w: Wording) -> str:
    """The method setting, as a rule's "with ..." (``auto`` says what it means)."""
    named = w.set("method", s.method_name)
    return named + (" (the default: rerank or minhash by the input's size)"
                    if s.method_name == AUTO else "")


def _chooses_method(s: Situation) -> bool:
    return s.method_name == AUTO


def _method_rule(name: str, parameter: str) -> Rule:
    return Rule(name, lambda w: _methods_taking(parameter, w),
                lambda s: None if s.accepted() is None else parameter in s.accepted(),
                lambda s, w: w.set("method", s.method_name))


def _named_method_rule(name: str, **kw: Any) -> Rule:
    # A method parameter is one method's setting: with "auto" it needs the method named.
    return Rule(name, lambda w: "a named method", lambda s: not _chooses_method(s), _method_named,
                add=lambda w: w.set("method", _ANY, "NAME"), **kw)


def _hac(s: Situation) -> bool:
    return s.clustering() == "hac"


def _out_of_core(s: Situation) -> bool | None:
    stage = s.stage()
    return None if stage is None else stage in ("keyed", "vector")


def _names_a_url(values: Mapping[str, Any]) -> bool:
    """Whether an input or an output is a URL (storage options are read for those only)."""
    from neardup.io.locations import is_url

    outputs = [values.get(k) for k in ("clusters_out", "pairs_out", "out", "report", "html")]
    return any(is_url(p) for p in (*values.get("inputs", ()), *outputs) if p is not None)


def _dated(s: Situation) -> bool | None:
    if s.values.get("date_field") is not None:
        return True
    if "inputs" not in s.values:
        return False  # Python: dates come only from date_field
    return any(str(p).lower().endswith(".sgm") for p in s.values["inputs"])


_SEED_CLUSTERINGS = ("leiden", "louvain")
_CLUSTER_SWEEP = ("cluster",)
#: Method parameters whose flag sets the constructor keyword of the same name.
DIRECT_METHOD_PARAMS = ("threshold", "num_perm", "bands", "rows", "verify", "max_bucket_pairs",
           "similarity", "max_df", "weighting", "model")
#: The flags that build the methods' NormalizeConfig.
NORMALIZE_FLAGS = ("keep_invisible", "no_nfkc", "no_hyphen_repair", "no_homoglyph_fold",
              "no_casefold", "keep_punctuation", "spell_correct")


def _seed_applies(s: Situation) -> bool | None:
    accepted = s.accepted()
    if accepted is None:
        return None
    if "seed" in accepted:
        return True
    if s.algorithm is not None:
        return s.algorithm in _SEED_CLUSTERINGS
    return s.values.get("cluster") in (*_SEED_CLUSTERINGS, "auto")


def _engine_is(name: str) -> Callable[[Situation], bool]:
    return lambda s: s.values.get("engine", "local") == name


#: Every parameter that some setting of another parameter makes the run ignore.
RULES: tuple[Rule, ...] = (
    *(_named_method_rule(name) for name in (*DIRECT_METHOD_PARAMS, "shingle_unit", "ngram_n",
                                             *NORMALIZE_FLAGS, "extra_params")),
    _named_method_rule("profile", counts=lambda value: value not in ("auto", "clean")),
    *(_method_rule(name, name) for name in DIRECT_METHOD_PARAMS),
    # A profile other than "auto" or "clean" changes the methods it has settings for only.
    Rule("profile", lambda w: w.one_of("method", PROFILED_METHODS),
         lambda s: None if not s.method_name else s.method_name in PROFILED_METHODS,
         lambda s, w: w.set("method", s.method_name),
         counts=lambda value: value not in ("auto", "clean")),
    _method_rule("shingle_unit", "shingle"),
    _method_rule("ngram_n", "shingle"),
    *(_method_rule(name, "normalize") for name in NORMALIZE_FLAGS),
    Rule("spell_max_edit_distance", lambda w: w.set("spell_correct"),
         lambda s: bool(s.values.get("spell_correct")), lambda s, w: w.unset("spell_correct"),
         add=lambda w: w.set("spell_correct")),
    Rule("linkage", lambda w: w.set("cluster", "hac"), _hac,
         lambda s, w: w.set("cluster", s.values.get("cluster")),
         add=lambda w: w.set("cluster", "hac"), swept_by=_CLUSTER_SWEEP),
    Rule("distance_threshold", lambda w: w.set("cluster", "hac"), _hac,
         lambda s, w: w.set("cluster", s.values.get("cluster")),
         add=lambda w: w.set("cluster", "hac"), swept_by=_CLUSTER_SWEEP),
    Rule("resolution", lambda w: f"{w.set('cluster', 'leiden')} or {w.set('cluster', 'louvain')}",
         lambda s: s.values.get("cluster") in _SEED_CLUSTERINGS,
         lambda s, w: w.set("cluster", s.values.get("cluster")),
         add=lambda w: w.set("cluster", "leiden"), swept_by=_CLUSTER_SWEEP),
    Rule("oversized", lambda w: f"clusters larger than {w.name('max_cluster_size')}",
         lambda s: s.values.get("max_cluster_size") is not None,
         lambda s, w: w.unset("max_cluster_size"), add=lambda w: w.set("max_cluster_size", _ANY, "N"),
         swept_by=("max_cluster_size",)),
    Rule("seed", lambda w: (f"{_methods_taking('seed', w)}, or "
                            f"{w.one_of('cluster', _SEED_CLUSTERINGS)}"),
         _seed_applies,
         lambda s, w: f"{w.set('method', s.method_name)} and {w.set('cluster', s.clustering())}",
         # Python code passes one seed to every method for reproducibility (the
         # determinism contract does); only a seed typed on the command line is refused.
         commands=("dedup",), interfaces=("cli",)),
    Rule("ray_address", lambda w: w.set("engine", "ray"), _engine_is("ray"),
         lambda s, w: w.set("engine", s.values.get("engine", "local")),
         add=lambda w: w.set("engine", "ray")),
    Rule("ray_shard_rows", lambda w: w.set("engine", "ray"), _engine_is("ray"),
         lambda s, w: w.set("engine", s.values.get("engine", "local")),
         add=lambda w: w.set("engine", "ray")),
    *(Rule(name, lambda w: f"the out-of-core stages of {w.set('engine', 'local')}",
           _out_of_core, lambda s, w: s.engine_text(w))
      for name in ("work_dir", "memory_limit", "resume")),
    Rule("partitions", lambda w: (f"the keyed out-of-core stage of {w.set('engine', 'local')} "
                                  f"and to {w.set('engine', 'ray')}"),
         lambda s: None if s.stage() is None else s.stage() in ("keyed", "ray"),
         lambda s, w: s.engine_text(w)),
    Rule("resume", lambda w: f"a run kept in {w.name('work_dir') if w.cli else 'work_dir'}",
         lambda s: s.values.get("work_dir") is not None, lambda s, w: w.unset("work_dir"),
         add=lambda w: (f"{w.set('work_dir', _ANY, 'DIR')} (the directory of the run to "
                        "continue)")),
    Rule("time_window_hours",
         lambda w: (f"documents with dates ({w.set('date_field', _ANY, 'FIELD')}"
                    f"{', or Reuters SGML inputs' if w.cli else ''})"),
         _dated, lambda s, w: w.unset("date_field"),
         add=lambda w: w.set("date_field", _ANY, "FIELD"), commands=("dedup",)),
    Rule("storage_options", lambda w: "inputs and outputs given as URLs (s3://, gs://, "
         "memory://, ...)", lambda s: None if "inputs" not in s.values else _names_a_url(s.values),
         lambda s, w: "only local paths"),
    Rule("progress", lambda w: "runs without -q/--quiet", lambda s: not s.values.get("quiet"),
         lambda s, w: "-q/--quiet", counts=lambda value: value is True),
)


def check_rules(caller: str, values: Mapping[str, Any], given: Collection[str], *,
                method: Any = None, algorithm: str | None = None,
                sweep: Collection[str] = (), command: str | None = None,
                interface: str = "python") -> None:
    """A :class:`RuleError` for the first given parameter that the run would ignore.

    ``values``: every parameter the interface has, by name (given or default);
    ``given``: the names the user set. ``method`` (a Method) and ``algorithm`` (the
    resolved clustering), when given, settle the rules that depend on them; before they
    are known those rules pass. ``sweep``: the names ``tune`` varies. ``command``: the
    command (rules limited to some commands are skipped elsewhere; None: ``dedup``).
    ``interface``: "python" or "cli" (a few rules hold in one of them only).
    """
    situation = Situation(values, method, algorithm)
    sweep = {RENAMED.get(name, name) for name in sweep}
    for rule in RULES:
        if rule.name not in values or rule.name not in given:
            continue
        if rule.commands is not None and (command or "dedup") not in rule.commands:
            continue
        if interface not in rule.interfaces:
            continue
        if not rule.counts(values[rule.name]) or set(rule.swept_by) & set(sweep):
            continue
        if rule.applies(situation) is not False:
            continue
        raise RuleError(caller, rule, situation)


# Kept for readers of the old spellings; each names the one to use now.
RENAMED: dict[str, str] = {
    "cluster_algorithm": "cluster",
    "cluster.algorithm": "cluster",
    "cluster.linkage": "linkage",
    "cluster.distance_threshold": "distance_threshold",
    "cluster.resolution": "resolution",
    "cluster.max_cluster_size": "max_cluster_size",
    "cluster.oversized": "oversized",
    "cluster.time_window_hours": "time_window_hours",
}
