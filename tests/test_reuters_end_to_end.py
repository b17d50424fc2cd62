"""Reuters-21578: stories with identical bodies end up in one cluster (exact and minhash)."""

from collections import defaultdict

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.io import iter_records
from neardup.io.reuters import find_reuters_dir

REUTERS = find_reuters_dir()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REUTERS is None, reason="Reuters-21578 not found (../shared/data)"),
    pytest.mark.filterwarnings("ignore:.*not a valid date:UserWarning"),
]


@pytest.fixture(scope="module")
def files():
    return sorted(str(p) for p in REUTERS.glob("reut2-*.sgm"))


@pytest.fixture(scope="module")
def identical_body_groups(files):
    groups = defaultdict(list)
    for record in iter_records(files):
        body = (record["body"] or "").strip()
        if body:
            groups[body].append(record["id"])
    found = [ids for ids in groups.values() if len(ids) > 1]
    assert len(found) > 200  # the collection has several hundred such pairs
    return found


@pytest.mark.parametrize("method", ["exact", "minhash"])
def test_identical_bodies_share_a_cluster(tmp_path, files, identical_body_groups, method):
    out = tmp_path / "clusters.parquet"
    result = CliRunner().invoke(
        main,
        ["dedup", *files, "--method", method, "--text-field", "body", "--clusters-out", str(out), "-q"],
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out).to_pydict()
    assert len(table["id"]) == 21578
    cluster_of = dict(zip(table["id"], table["cluster"]))
    split = [ids for ids in identical_body_groups if len({cluster_of[i] for i in ids}) > 1]
    assert split == []
