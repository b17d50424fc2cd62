"""Fault injection for the index (issue #40): a full disk, damaged pages, SIGKILL in every
phase of add, delete and compact.

After each fault: the index opens, ``stats --check`` tells the truth, and no acknowledged
add is lost. A full disk is a real one where the sandbox lets the test mount a small tmpfs
(skipped otherwise), and always SQLite's own "database or disk is full" through a page
limit set on the index's connection by the test (no hook in neardup). Kills use the
fault-injection plugin (``NEARDUP_TEST_KILL_AT``, ``tests/fault_plugin``) at each phase
boundary's :func:`neardup.faults.checkpoint`, and a SQLite progress handler installed by
the test's own script to kill the process in the middle of a statement (an insert, a
delete, the VACUUM).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow.csv as pacsv
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.index import Index
from tests.fault_plugin import with_plugin

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parents[2]


def _texts(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    out = []
    while len(out) < n:
        story = [rng.choice(words) for _ in range(40)]
        out.append(" ".join(story))
        if rng.random() < 0.3 and len(out) < n:  # a near copy
            story[rng.randrange(40)] = rng.choice(words)
            out.append(" ".join(story))
    return out


def _corpus(path: Path, n: int, start: int = 0) -> Path:
    texts = _texts(start + n)[start:]
    path.write_text("".join(json.dumps({"id": f"d{start + i}", "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    return path


def _run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output, result.exception)
    assert "Traceback" not in result.output
    return result


def _ids(idx: Path) -> list[str]:
    with Index(idx) as index:
        index.stats(check=True)  # the check passes: raises IndexFormatError otherwise
        return index.clusters().column("id").to_pylist()


def _acknowledged(output: str) -> int:
    """Documents the add reported as committed ("committed N documents ...")."""
    return sum(int(line.split()[1]) for line in output.splitlines()
               if line.startswith("committed "))


# -- a full disk ----------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (root only; skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_full_disk_during_add_says_what_was_committed(tmp_path, small_disk):
    idx = small_disk / "idx"
    assert _run("index", "create", idx, "--method", "minhash").exit_code == 0
    corpus = _corpus(tmp_path / "corpus.jsonl", 2000)
    out = tmp_path / "clusters.csv"
    r = _run("index", "add", idx, corpus, "--id-field", "id", "--batch-size", "100",
             "--clusters-out", out)
    assert r.exit_code == 1, r.output
    # SQLite says "full", or an I/O error when the log's index file cannot grow.
    assert ("is full" in r.output or "may be full" in r.output) and str(idx) in r.output
    acknowledged = _acknowledged(r.output)
    assert 0 < acknowledged < 2000
    assert f"Committed before this: {acknowledged:,} documents added" in r.output
    assert f"the first {acknowledged:,} records of {corpus}" in r.output
    assert "--skip-existing" in r.output and "--clusters-out was not written" in r.output
    assert not out.exists()
    # Every acknowledged batch is there, nothing of the failed one, and the check passes.
    assert _ids(idx) == [f"d{i}" for i in range(acknowledged)]
    # With room again (the index moved to a roomy disk), the suggested rerun completes it.
    roomy = tmp_path / "idx"
    shutil.copytree(idx, roomy)
    r = _run("index", "add", roomy, corpus, "--id-field", "id", "--batch-size", "500",
             "--skip-existing", "--clusters-out", out)
    assert r.exit_code == 0, r.output
    rows = pacsv.read_csv(out).column("id").to_pylist()
    assert sorted(rows) == sorted(f"d{i}" for i in range(2000))  # every document once
    assert sorted(_ids(roomy)) == sorted(rows)


def test_full_disk_during_bulk_add_adds_nothing(tmp_path, small_disk):
    idx = small_disk / "idx"
    assert _run("index", "create", idx, "--method", "minhash").exit_code == 0
    corpus = _corpus(tmp_path / "corpus.jsonl", 2000)
    r = _run("index", "add", idx, corpus, "--id-field", "id", "--bulk")
    assert r.exit_code == 1 and "Nothing was added" in r.output, r.output
    assert "is full" in r.output or "may be full" in r.output
    assert _ids(idx) == []


def _fill(directory: Path, leave: int) -> None:
    """Fill the disk of ``directory`` up to ``leave`` free bytes."""
    free = shutil.disk_usage(directory).free
    (directory / f"filler-{uuid.uuid4().hex}").write_bytes(b"\0" * max(0, free - leave))


def _deleted_half(idx: Path, tmp_path: Path, n: int) -> None:
    assert _run("index", "add", idx, _corpus(tmp_path / "c.jsonl", n), "--id-field", "id",
                "-q").exit_code == 0
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"d{i}\n" for i in range(0, n, 2)))
    assert _run("index", "delete", idx, "--ids", ids).exit_code == 0


def test_compact_refuses_before_work_without_room(tmp_path, small_disk):
    idx = small_disk / "idx"
    assert _run("index", "create", idx, "--method", "minhash").exit_code == 0
    _deleted_half(idx, tmp_path, 300)
    before = _ids(idx)
    _fill(small_disk, 64 << 10)
    r = _run("index", "compact", idx)
    assert r.exit_code == 1 and "not enough free space" in r.output, r.output
    assert "Nothing was changed" in r.output
    assert _ids(idx) == before


def test_full_disk_during_compact_leaves_the_index(tmp_path, small_disk, monkeypatch):
    idx = small_disk / "idx"
    assert _run("index", "create", idx, "--method", "minhash").exit_code == 0
    _deleted_half(idx, tmp_path, 300)
    before = _ids(idx)
    _fill(small_disk, 64 << 10)
    # The free-space estimate passes (the test says the disk is roomy): the VACUUM itself
    # then meets the full disk.
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage",
                        lambda path: real(path)._replace(free=1 << 40))
    r = _run("index", "compact", idx)
    monkeypatch.undo()
    assert r.exit_code == 1, r.output
    assert "full" in r.output or "I/O error" in r.output, r.output
    assert "Nothing was changed" in r.output
    assert _ids(idx) == before


@pytest.fixture
def page_limit(monkeypatch):
    """Make the index's connections refuse to grow the database past ``limit[0]`` pages
    beyond its size at open (SQLite's own SQLITE_FULL), set through the connect function
    the index imports."""
    import neardup.index._store as module

    limit = [None]
    real = module.connect

    def connect(directory, **kwargs):
        con = real(directory, **kwargs)
        if limit[0] is not None:
            pages = con.execute("PRAGMA page_count").fetchone()[0]
            con.execute(f"PRAGMA max_page_count = {pages + limit[0]}")
        return con

    monkeypatch.setattr(module, "connect", connect)
    return limit


def test_database_full_during_add_is_a_clear_error(tmp_path, page_limit):
    idx = tmp_path / "idx"
    assert _run("index", "create", idx, "--method", "minhash").exit_code == 0
    first = _corpus(tmp_path / "first.jsonl", 50)
    assert _run("index", "add", idx, first, "--id-field", "id").exit_code == 0
    page_limit[0] = 40
    rest = _corpus(tmp_path / "rest.jsonl", 1000, start=50)
    r = _run("index", "add", idx, rest, "--id-field", "id", "--batch-size", "50")
    assert r.exit_code == 1, r.output
    assert "is full" in r.output and "sqlite" not in r.output.lower().replace("index.sqlite", "")
    acknowledged = _acknowledged(r.output)
    assert f"Committed before this: {acknowledged:,} documents" in r.output
    assert acknowledged < 1000
    page_limit[0] = None
    assert _ids(idx) == [f"d{i}" for i in range(50 + acknowledged)]


def test_database_full_during_python_add(tmp_path, page_limit):
    idx = tmp_path / "idx"
    Index.create(idx, "minhash").close()
    page_limit[0] = 2
    from neardup.index._errors import IndexStorageError

    with Index(idx) as index:
        with pytest.raises(IndexStorageError, match="is full.*Nothing of this add was stored"):
            index.add(_texts(300), [f"d{i}" for i in range(300)])
    page_limit[0] = None
    assert _ids(idx) == []


# -- SIGKILL in every phase -----------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": with_plugin(str(ROOT)), "HF_HUB_OFFLINE": "1", **extra}


def _cli(*args, kill_at: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neardup", *map(str, args)],
                          env=_env(NEARDUP_TEST_KILL_AT=kill_at), capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def stored(tmp_path):
    """An index holding 120 acknowledged documents d0..d119, and 60 more to add."""
    idx = tmp_path / "idx"
    Index.create(idx, "minhash").close()
    first = _corpus(tmp_path / "first.jsonl", 120)
    assert _run("index", "add", idx, first, "--id-field", "id").exit_code == 0
    return idx, _corpus(tmp_path / "more.jsonl", 60, start=120)


@pytest.mark.parametrize("phase, added", [("index-add-written", False),
                                          ("index-add-committed", True)])
def test_sigkill_in_each_phase_of_add(stored, phase, added):
    idx, more = stored
    done = _cli("index", "add", idx, more, "--id-field", "id", kill_at=phase)
    assert done.returncode == -signal.SIGKILL, done.stderr
    expected = [f"d{i}" for i in range(180 if added else 120)]
    assert _ids(idx) == expected  # the acknowledged 120 are all there
    assert _run("index", "stats", idx, "--check").exit_code == 0
    r = _run("index", "add", idx, more, "--id-field", "id", "--skip-existing")
    assert r.exit_code == 0 and _ids(idx) == [f"d{i}" for i in range(180)]


@pytest.mark.parametrize("phase, deleted", [("index-delete-removed", False),
                                            ("index-delete-split", False),
                                            ("index-delete-committed", True)])
def test_sigkill_in_each_phase_of_delete(stored, tmp_path, phase, deleted):
    idx, _ = stored
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"d{i}\n" for i in range(0, 120, 3)))
    done = _cli("index", "delete", idx, "--ids", ids, kill_at=phase)
    assert done.returncode == -signal.SIGKILL, done.stderr
    gone = {f"d{i}" for i in range(0, 120, 3)} if deleted else set()
    assert _ids(idx) == [f"d{i}" for i in range(120) if f"d{i}" not in gone]


@pytest.mark.parametrize("phase", ["index-compact-checkpointed", "index-compact-vacuumed"])
def test_sigkill_in_each_phase_of_compact(stored, tmp_path, phase):
    idx, _ = stored
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"d{i}\n" for i in range(0, 120, 2)))
    assert _run("index", "delete", idx, "--ids", ids).exit_code == 0
    before = _ids(idx)
    done = _cli("index", "compact", idx, kill_at=phase)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert _ids(idx) == before
    assert _run("index", "compact", idx).exit_code == 0
    assert _ids(idx) == before


_MID_STATEMENT = """
import os, signal, sys
from neardup.index import Index
calls = [0]
def kill():
    calls[0] += 1
    if calls[0] >= int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
index = Index(sys.argv[1])
operation = sys.argv[3]
if operation == "add":
    import json
    rows = [json.loads(line) for line in open(sys.argv[4])]
    index._store.writer.set_progress_handler(kill, 200)
    index.add([r["text"] for r in rows], [r["id"] for r in rows])
elif operation == "delete":
    index._store.writer.set_progress_handler(kill, 200)
    index.delete(["d%d" % i for i in range(0, 120, 3)])
else:
    index._store.writer.set_progress_handler(kill, 200)
    index.compact()
print("finished")
"""


@pytest.mark.parametrize("operation, after", [("add", 20), ("add", 300), ("delete", 5),
                                              ("delete", 60), ("compact", 5), ("compact", 25)])
def test_sigkill_in_the_middle_of_a_statement(stored, tmp_path, operation, after):
    """SQLite's progress handler (installed by this script, on the index's writer) kills
    the process after ``after`` x 200 virtual-machine steps: inside an insert, a delete or
    the VACUUM."""
    idx, more = stored
    if operation == "compact":
        with Index(idx) as index:
            index.delete([f"d{i}" for i in range(1, 120, 2)])
    before = _ids(idx)
    done = subprocess.run([sys.executable, "-c", _MID_STATEMENT, str(idx), str(after), operation,
                           str(more)], env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, (done.stdout, done.stderr)  # it really was killed
    ids = _ids(idx)  # opens, and the check passes
    assert ids == before  # the killed transaction left nothing; nothing acknowledged is lost
    assert _run("index", "stats", idx, "--check").exit_code == 0


@pytest.mark.parametrize("phase, merged", [("index-compact-merged", False),
                                           ("index-compact-swapped", True)])
def test_sigkill_while_compacting_vector_segments(tmp_path, phase, merged):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("faiss")
    idx = tmp_path / "idx"
    texts = _texts(12)
    with Index.create(idx, "retsim") as index:
        for k in range(0, 12, 4):  # three segments
            index.add(texts[k:k + 4], [f"d{i}" for i in range(k, k + 4)])
        index.delete(["d0", "d5"])
        segments = index.stats()["vector_segments"]
    assert segments == 3
    done = _cli("index", "compact", idx, kill_at=phase)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with Index(idx) as index:
        stats = index.stats(check=True)
        assert stats["vector_segments"] == (1 if merged else 3)
        assert stats["documents"] == 10
        found = index.query(texts[1:5]).records()
    assert [r["matches"][0]["id"] for r in found] == ["d1", "d2", "d3", "d4"]


# -- SIGTERM and Ctrl-C during an add ---------------------------------------------------------

_SIGNAL_AFTER_FIRST_BATCH = """
import os, signal, sys
# pytest-xdist's workers ignore SIGINT and their children inherit that; Ctrl-C in a shell
# reaches a Python that turns it into KeyboardInterrupt.
signal.signal(signal.SIGINT, signal.default_int_handler)
from neardup.cli import main
from neardup.index import Index
real = Index.add
calls = [0]
def add(self, *args, **kwargs):
    result = real(self, *args, **kwargs)
    calls[0] += 1
    if calls[0] == 2:  # the second batch is committed (not yet acknowledged): signal now
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    return result
Index.add = add
main(sys.argv[2:])
"""


@pytest.mark.parametrize("name, status", [("SIGTERM", 143), ("SIGINT", 130)])
def test_signal_during_add_exits_cleanly_and_says_what_was_committed(tmp_path, name, status):
    idx = tmp_path / "idx"
    Index.create(idx, "minhash").close()
    corpus = _corpus(tmp_path / "corpus.jsonl", 200)
    out = tmp_path / "clusters.csv"
    out.write_text("previous\n")
    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_AFTER_FIRST_BATCH, name, "index", "add", str(idx),
         str(corpus), "--id-field", "id", "--batch-size", "50", "--clusters-out", str(out)],
        env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    assert "Committed before this: 100 documents added" in done.stderr, done.stderr
    assert "--skip-existing" in done.stderr and "--clusters-out was not written" in done.stderr
    assert out.read_text() == "previous\n"
    assert not [p for p in tmp_path.iterdir() if ".neardup-" in p.name]
    assert _ids(idx) == [f"d{i}" for i in range(100)]


def test_check_reports_a_missing_vector_segment(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("faiss")
    idx = tmp_path / "idx"
    texts = _texts(8)
    with Index.create(idx, "retsim") as index:
        index.add(texts[:4], [f"d{i}" for i in range(4)])
        index.add(texts[4:], [f"d{i}" for i in range(4, 8)])
    segment = sorted((idx / "vectors").iterdir())[0]
    segment.unlink()
    r = _run("index", "stats", idx, "--check")
    assert r.exit_code == 1 and "vector segment" in r.output and "To recover" in r.output, r.output
    assert _run("index", "stats", idx).exit_code == 0  # without --check: counts only


def test_check_reports_postings_of_missing_documents(tmp_path):
    idx = tmp_path / "idx"
    with Index.create(idx, "minhash") as index:
        index.add(_texts(20), [f"d{i}" for i in range(20)])
    con = sqlite3.connect(idx / "index.sqlite")
    con.execute("DELETE FROM docs WHERE id = 'd3'")  # a damage SQLite's own check cannot see
    con.commit()
    con.close()
    r = _run("index", "stats", idx, "--check")
    assert r.exit_code == 1 and "name documents that are not stored" in r.output, r.output


def test_full_disk_during_create_leaves_no_half_made_index(small_disk):
    _fill(small_disk, 8 << 10)
    idx = small_disk / "idx"
    r = _run("index", "create", idx, "--method", "minhash")
    assert r.exit_code == 1 and "is full" in r.output and "No index was created" in r.output, r.output
    assert not idx.exists()
    for filler in small_disk.glob("filler-*"):
        filler.unlink()
    assert _run("index", "create", idx, "--method", "minhash").exit_code == 0
    assert _ids(idx) == []


def test_create_after_a_killed_create(tmp_path):
    idx = tmp_path / "idx"
    idx.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (idx / f".index.sqlite.tmp-{dead}").write_bytes(b"half made")  # left by a killed create
    assert _run("index", "create", idx, "--method", "minhash").exit_code == 0
    assert sorted(p.name for p in idx.iterdir()) == ["index.sqlite"]
