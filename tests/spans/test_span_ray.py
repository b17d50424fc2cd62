"""``neardup spans`` and ``neardup substrings`` with ``--engine ray`` on a two-node
cluster write the bytes the local engine writes, every record once; and
``find_repeated_spans_ray`` from Python gives the local decisions."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

ray = pytest.importorskip("ray")

from neardup.cli import main  # noqa: E402
from neardup.spans import SpanDedupConfig, find_repeated_spans, remove_spans  # noqa: E402
from neardup.spans.ray_executor import find_repeated_spans_ray  # noqa: E402

pytestmark = pytest.mark.ray

WORDS = ("wheat corn copper gold rate bank rose fell said traders market week price oil "
         "yen dollar shares profit loss quarter").split()
FOOTERS = ["Copyright the wire service. All rights reserved.",
           "Reporting by the desk; editing by the night editor.",
           "Subscribe to the newsletter for more market stories. It is free."]


@pytest.fixture
def cluster(ray_cluster):
    """The session's Ray cluster (tests/conftest.py): its address."""
    return ray_cluster["address"]


def _texts(seed: int, docs: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(docs):
        sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) + "."
                     for _ in range(rng.randint(1, 4))]
        sentences += rng.sample(FOOTERS, rng.randint(0, 2))
        rng.shuffle(sentences)
        sep = rng.choice(["\n", "\n\n", " "])
        texts.append(sep.join(sentences))
    return texts


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    for name, seed, docs in (("in", 0, 600), ("eval", 1, 60)):
        rows = [{"id": f"{name}{i}", "text": t} for i, t in enumerate(_texts(seed, docs))]
        (directory / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # A copied passage of the evaluation set inside some inputs, for --against.
    rows = [json.loads(line) for line in (directory / "in.jsonl").read_text().splitlines()]
    evals = [json.loads(line) for line in (directory / "eval.jsonl").read_text().splitlines()]
    for i in range(0, len(rows), 25):
        rows[i]["text"] += " " + evals[i % len(evals)]["text"]
    (directory / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


def _outputs(directory, args):
    out = {name: directory / name for name in ("out.jsonl", "removed.parquet", "report.json")}
    result = CliRunner().invoke(main, [*map(str, args), "--out", str(out["out.jsonl"]),
                                       "--removed-out", str(out["removed.parquet"]),
                                       "--report", str(out["report.json"]), "-q",
                                       "--batch-size", "64", "--memory-limit", "1MB"])
    assert result.exit_code == 0, result.output
    report = json.loads(out["report.json"].read_text())
    report.pop("timings_seconds")
    return out["out.jsonl"].read_bytes(), out["removed.parquet"].read_bytes(), report


CASES = {
    "line": ["spans", "{in}", "--unit", "line", "--min-length", "10"],
    "paragraph": ["spans", "{in}", "--unit", "paragraph", "--min-length", "10", "--keep", "last"],
    "sentences": ["spans", "{in}", "--unit", "sentences:2", "--min-length", "10"],
    "substrings": ["substrings", "{in}", "--min-tokens", "8"],
    "substrings-against": ["substrings", "{in}", "--min-tokens", "8", "--against", "{eval}"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_ray_engine_writes_the_local_bytes(cluster, data, tmp_path, case):
    args = [a.format(**{"in": data / "in.jsonl", "eval": data / "eval.jsonl"}) for a in CASES[case]]
    (tmp_path / "local").mkdir()
    (tmp_path / "ray").mkdir()
    local = _outputs(tmp_path / "local", args)
    remote = _outputs(tmp_path / "ray", [*args, "--engine", "ray"])
    assert remote == local
    summary = local[2]["summary"]
    assert summary["documents"] == 600 and summary["bytes_removed"] > 0
    ids = [json.loads(line)["id"] for line in local[0].decode().splitlines()]
    assert ids == [f"in{i}" for i in range(600)]  # every record once, in input order
    if case.startswith("substrings"):
        assert summary["chunks"] > 1  # the cross-chunk table's steps ran too


@pytest.fixture(scope="module")
def sharded(data, tmp_path_factory):
    """The input as two Parquet files of row groups of 70 rows and a JSONL file, and the
    evaluation set as two files: with --ray-shard-rows 100 the workers read ten shards
    whose edges fall inside the reader's batches of 64."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = tmp_path_factory.mktemp("sharded")
    rows = [json.loads(line) for line in (data / "in.jsonl").read_text().splitlines()]
    for name, part in (("a.parquet", rows[:250]), ("b.parquet", rows[250:500])):
        pq.write_table(pa.Table.from_pylist(part), directory / name, row_group_size=70)
    (directory / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[500:]))
    evals = (data / "eval.jsonl").read_text().splitlines(keepends=True)
    (directory / "e1.jsonl").write_text("".join(evals[:30]))
    (directory / "e2.jsonl").write_text("".join(evals[30:]))
    return directory


SHARDED_CASES = {
    "spans": ["spans", "{a}", "{b}", "{c}", "--unit", "sentences:2", "--min-length", "10"],
    "substrings": ["substrings", "{a}", "{b}", "{c}", "--min-tokens", "8"],
    "substrings-against": ["substrings", "{a}", "{b}", "{c}", "--min-tokens", "8",
                           "--against", "{e1}", "--against", "{e2}"],
}


@pytest.mark.parametrize("case", list(SHARDED_CASES))
def test_workers_reading_shards_write_the_local_bytes(cluster, sharded, tmp_path, case):
    """Shards that cut files and batches: the numbering, the chunks (planned on the
    driver from the shards' token counts) and the rewrite still give the local bytes;
    documents numbered by position get the local ids."""
    names = {"a": "a.parquet", "b": "b.parquet", "c": "c.jsonl", "e1": "e1.jsonl", "e2": "e2.jsonl"}
    args = [a.format(**{k: sharded / v for k, v in names.items()}) for a in SHARDED_CASES[case]]
    (tmp_path / "local").mkdir()
    (tmp_path / "ray").mkdir()
    local = _outputs(tmp_path / "local", args)
    remote = _outputs(tmp_path / "ray", [*args, "--engine", "ray", "--ray-shard-rows", "100"])
    assert remote == local
    assert local[2]["summary"]["documents"] == 600 and local[2]["summary"]["bytes_removed"] > 0
    if case.startswith("substrings"):
        assert local[2]["summary"]["chunks"] > 1


def test_plan_chunks_follows_the_batches_of_the_local_read():
    """The chunk planner cuts where the local run cuts: it looks at the pending tokens at
    the ends of the reader's batches and files only (an empty document after a batch that
    reached the limit joins the next chunk, one inside the batch joins this one)."""
    from types import SimpleNamespace

    import numpy as np

    from neardup.spans.sharded import ShardRead, plan_chunks
    from neardup.spans.substring_dedup import _chunks
    from neardup.spans.tokens import tokenize

    rng = random.Random(3)
    for trial in range(200):
        batch_size = rng.randint(1, 5)
        files = [[" ".join("w" * rng.randint(0, 1) for _ in range(rng.choice([0, 1, 2, 5, 9])))
                  for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(1, 3))]
        chunk_tokens = rng.randint(1, 12)
        # The local run: per file, batches of batch_size documents.
        batches = [(tokenize(f[i:i + batch_size]), False) for f in files
                   for i in range(0, len(f), batch_size)]
        starts: list[int] = []
        local = [c[1].shape[0] - 1 for c in _chunks(iter(batches), chunk_tokens, starts)]
        # The planner: each file cut into shards of a random number of rows.
        reads, lengths, first = [], [], 0
        for number, f in enumerate(files):
            row = 0
            while row < len(f):
                stop = min(len(f), row + rng.randint(1, 6))
                read = ShardRead(SimpleNamespace(path=f"f{number}.parquet", start=row, stop=stop),
                                 False, documents=stop - row, first=first)
                reads.append(read)
                lengths.append(np.diff(tokenize(f[row:stop]).bounds))
                first += stop - row
                row = stop
        planned = plan_chunks(reads, np.concatenate(lengths), batch_size, chunk_tokens)
        assert [a for a, _ in planned] == starts, trial
        assert [b - a for a, b in planned] == local, trial


def test_ray_options_are_checked(data, tmp_path):
    result = CliRunner().invoke(main, ["spans", str(data / "in.jsonl"), "--out",
                                       str(tmp_path / "o.jsonl"), "--ray-address", "auto"])
    assert result.exit_code == 2 and "--engine ray" in result.output
    result = CliRunner().invoke(main, ["spans", str(data / "in.jsonl"), "--out",
                                       str(tmp_path / "o.jsonl"), "--engine", "ray",
                                       "--work-dir", str(tmp_path / "w"), "--resume"])
    assert result.exit_code == 2 and "--resume" in result.output
    result = CliRunner().invoke(main, ["substrings", str(data / "in.jsonl"), "--out",
                                       str(tmp_path / "o.jsonl"), "--ray-shard-rows", "100"])
    assert result.exit_code == 2 and "--ray-shard-rows is read with --engine ray" in result.output
    result = CliRunner().invoke(main, ["spans", str(data / "in.jsonl"), "--out",
                                       str(tmp_path / "o.jsonl"), "--engine", "ray", "--limit", "5"])
    assert result.exit_code == 2 and "--limit is for --engine local" in result.output
    assert not (tmp_path / "o.jsonl").exists()


def _corpus(seed=0, docs=60):
    rng = random.Random(seed)
    lines = [f"Line number {i} of the shared boilerplate." for i in range(12)]
    return [["\n".join(rng.choice(lines) for _ in range(rng.randint(0, 6)))
             for _ in range(docs // 3)] for _ in range(3)]


@pytest.mark.parametrize("partitions", [1, 4])
@pytest.mark.parametrize("keep", ["first", "last"])
def test_python_ray_decisions_match_local(tmp_path, cluster, partitions, keep):
    batches = _corpus()
    config = SpanDedupConfig(unit="line", min_length=10, keep=keep, top=5)
    local = find_repeated_spans(batches, config, work_dir=tmp_path / "local", memory_limit=1 << 20)
    remote = find_repeated_spans_ray(batches, config, work_dir=tmp_path / "ray",
                                     partitions=partitions)
    assert (remote.documents, remote.spans, remote.distinct, remote.repeated, remote.removed) == (
        local.documents, local.spans, local.distinct, local.repeated, local.removed)
    assert [t["hash"] for t in remote.top] == [t["hash"] for t in local.top]
    assert local.removed > 0
    texts_local = [r.texts for r in remove_spans(batches, local)]
    texts_remote = [r.texts for r in remove_spans(batches, remote)]
    assert texts_remote == texts_local


def test_a_failed_step_raises_its_own_error(cluster):
    from neardup.spans.executors import RayExecutor

    # A step failing in the worker on its second argument.
    with pytest.raises(json.JSONDecodeError, match="Expecting property name") as info:
        list(RayExecutor()(json.loads, [("[1]",), ("{",)]))
    assert type(info.value) is json.JSONDecodeError and "Traceback" not in str(info.value)


def test_a_shard_changed_between_the_passes_is_named(cluster, data):
    """The rewrite compares each shard's texts with the counting pass's digest: a shard
    whose texts differ (here: a digest that cannot match) is an InputError naming its
    file, before any of its records is handed on."""
    import numpy as np

    from neardup.errors import InputError
    from neardup.io import ReaderConfig
    from neardup.spans.ranges import apply_ranges
    from neardup.spans.sharded import ShardRead, rewrite_shards, shards_of

    reader = ReaderConfig()
    reads = [ShardRead(shard, False, documents=600, digest=b"counted-other-texts")
             for shard in shards_of([data / "in.jsonl"], reader)]
    empty = np.empty(0, np.int64)
    with pytest.raises(InputError, match=r"in\.jsonl: its texts changed between the counting"):
        next(rewrite_shards(reads, reader, apply_ranges, lambda lo, hi: (empty, empty, empty)))
