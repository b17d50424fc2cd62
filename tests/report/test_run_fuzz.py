"""Fuzzing the report's readers of a run's files: whatever the bytes, load_run returns or
raises InputError (which the CLI prints as one line), never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.errors import InputError
from neardup.report import load_run

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

cells = st.one_of(st.integers(-5, 10**12), st.text(max_size=6), st.booleans(), st.none(),
                  st.floats(allow_nan=True), st.lists(st.integers(), max_size=2))
columns = st.sampled_from(["id", "cluster", "representative", "template", "status", "x"])
rows = st.lists(st.dictionaries(columns, cells, max_size=5), max_size=6)


def _load(path, pairs=None, summary=None):
    try:
        load_run(path, pairs, summary)
    except InputError:
        pass


@SETTINGS
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".tsv", ".jsonl",
                                                              ".parquet", ".jsonl.gz"]))
def test_random_bytes_as_a_clusters_table(tmp_path, data, suffix):
    path = tmp_path / f"clusters{suffix}"
    path.write_bytes(data)
    _load(path)


@SETTINGS
@given(records=rows, suffix=st.sampled_from([".csv", ".jsonl"]))
def test_random_records_as_a_clusters_table(tmp_path, records, suffix):
    path = tmp_path / f"clusters{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        names = sorted({k for r in records for k in r}) or ["id"]
        lines = [",".join(names)] + [",".join(str(r.get(k, "")).replace(",", ";")
                                              .replace("\n", " ") for k in names)
                                     for r in records]
        path.write_text("\n".join(lines) + "\n")
    _load(path)


@SETTINGS
@given(summary=st.recursive(cells, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["summary", "params", "inputs", "timings_seconds", "method", "template_clusters"]),
        inner, max_size=4)), max_leaves=8))
def test_random_json_as_the_run_summary(tmp_path, summary):
    clusters = tmp_path / "clusters.csv"
    clusters.write_text("id,cluster\na,0\nb,0\nc,1\n")
    path = tmp_path / "run.json"
    path.write_text(json.dumps(summary))
    _load(clusters, summary=path)


@pytest.mark.parametrize("pairs", ["id_a,id_b,score\n", "id_a,id_b,score\na,b,\n",
                                   "id_a,id_b,score,outside_window\na,b,0.5,maybe\n"])
def test_odd_but_valid_or_refused_pairs(tmp_path, pairs):
    clusters = tmp_path / "clusters.csv"
    clusters.write_text("id,cluster\na,0\nb,0\nc,1\n")
    path = tmp_path / "pairs.csv"
    path.write_text(pairs)
    _load(clusters, pairs=path)
