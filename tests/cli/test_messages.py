"""Issue #40 (messages): every error `neardup dedup` can give, in the command line's words.

The cases are generated, not hand-picked: from the click options of ``neardup dedup``
(for each option, values of the wrong type, out of its range, not among its choices,
and values the library refuses), from the table of options that another option makes
inapplicable (:data:`neardup.cli.options.OPTION_RULES`), and from input files the readers
refuse. Each run must fail with exit 1 or 2, without a traceback, with a message that
names the flag (or the file) and carries no Python spelling (``=None``, reprs, function
names, ``sys.``...).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.cli.dedup import dedup_command
from neardup.cli.errors import FLAGS
from neardup.cli.options import OPTION_RULES
from neardup.methods import METHODS, method_parameters
from neardup.params import CLI

#: Python spellings a CLI message must not use.
DENY = re.compile(
    r"=None|=True|=False|\bNone\b|\bTrue or False\b|Traceback|\bsys\.|\bset_int_max_str_digits"
    # A class repr or constructor (NGramOverlap(...)); SentenceTransformer(...).save is
    # how a user saves a model for --model, in that library's words.
    r"|\b(?!SentenceTransformer\()[A-Z][a-z]+(?:[A-Z][A-Za-z]*)+\("
    r"|\b\w+Error\(|\bMinHashLSH\b|\bparameter '\w+'"
    r"|\b(?:write_records|write_table|read_corpus|iter_records|make_method|records_to_file"
    r"|table_to_file|check_int|check_float|run_corpus_stage)\b"
    r"|\bzip\(\)|(?<!--param )\b[a-z]+_[a-z_]+="  # keyword-argument spelling: id_field=...
    r"|\b(?:text_field|id_field|date_field|time_window_hours|num_perm|max_df|skip_existing"
    r"|work_dir|memory_limit|ReaderConfig|ClusterConfig|CorpusStageConfig)\b"
)

STORY = "the central bank raised its key interest rate by half a point on tuesday"

#: A valid value for each option that takes one (used where the option must be given).
VALID = {
    "threshold": "0.5", "profile": "noisy", "num_perm": "64", "bands": "8", "rows": "8", "verify": "exact",
    "max_bucket_pairs": "20", "similarity": "containment", "max_df": "50",
    "weighting": "binary", "model": "all-MiniLM-L6-v2", "shingle_unit": "char",
    "ngram_n": "4", "spell_max_edit_distance": "3", "linkage": "single",
    "distance_threshold": "0.3", "resolution": "0.5", "oversized": "split", "seed": "3",
    "time_window_hours": "48", "ray_address": "auto", "ray_shard_rows": "1000", "memory_limit": "64MB",
    "partitions": "4", "work_dir": "{tmp}/work", "storage_options": "anon=true",
}
#: Arguments that make an option apply (so that its own value is what is tested).
CONTEXT = {
    "linkage": ["--cluster", "hac"], "distance_threshold": ["--cluster", "hac"],
    "resolution": ["--cluster", "leiden"], "oversized": ["--max-cluster-size", "3"],
    "spell_max_edit_distance": ["--spell-correct"], "time_window_hours": ["--date-field", "when"],
    "ray_address": ["--engine", "ray"], "ray_shard_rows": ["--engine", "ray"],
    "resume": ["--work-dir", "{tmp}/work"],
}
#: Options with no invalid value of their own: flags and free text, covered by the rule
#: cases (an ignored flag) or the reader cases (a field no record has).
NO_INVALID_VALUE = {
    "keep_invisible", "no_nfkc", "no_hyphen_repair", "no_homoglyph_fold", "no_casefold",
    "keep_punctuation", "spell_correct", "quiet", "progress", "resume", "ray_address",
}


def _flag(param: click.Parameter) -> str:
    return max(param.opts, key=len)


def _method_for(name: str) -> list[str]:
    for method in METHODS:
        if name in method_parameters(method):
            return ["--method", method]
    return []


def _context(name: str) -> list[str]:
    args = list(CONTEXT.get(name, []))
    if name in ("threshold", "num_perm", "bands", "rows", "verify", "max_bucket_pairs",
                "similarity", "max_df", "weighting", "model"):
        args += _method_for(name)
    return args


def _invalid_values(param: click.Option) -> list[str]:
    kind = param.type
    if isinstance(kind, click.Choice):
        return ["no-such-choice"]
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        values = ["abc", "nan", "inf"] if isinstance(kind, click.FloatRange) else ["abc"]
        if kind.min is not None:
            values.append(str(kind.min if kind.min_open else kind.min - 1))
        if kind.max is not None:
            values.append(str(kind.max + 1))
        return values
    if kind is click.INT:
        return ["abc", "-3", "0"]
    if kind is click.FLOAT:
        return ["abc", "-1", "nan", "inf", "1e9"]
    return []


# Values the library (not click) must refuse, per option: out of the method's range.
LIBRARY_INVALID = {
    "threshold": [["--method", "minhash", "--threshold", "1.5"],
                  ["--method", "simhash", "--threshold", "-2"],
                  ["--method", "simhash", "--threshold", "65"],
                  ["--method", "ngram", "--threshold", "1.01"]],
    "bands": [["--method", "minhash", "--bands", "20", "--rows", "20"],
              ["--method", "minhash", "--bands", "4"], ["--method", "minhash", "--rows", "4"]],
    "memory_limit": [["--memory-limit", "lots"], ["--memory-limit", "-1GB"],
                     ["--memory-limit", "0"]],
    "model": [["--method", "biencoder", "--model", "{tmp}/no-such-model"]],
    "max_cluster_size": [["--max-cluster-size", "0"], ["--max-cluster-size", "-4"]],
    "storage_options": [["--storage-option", "no-equals-sign", "--clusters-out",
                         "memory://neardup-messages/c.parquet"]],
    "extra_params": [["--param", "nope=1"], ["--param", "threshold"],
                     ["--method", "ngram", "--param", "max_df=abc"],
                     ["--method", "minhash", "--param", "hash_bits=12"],
                     ["--method", "minhash", "--param", "signature_scheme=perm32",
                      "--param", "hash_bits=64"],
                     ["--method", "minhash", "--threshold", "0.5", "--param", "threshold=0.4"],
                     ["--method", "minhash", "--param", "signature_scheme=nope"]],
    "text_field": [["--text-field", "bodyy"]],
    "id_field": [["--id-field", "nope"]],
    "date_field": [["--date-field", "nope"]],
    "clusters_out": [["--clusters-out", "{tmp}/c.txt"], ["--clusters-out", "{tmp}/corpus.jsonl"]],
    "pairs_out": [["--pairs-out", "{tmp}/adir"], ["--pairs-out", "{tmp}/afile/p.parquet"]],
    "out": [["--out", "{tmp}/o.xlsx"], ["--out", "/proc/o.jsonl"]],
    "report": [["--report", "{tmp}/r.parquet"]],
    "html": [["--html", "{tmp}/r.json"]],
    "keep_by": [["--keep-by", "text"], ["--keep", "first", "--keep-by", "score"]],
    "annotate": [["--annotate"]],
    "work_dir": [["--work-dir", "{tmp}/afile"], ["--work-dir", "{tmp}/full"]],
    "time_window_hours": [["--method", "exact", "--time-window", "5"],
                          ["--method", "exact", "--time-window", "5", "--engine", "memory"]],
}


#: Values the generator proposes that are valid for that option.
VALID_AFTER_ALL = {("resolution", "1e9"), ("resolution", "inf"), ("max_cluster_size", "0"),
                   ("max_cluster_size", "-3")}


def _option_cases():
    cases = []
    for param in dedup_command.params:
        if not isinstance(param, click.Option):
            continue
        flag = _flag(param)
        context = _context(param.name)
        for value in _invalid_values(param):
            if (param.name, value) in VALID_AFTER_ALL:
                continue
            cases.append(pytest.param(param.name, flag, [*context, flag, value],
                                      id=f"{flag}={value}"))
        for k, args in enumerate(LIBRARY_INVALID.get(param.name, [])):
            context = [] if param.name == "time_window_hours" else CONTEXT.get(param.name, [])
            cases.append(pytest.param(param.name, flag, [*context, *args],
                                      id=f"{flag}-library-{k}"))
    return cases


def _rule_cases():
    """For every rule of OPTION_RULES: the option given where it would be ignored."""
    cases = []
    names = {p.name: p for p in dedup_command.params}
    for rule in OPTION_RULES:
        if rule.name not in names or rule.commands not in (None,) and "dedup" not in rule.commands:
            continue
        param = names[rule.name]
        value = [] if getattr(param, "is_flag", False) else [VALID.get(rule.name, "3")]
        given = [rule.flag, *value]
        if rule.scope(CLI) == "a named method":  # a method parameter with --method auto
            if rule.name == "extra_params":
                given = [rule.flag, "max_df=3"]
            cases.append(pytest.param(rule.flag, ["--method auto", "--method NAME"], given,
                                      id=f"{rule.flag}-auto"))
            continue
        if rule.name == "progress":
            cases.append(pytest.param(rule.flag, ["-q"], [*given, "-q"], id="progress-with-q"))
            continue
        if rule.name == "spell_max_edit_distance":
            cases.append(pytest.param(rule.flag, ["--spell-correct"], given, id=rule.flag))
            continue
        if rule.name in ("linkage", "distance_threshold", "resolution"):
            cases.append(pytest.param(rule.flag, ["--cluster"], given, id=rule.flag))
            continue
        if rule.name == "oversized":
            cases.append(pytest.param(rule.flag, ["--max-cluster-size"], given, id=rule.flag))
            continue
        if rule.name in ("ray_address", "ray_shard_rows"):
            cases.append(pytest.param(rule.flag, ["--engine"], given, id=rule.flag))
            continue
        if rule.name == "resume" and "--work-dir" in rule.scope(CLI):
            cases.append(pytest.param(rule.flag, ["--work-dir"], given, id="resume-no-work-dir"))
            continue
        if rule.name in ("work_dir", "memory_limit", "resume", "partitions"):
            extra = []
            cases.append(pytest.param(rule.flag, ["--engine memory"],
                                      [*extra, "--engine", "memory", *given],
                                      id=f"{rule.flag}-engine-memory"))
            if rule.name in ("work_dir", "memory_limit"):
                # retsim over an HNSW index has no out-of-core stage.
                cases.append(pytest.param(rule.flag, ["--method retsim"],
                                          [*extra, "--method", "retsim", "--param", 'index="hnsw"',
                                           *given],
                                          id=f"{rule.flag}-in-memory-fallback"))
            continue
        if rule.name == "time_window_hours":
            cases.append(pytest.param(rule.flag, ["--date-field"], given, id=rule.flag))
            continue
        if rule.name == "storage_options":  # every input and output a local path
            cases.append(pytest.param(rule.flag, ["only local paths"], given, id=rule.flag))
            continue
        if rule.name == "seed":
            cases.append(pytest.param(rule.flag, ["--method retsim"],
                                      ["--method", "retsim", *given], id=rule.flag))
            continue
        # A method parameter: a method that does not take it.
        parameter = {"shingle_unit": "shingle", "ngram_n": "shingle"}.get(rule.name, rule.name)
        if rule.name in ("keep_invisible", "no_nfkc", "no_hyphen_repair", "no_homoglyph_fold",
                         "no_casefold", "keep_punctuation", "spell_correct"):
            parameter = "normalize"
        other = next(m for m in METHODS if parameter not in method_parameters(m))
        cases.append(pytest.param(rule.flag, [f"--method {other}"],
                                  ["--method", other, *given], id=f"{rule.flag}-{other}"))
    return cases


@pytest.fixture
def corpus(tmp_path):
    rows = [{"id": f"d{i}", "text": STORY if i % 2 else f"story number {i} about wheat",
             "when": f"2024-01-0{i + 1}T00:00:00"} for i in range(6)]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "someone-elses.txt").write_text("keep me")
    return path


def _invoke(corpus: Path, args: list[str]):
    tmp = corpus.parent
    before = {p: p.read_bytes() for p in tmp.rglob("*") if p.is_file()}
    result = CliRunner().invoke(main, ["dedup", str(corpus), *(a.format(tmp=tmp) for a in args)])
    after = {p: p.read_bytes() for p in tmp.rglob("*") if p.is_file() and p in before}
    assert after == before, "a file that was there before the run changed"
    return result


def assert_cli_error(result, *names: str) -> None:
    output = result.output
    assert result.exit_code in (1, 2), output
    assert "Traceback" not in output, output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    for name in names:
        assert name in output, f"{name!r} not named in: {output}"
    found = DENY.search(output)
    assert found is None, f"Python spelling {found.group(0)!r} in: {output}"


@pytest.mark.parametrize(("name", "flag", "args"), _option_cases())
def test_invalid_option_value_names_the_flag(corpus, name, flag, args):
    result = _invoke(corpus, args)
    # A method parameter given through --param that has a flag of its own is named by it.
    flag = {"max_df=abc": "--max-df"}.get(args[-1], flag)
    assert_cli_error(result, flag)


@pytest.mark.parametrize(("flag", "others", "args"), _rule_cases())
def test_ignored_option_is_a_usage_error_naming_both_flags(corpus, flag, others, args):
    result = _invoke(corpus, args)
    assert result.exit_code == 2, result.output
    assert_cli_error(result, flag, *others)
    assert "would be ignored" in result.output


def test_every_option_has_a_generated_error_case():
    covered = {case.values[0] for case in _option_cases()}
    covered |= {rule.name for rule in OPTION_RULES}
    options = {p.name for p in dedup_command.params if isinstance(p, click.Option)}
    missing = options - covered - NO_INVALID_VALUE - {"keep", "engine", "method", "cluster",
                                                      "decode_errors", "batch_size", "limit"}
    assert not missing, f"options without an error case: {sorted(missing)}"


# --------------------------------------------------------------------------- readers


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


READER_CASES = {
    # name: (file name, bytes, extra args, phrases the message must hold)
    "bad-json": ("c.jsonl", b'{"text": "a"}\n{not json\n', [], ["line 2"]),
    "no-text-field": ("c.jsonl", b'{"body": "a"}\n', [], ["line 1", "--text-field"]),
    "text-not-string": ("c.jsonl", b'{"text": 5}\n', [], ["line 1"]),
    "duplicate-id": ("c.jsonl", b'{"text": "a", "id": 1}\n{"text": "b", "id": 1}\n',
                     ["--id-field", "id"], ["line 2", "--id-field"]),
    "id-float": ("c.jsonl", b'{"text": "a", "id": 1.5}\n', ["--id-field", "id"], ["line 1"]),
    "no-id-field": ("c.jsonl", b'{"text": "a"}\n', ["--id-field", "id"], ["line 1", "--id-field"]),
    "bad-date": ("c.jsonl", b'{"text": "a", "when": "not a date"}\n', ["--date-field", "when"],
                 ["line 1"]),
    "date-field-nowhere": ("c.jsonl", b'{"text": "a"}\n', ["--date-field", "when"],
                           ["--date-field"]),
    "invalid-utf8": ("c.jsonl", b'{"text": "a \xff b"}\n', [], ["--errors replace"]),
    "huge-int": ("c.jsonl", b'{"text": "a", "n": ' + b"9" * 5000 + b"}\n", [], ["line 1"]),
    "deep-json": ("c.jsonl", b'{"text": "a", "n": ' + _deep(1500).encode() + b"}\n", [], []),
    "truncated-gzip": ("c.jsonl.gz", gzip.compress(b'{"text": "a"}\n' * 50)[:-20], [], []),
    "csv-no-column": ("c.csv", b"body\na\n", [], ["line 1", "--text-field"]),
    "csv-ragged": ("c.csv", b"text,id\na,1\nb\n", [], ["line 3"]),
    "csv-duplicate-header": ("c.csv", b"text,text\na,b\n", [], ["line 1"]),
    "parquet-garbage": ("c.parquet", b"PAR1 not really parquet", [], []),
    "unknown-extension": ("c.xlsx", b"whatever", [], []),
}


@pytest.mark.parametrize("case", sorted(READER_CASES))
def test_reader_errors_name_the_file_in_cli_words(tmp_path, case):
    name, data, args, phrases = READER_CASES[case]
    path = tmp_path / name
    path.write_bytes(data)
    clusters = tmp_path / "clusters.parquet"
    clusters.write_bytes(b"previous")
    result = CliRunner().invoke(main, ["dedup", str(path), *args, "--clusters-out",
                                       str(clusters), "-q"])
    assert_cli_error(result, *(phrases if case in NOT_NAMING_THE_FILE else (str(path), *phrases)))
    assert clusters.read_bytes() == b"previous"
    assert path.read_bytes() == data


#: Errors about every input at once (no record has the field): they name the flag.
NOT_NAMING_THE_FILE = {"date-field-nowhere"}


LEXICAL = ["exact", "ngram", "minhash", "simhash", "sanderson", "spotsigs", "wminhash"]
BAD_PARAMETER_VALUES = ["-1", '"bogus"', "1e9", "[1, 2]", "true", "0", "NaN"]


@pytest.mark.parametrize("method", LEXICAL)
@pytest.mark.slow
def test_every_method_parameter_error_through_param_is_in_cli_words(corpus, method):
    """``--param NAME=VALUE`` for every parameter of the method and values of every JSON
    kind: each refusal names the parameter as the command line sets it."""
    refused = 0
    for name in method_parameters(method):
        if name in ("normalize", "shingle"):
            continue
        for value in BAD_PARAMETER_VALUES:
            result = CliRunner().invoke(main, ["dedup", str(corpus), "--method", method,
                                               "--date-field", "when", "--param",
                                               f"{name}={value}", "-q"])
            if result.exit_code == 0:
                continue  # a valid value after all
            refused += 1
            flag = FLAGS.get(name, f"--param {name}")  # its own flag, if it has one
            assert_cli_error(result)
            assert f"--param {name}" in result.output or flag in result.output, result.output
    assert refused
