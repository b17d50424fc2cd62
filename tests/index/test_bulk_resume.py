"""A bulk add killed (SIGKILL) at each of its steps, then resumed, gives the index an
uninterrupted bulk add gives (Index.bulk_add(resume=True), index add --bulk --resume).
The kills use the fault-injection plugin (NEARDUP_TEST_KILL_AT, tests/fault_plugin) at
neardup.faults checkpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from neardup.errors import InputError
from neardup.index import Index
from tests.fault_plugin import KILL_ENV, with_plugin
from tests.in_process import invoke
from tests.index.corpora import synthetic_texts

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parents[2]
N = 3000

# Builds DIR from CORPUS (JSON list of texts) in batches of 250, checkpointing the sketch
# every 1,000 documents; argv: directory, corpus, resume (0/1).
_SCRIPT = """
import json, sys
from neardup.index import Index
directory, corpus, resume = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
texts = json.loads(open(corpus).read())
batches = ((texts[a:a + 250], [str(i) for i in range(a, min(a + 250, len(texts)))])
           for a in range(0, len(texts), 250))
with Index(directory) as index:
    index.bulk_add(batches, partitions=8, resume=resume, checkpoint_docs=1000,
                   input_key={"corpus": corpus}, log=lambda m: print(m, file=sys.stderr))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    env["PYTHONPATH"] = with_plugin(os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    env["HF_HUB_OFFLINE"] = "1"
    return env | extra


def _build(directory: Path, corpus: Path, resume: bool, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SCRIPT, str(directory), str(corpus),
                           "1" if resume else "0"], env=_env(**env), capture_output=True,
                          text=True, timeout=600)


def _build_here(directory: Path, corpus: Path, resume: bool, *, key: str | None = None) -> str:
    """_SCRIPT's bulk add in this process, for a run nothing kills (a subprocess's start-up
    saved; the kills stay real processes); its log, a message a line. ``key``: the input
    key, if not the corpus's path (as _SCRIPT gives it)."""
    texts = json.loads(corpus.read_text())
    batches = ((texts[a:a + 250], [str(i) for i in range(a, min(a + 250, len(texts)))])
               for a in range(0, len(texts), 250))
    log: list[str] = []
    with Index(directory) as index:
        index.bulk_add(batches, partitions=8, resume=resume, checkpoint_docs=1000,
                       input_key={"corpus": str(corpus) if key is None else key}, log=log.append)
    return "\n".join(log)


def _content(directory: Path):
    with Index(directory) as index:
        con = index._store.reader()
        return (con.execute("SELECT doc, id, cluster, n_features, digest, arrays, text FROM docs "
                            "ORDER BY doc").fetchall(),
                con.execute("SELECT key, payload, doc FROM postings ORDER BY 1, 2, 3").fetchall(),
                con.execute("SELECT * FROM big ORDER BY key").fetchall(),
                index.stats(check=True)["documents"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("resume")
    corpus = base / "corpus.json"
    corpus.write_text(json.dumps(synthetic_texts(N, seed=11)))
    Index.create(base / "whole", "minhash", store_text=True).close()
    _build_here(base / "whole", corpus, False)
    return base, corpus, _content(base / "whole")


@pytest.mark.parametrize("stage", ["bulk-sketch", "bulk-link", "bulk-documents", "bulk-indexed"])
def test_killed_at_each_step_then_resumed_gives_the_same_index(setup, stage):
    base, corpus, expected = setup
    directory = base / stage
    Index.create(directory, "minhash", store_text=True).close()
    killed = _build(directory, corpus, False, **{KILL_ENV: stage})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert list(directory.glob(".bulk-*"))  # the scratch is left for a resume
    with Index(directory) as index:
        assert len(index) == 0  # all or nothing: the index itself is untouched
    log = _build_here(directory, corpus, True)
    assert "resuming an interrupted bulk add" in log
    if stage == "bulk-sketch":  # work was reused, not redone
        assert "sketch resumes after 1000 documents" in log
    else:
        assert "sketch stage already complete" in log
    if stage == "bulk-link":
        assert "linking key partitions from 2" in log
    if stage == "bulk-documents":
        assert "linking key partitions from 8" in log
    assert _content(directory) == expected
    assert not list(directory.glob(".bulk-*"))


def test_resume_refuses_another_input_and_without_resume_starts_afresh(setup):
    base, corpus, expected = setup
    directory = base / "other"
    Index.create(directory, "minhash", store_text=True).close()
    assert _build(directory, corpus, False, **{KILL_ENV: "bulk-link"}).returncode == -signal.SIGKILL
    other = base / "other.json"
    other.write_text(corpus.read_text())
    with pytest.raises(InputError, match="another input"):
        _build_here(directory, other, True, key=str(other) + "x")
    assert "discarding the scratch" in _build_here(directory, corpus, False)
    assert _content(directory) == expected


def test_cli_resume(setup, tmp_path):
    """The input is a directory of two files: a resume checks each file in it, so a file
    rewritten inside it (the directory's own time unchanged) is refused."""
    base, corpus, _ = setup
    texts = json.loads(corpus.read_text())
    folder = tmp_path / "corpus"
    folder.mkdir()
    lines = [json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)]
    (folder / "a.jsonl").write_text("".join(lines[:N // 2]))
    second = folder / "b.jsonl"
    second.write_text("".join(lines[N // 2:]))
    directory = tmp_path / "idx"
    Index.create(directory, "minhash", store_text=True).close()
    command = [sys.executable, "-m", "neardup", "index", "add", str(directory), str(folder),
               "--id-field", "id", "--bulk", "--batch-size", "250"]
    killed = subprocess.run(command, env=_env(**{KILL_ENV: "bulk-link"}), capture_output=True,
                            text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL
    usage = invoke("index", "add", directory, folder, "--resume")  # tests/in_process.py
    assert usage.exit_code == 2 and "--bulk" in usage.stderr

    before, stat = second.read_bytes(), second.stat()
    second.write_text("".join(lines[N // 2:-1]) + json.dumps({"id": str(N - 1), "text": "new"}) + "\n")
    refused = invoke("index", "add", directory, folder, "--id-field", "id", "--bulk",
                     "--batch-size", "250", "--resume")
    assert refused.exit_code == 1 and "another input" in refused.stderr, refused.stderr
    assert "--resume" in refused.stderr and "resume=True" not in refused.stderr
    assert list(directory.glob(".bulk-*"))  # the refused resume keeps the scratch
    second.write_bytes(before)
    os.utime(second, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    resumed = subprocess.run(command + ["--resume"], env=_env(), capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming an interrupted bulk add" in resumed.stderr
    with Index(directory) as index:
        assert index.stats(check=True)["documents"] == N
