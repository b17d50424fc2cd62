"""Hostile input to `neardup index ...`, run as a user runs it (issue #40).

Each case checks the exit code, that no traceback is printed, that the message names the
flag, file or record, that no input (nor the index) is overwritten, and that every
document read appears exactly once in a clustering output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.csv as pacsv
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.index import Index

STORIES = [
    "The central bank raised its key interest rate by half a point on Tuesday, citing "
    "stubborn inflation and strong wage growth across the economy.",
    "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter "
    "crop in the southern plains, traders said on Monday.",
    "A completely different story about football results and the league table after a "
    "weekend of upsets in the northern division.",
]


def _run(*args: str):
    result = CliRunner().invoke(main, [str(a) for a in args])
    # Only SystemExit (click's exit codes) may end a command: any other exception is a crash.
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output, result.exception)
    assert "Traceback" not in result.output
    return result


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _index(tmp_path: Path, method: str = "minhash") -> Path:
    idx = tmp_path / "idx"
    assert _run("index", "create", idx, "--method", method).exit_code == 0
    return idx


def _documents(idx: Path) -> list[str]:
    with Index(idx) as index:
        return index.clusters().column("id").to_pylist()


@pytest.fixture
def corpus(tmp_path) -> Path:
    return _jsonl(tmp_path / "corpus.jsonl", [{"id": f"s{i}", "text": t} for i, t in enumerate(STORIES)])


# -- outputs: checked before anything is committed, never over an input --------------------


def _aliases(tmp_path: Path, corpus: Path) -> dict[str, Path]:
    (tmp_path / "link.jsonl").symlink_to(corpus)
    os.link(corpus, tmp_path / "hard.jsonl")
    return {"same": corpus, "symlink": tmp_path / "link.jsonl", "hardlink": tmp_path / "hard.jsonl",
            "dotdot": tmp_path / "sub" / ".." / corpus.name}


@pytest.mark.parametrize("alias", ["same", "symlink", "hardlink", "dotdot"])
@pytest.mark.parametrize("command", ["add", "bulk", "query"])
def test_output_on_the_input_refused_before_anything(tmp_path, corpus, alias, command):
    (tmp_path / "sub").mkdir()
    idx = _index(tmp_path)
    before = corpus.read_bytes()
    target = _aliases(tmp_path, corpus)[alias]
    flag = "--pairs-out" if command == "query" else "--clusters-out"
    args = ["index", "query" if command == "query" else "add", idx, corpus, "--id-field", "id",
            flag, target] + (["--bulk"] if command == "bulk" else [])
    r = _run(*args)
    assert r.exit_code == 1, r.output
    assert flag in r.output and "replace the input" in r.output and corpus.name in r.output
    assert corpus.read_bytes() == before
    assert _documents(idx) == []
    if command != "query":
        assert "Nothing was added" in r.output
    # The same add without the bad output then works: nothing was committed before.
    args[-2 if command != "bulk" else -3:] = [] if command != "bulk" else ["--bulk"]
    assert _run(*args).exit_code == 0


@pytest.mark.parametrize("name", ["index.sqlite", "index.sqlite-wal"])
def test_output_on_the_index_files_refused(tmp_path, corpus, name):
    idx = _index(tmp_path)
    assert _run("index", "add", idx, corpus, "--id-field", "id").exit_code == 0
    db = (idx / "index.sqlite").read_bytes()
    target = idx / name
    if name.endswith("-wal"):
        target = tmp_path / "wal.jsonl"  # a link to the log, with an extension we write
        (idx / name).touch()
        os.link(idx / name, target)
    r = _run("index", "query", idx, corpus, "--pairs-out", target)
    assert r.exit_code == 1 and "--pairs-out" in r.output, r.output
    assert (idx / "index.sqlite").read_bytes() == db
    assert _run("index", "stats", idx, "--check").exit_code == 0


@pytest.mark.parametrize("bad, says", [
    ("clusters.txt", "cannot tell which format"),
    ("missing-parent-is-a-file/clusters.csv", "is a file, not a directory"),
    ("/proc/clusters.csv", "cannot write in"),
])
@pytest.mark.parametrize("bulk", [False, True])
def test_unwritable_clusters_out_refused_before_the_commit(tmp_path, corpus, bad, says, bulk):
    (tmp_path / "missing-parent-is-a-file").write_text("x")
    idx = _index(tmp_path)
    out = bad if bad.startswith("/") else tmp_path / bad
    extra = ["--bulk"] if bulk else []
    r = _run("index", "add", idx, corpus, "--id-field", "id", "--clusters-out", out, *extra)
    assert r.exit_code == 1 and "--clusters-out" in r.output and says in r.output, r.output
    assert "Nothing was added" in r.output
    assert _documents(idx) == []
    # The rerun is not refused as duplicate ids, and reports every document once.
    good = tmp_path / "clusters.csv"
    r = _run("index", "add", idx, corpus, "--id-field", "id", "--clusters-out", good, *extra)
    assert r.exit_code == 0, r.output
    assert sorted(pacsv.read_csv(good).column("id").to_pylist()) == ["s0", "s1", "s2"]


def test_failed_add_leaves_previous_clusters_out(tmp_path, corpus):
    idx = _index(tmp_path)
    out = tmp_path / "clusters.csv"
    out.write_text("previous\n")
    broken = _jsonl(tmp_path / "broken.jsonl", [{"id": "x", "text": "fine"}, {"id": "y"}])
    r = _run("index", "add", idx, broken, "--id-field", "id", "--clusters-out", out)
    assert r.exit_code == 1 and "broken.jsonl, line 2" in r.output and "--text-field" in r.output
    assert out.read_text() == "previous\n"
    assert not [p for p in tmp_path.iterdir() if ".neardup-" in p.name]  # no temporary left


# -- ids: positions never collide with given ids, skipped documents are counted ------------


def test_add_without_ids_after_add_with_ids_is_refused(tmp_path, corpus):
    idx = _index(tmp_path)
    numbered = _jsonl(tmp_path / "numbered.jsonl", [{"id": "1", "text": STORIES[0]},
                                                    {"id": "2", "text": STORIES[1]}])
    assert _run("index", "add", idx, numbered, "--id-field", "id").exit_code == 0
    fresh = _jsonl(tmp_path / "fresh.jsonl", [{"text": "a new story about the harvest"},
                                              {"text": STORIES[2]}])
    r = _run("index", "add", idx, fresh)
    assert r.exit_code == 1 and "--id-field" in r.output and "Nothing was added" in r.output
    assert _documents(idx) == ["1", "2"]
    # --skip-existing cannot silently drop a new document named "1" by position.
    r = _run("index", "add", idx, fresh, "--skip-existing")
    assert r.exit_code == 2 and "--skip-existing" in r.output and "--id-field" in r.output
    assert _documents(idx) == ["1", "2"]


def test_add_with_ids_after_positional_add_is_refused(tmp_path, corpus):
    idx = _index(tmp_path)
    plain = _jsonl(tmp_path / "plain.jsonl", [{"text": t} for t in STORIES[:2]])
    assert _run("index", "add", idx, plain).exit_code == 0
    assert _run("index", "add", idx, plain).exit_code == 0  # positions continue: 2, 3
    assert _documents(idx) == ["0", "1", "2", "3"]
    r = _run("index", "add", idx, corpus, "--id-field", "id")
    assert r.exit_code == 1 and "leave out --id-field" in r.output, r.output
    assert "id_field" not in r.output and "Index.add" not in r.output
    assert _documents(idx) == ["0", "1", "2", "3"]


def test_skipped_documents_are_counted_and_reported_once(tmp_path, corpus):
    idx = _index(tmp_path)
    first = _jsonl(tmp_path / "first.jsonl", [{"id": "s0", "text": STORIES[0]}])
    assert _run("index", "add", idx, first, "--id-field", "id").exit_code == 0
    out = tmp_path / "c.csv"
    r = _run("index", "add", idx, corpus, "--id-field", "id", "--skip-existing",
             "--clusters-out", out)
    assert r.exit_code == 0, r.output
    assert "committed 2 documents" in r.output and "skipped 1" in r.output
    rows = pacsv.read_csv(out).to_pylist()
    assert sorted(x["id"] for x in rows) == ["s0", "s1", "s2"]  # each once
    assert {x["id"]: x["status"] for x in rows}["s0"] == "skipped"
    assert sorted(_documents(idx)) == ["s0", "s1", "s2"]


# -- fields named by the user that no record has -------------------------------------------


@pytest.mark.parametrize("command", ["add", "bulk", "query"])
@pytest.mark.parametrize("flag", ["--id-field", "--text-field"])
def test_misspelt_field_is_an_error(tmp_path, corpus, command, flag):
    idx = _index(tmp_path)
    args = ["index", "query" if command == "query" else "add", idx, corpus]
    args += [flag, "idd"] if flag == "--id-field" else ["--id-field", "id", flag, "txt"]
    if command == "bulk":
        args.append("--bulk")
    r = _run(*args)
    assert r.exit_code == 1, r.output
    assert flag in r.output and "corpus.jsonl, line 1" in r.output
    assert "id_field" not in r.output and "text_field" not in r.output
    assert _documents(idx) == []


# -- delete: ids exactly as written ---------------------------------------------------------


def test_ids_with_spaces_are_deleted_exactly(tmp_path):
    idx = _index(tmp_path)
    data = _jsonl(tmp_path / "d.jsonl", [{"id": " lead", "text": STORIES[0]},
                                         {"id": "trail ", "text": STORIES[1]},
                                         {"id": "lead", "text": STORIES[2]}])
    assert _run("index", "add", idx, data, "--id-field", "id").exit_code == 0
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b" lead\r\ntrail \r\n\r\n")  # CRLF line endings, a blank line
    r = _run("index", "delete", idx, "--ids", ids)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.splitlines()[0])["deleted"] == 2
    assert _documents(idx) == ["lead"]


def test_ids_file_that_is_not_utf8_names_file_and_line(tmp_path, corpus):
    idx = _index(tmp_path)
    assert _run("index", "add", idx, corpus, "--id-field", "id").exit_code == 0
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"s0\ns1\xff\n")
    r = _run("index", "delete", idx, "--ids", ids)
    assert r.exit_code == 1 and "ids.txt" in r.output and "line 2" in r.output, r.output
    assert "Nothing was deleted" in r.output
    assert sorted(_documents(idx)) == ["s0", "s1", "s2"]


# -- a damaged index ------------------------------------------------------------------------


def _damage(idx: Path, where: str) -> None:
    """Overwrite bytes of the closed database: every third page past the first two
    ('pages'), or the schema page that holds the metadata ('meta')."""
    path = idx / "index.sqlite"
    data = bytearray(path.read_bytes())
    page = 4096
    if where == "pages":
        for number in range(2, len(data) // page, 3):
            data[number * page + 100:number * page + 600] = b"\xff" * 500
    else:
        data[page:2 * page - 96] = b"\x07" * (page - 96)
    path.write_bytes(bytes(data))


@pytest.fixture
def big_corpus(tmp_path) -> Path:
    import random

    rng = random.Random(1)
    words = [f"w{i}" for i in range(3000)]
    return _jsonl(tmp_path / "big.jsonl", [
        {"id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(40))} for i in range(300)])


@pytest.mark.parametrize("where", ["pages", "meta"])
def test_damaged_index_is_reported_by_every_command(tmp_path, big_corpus, where):
    idx = _index(tmp_path)
    assert _run("index", "add", idx, big_corpus, "--id-field", "id").exit_code == 0
    _damage(idx, where)
    r = _run("index", "stats", idx, "--check")
    assert r.exit_code == 1 and "damaged" in r.output and "To recover" in r.output, r.output
    assert "backup" in r.output and "DatabaseError" not in r.output
    ids = tmp_path / "ids.txt"
    ids.write_text("d1\n")
    for args in (["add", idx, big_corpus, "--id-field", "id", "--skip-existing"],
                 ["query", idx, big_corpus, "--id-field", "id"],
                 ["delete", idx, "--ids", ids], ["compact", idx]):
        r = _run("index", *args)
        if where == "pages" and args[0] == "add":
            continue  # an add may not touch a damaged page: SQLite then succeeds
        assert r.exit_code == 1, (args, r.output)
        assert "damaged" in r.output and "To recover" in r.output, (args, r.output)


def test_foreign_file_as_index_is_reported(tmp_path, corpus):
    idx = tmp_path / "idx"
    idx.mkdir()
    (idx / "index.sqlite").write_bytes(b"not a database at all" * 100)
    for args in (["stats", idx, "--check"], ["add", idx, corpus]):
        r = _run("index", *args)
        assert r.exit_code == 1 and "damaged or the file is foreign" in r.output, r.output
        assert "Index.open" not in r.output


# -- messages in the command line's words ---------------------------------------------------

_PYTHON = ("Index.", "Index:", "=True", "=None", "add()", "{'", "parameter '", "MinHashLSH(",
           "id_field", "skip_existing", "sqlite3", "Error:  ")


def test_errors_name_flags_not_python(tmp_path, corpus):
    idx = _index(tmp_path)
    cases = [
        (["index", "add", idx, corpus, "--rerank", "verifier"], "--rerank"),
        (["index", "create", tmp_path / "a", "--method", "retsim-partial"], "--method"),
        (["index", "create", tmp_path / "b", "--method", "minhash", "--verify", "exact"], "--verify"),
        (["index", "create", tmp_path / "c", "--method", "exact", "--rerank", "verifier"], "--rerank"),
        (["index", "create", corpus], "not a directory"),
        (["index", "stats", tmp_path / "missing"], "neardup index create"),
        (["index", "add", idx, tmp_path / "missing.jsonl"], "missing.jsonl"),
    ]
    assert _run("index", "add", idx, corpus, "--id-field", "id").exit_code == 0
    cases += [
        (["index", "add", idx, corpus, "--id-field", "id"], "--skip-existing"),
        (["index", "add", idx, corpus, "--id-field", "id", "--bulk"], "without --bulk"),
    ]
    for args, says in cases:
        r = _run(*args)
        assert r.exit_code == 1, (args, r.output)
        assert says in r.output, (args, r.output)
        assert not [term for term in _PYTHON if term in r.output], (args, r.output)


# -- any id a user can write in an ids file is deleted exactly ------------------------------
# (every character but the line feed, including \r inside, \x85, \u2028 and spaces at
# either end; not a trailing \r, read as a CRLF ending, nor a leading BOM on line 1)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ID = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"),
              min_size=1, max_size=12).filter(lambda i: not i.endswith("\r")
                                              and not i.startswith("\ufeff"))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(_ID, min_size=1, max_size=5, unique=True))
def test_any_id_round_trips_through_the_ids_file(tmp_path_factory, ids):
    tmp = tmp_path_factory.mktemp("ids")
    with Index.create(tmp / "idx", "exact") as index:
        index.add([f"text {k}" for k in range(len(ids) + 1)], ids + ["kept \u00e9"])
    file = tmp / "ids.txt"
    file.write_bytes("".join(f"{i}\n" for i in ids).encode("utf-8"))
    r = _run("index", "delete", tmp / "idx", "--ids", file)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.splitlines()[0])["deleted"] == len(ids)
    assert _documents(tmp / "idx") == ["kept \u00e9"]


def test_query_to_a_closed_pipe_ends_quietly(tmp_path):
    """`index query ... | head -1`: the matches stream batch by batch, and the reader
    closing the pipe ends the query without a message or a traceback."""
    import subprocess
    import sys

    rows = [{"id": f"d{i}", "text": f"{STORIES[i % 3]} Item {i}."} for i in range(1200)]
    corpus = _jsonl(tmp_path / "c.jsonl", rows)
    idx = _index(tmp_path)
    assert _run("index", "add", idx, corpus, "--id-field", "id", "-q").exit_code == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-m", "neardup", "index", "query", str(idx),
                             str(corpus), "--id-field", "id", "--batch-size", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert json.loads(first)["query_id"] == "d0"
    assert stderr == "" and proc.returncode in (0, 1)
