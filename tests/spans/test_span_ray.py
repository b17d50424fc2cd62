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


def test_ray_options_are_checked(data, tmp_path):
    result = CliRunner().invoke(main, ["spans", str(data / "in.jsonl"), "--out",
                                       str(tmp_path / "o.jsonl"), "--ray-address", "auto"])
    assert result.exit_code == 2 and "--engine ray" in result.output
    result = CliRunner().invoke(main, ["spans", str(data / "in.jsonl"), "--out",
                                       str(tmp_path / "o.jsonl"), "--engine", "ray",
                                       "--work-dir", str(tmp_path / "w"), "--resume"])
    assert result.exit_code == 2 and "--resume" in result.output


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
