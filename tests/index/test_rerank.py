"""Rerank verification in the index (Index.create(rerank=...), index create --rerank)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import neardup
from neardup.cli import main as cli
from neardup.index import Index, IndexMismatchError
from neardup.models import MODELS_DIR
from neardup.text.shingle import ShingleConfig
from tests.index.corpora import partition_equal

pytestmark = pytest.mark.skipif(not (MODELS_DIR / "verifier-news" / "model.json").is_file(),
                                reason="no shipped verifier")

# A permissive MinHash threshold: many candidates that the verifier turns down.
THRESHOLD = 0.2
# The index's own MinHash (word 3-grams), not rerank's character 5-gram candidates.
INDEX_CANDIDATES = {"threshold": THRESHOLD, "shingle": ShingleConfig("word", 3)}


@pytest.fixture(scope="module")
def texts(demo_texts):
    return demo_texts[:3000]


@pytest.fixture(scope="module")
def expected(texts):
    """One-shot dedup --method rerank with the index's method (MinHash defaults: word
    3-grams, not rerank's own character 5-gram candidates) as the candidates, clustered
    by connected components as the index links (not rerank's default Leiden), with
    rerank's template guard, which the index's verification applies too, and every
    candidate scored (no low_partners cap), as the index scores them."""
    return neardup.dedup(texts, "rerank", pair_types=False, scorer="verifier", candidates="minhash",
                         candidate_params=INDEX_CANDIDATES, cluster="components",
                         low_partners=None).clusters


def _labels(index: Index, n: int) -> np.ndarray:
    table = index.clusters()
    labels = np.full(n, -1, np.int64)
    labels[np.array(table.column("id").to_pylist(), int)] = table.column("cluster").to_numpy()
    return labels


def _batches(texts, size):
    return [(texts[a:a + size], [str(i) for i in range(a, min(a + size, len(texts)))])
            for a in range(0, len(texts), size)]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["add in 3 batches", "bulk"])
def test_rerank_index_gives_dedup_rerank_clusters(texts, expected, tmp_path, how):
    plain = neardup.dedup(texts, "minhash", pair_types=False, threshold=THRESHOLD).clusters
    # The verifier changes the clustering here, so the equality below is not vacuous.
    assert not partition_equal(plain, expected)
    with Index.create(tmp_path / "idx", "minhash", rerank="verifier", threshold=THRESHOLD) as index:
        if how == "bulk":
            index.bulk_add(_batches(texts, 1000), partitions=8)
        else:
            for batch, ids in _batches(texts, 1000):
                index.add(batch, ids)
        assert partition_equal(_labels(index, len(texts)), expected)
        stats = index.stats(check=True)
        assert stats["rerank"]["scorer"] == "verifier" and stats["rerank"]["threshold"] == 0.9
        con = index._store.reader()
        count, stored = con.execute("SELECT count(*), sum(length(text)) FROM rerank_text").fetchone()
        assert count == len(texts)
        assert stored < sum(len(t.encode()) for t in texts)  # compressed


@pytest.mark.slow
def test_query_matches_are_minhash_matches_the_verifier_confirms(texts, tmp_path):
    stored, probe = texts[:2500], texts[2500:]
    with Index.create(tmp_path / "plain", "minhash", threshold=THRESHOLD) as plain, \
            Index.create(tmp_path / "rr", "minhash", threshold=THRESHOLD,
                         rerank={"scorer": "verifier", "threshold": 0.9}) as rr:
        plain.add(stored)
        rr.add(stored)
        a = {(r["id"], m["id"]) for r in plain.query(probe, top_k=100).records() for m in r["matches"]}
        found = rr.query(probe, top_k=100).records()
        b = {(r["id"], m["id"]) for r in found for m in r["matches"]}
        assert b and b < a  # a strict subset: the verifier turned some down
        assert all(m["score"] >= 0.9 for r in found for m in r["matches"])


def test_texts_stored_only_with_rerank_and_mismatch_refused(tmp_path):
    with Index.create(tmp_path / "plain", "minhash") as index:
        index.add(["some text here for the index", "another one"])
        tables = {r[0] for r in index._store.reader().execute("SELECT name FROM sqlite_master")}
        assert "rerank_text" not in tables and index.stats()["rerank"] is None
        index.check_rerank(None)
        with pytest.raises(IndexMismatchError, match="rerank"):
            index.check_rerank("verifier")
    Index.create(tmp_path / "rr", "minhash", rerank={"scorer": "verifier", "threshold": 0.8}).close()
    with Index(tmp_path / "rr", rerank={"scorer": "verifier", "threshold": 0.8}) as index:
        assert index.rerank["threshold"] == 0.8
    for other in (None, "verifier", {"scorer": "verifier", "threshold": 0.5}):
        with pytest.raises(IndexMismatchError, match="rerank"):
            Index(tmp_path / "rr", rerank=other)
    with pytest.raises(ValueError, match="applies to the methods"):
        Index.create(tmp_path / "s", "simhash", rerank="verifier")
    with pytest.raises(ValueError, match="rerank model"):
        Index.create(tmp_path / "m", "minhash", rerank={"model": str(tmp_path / "nowhere")})


@pytest.mark.slow
def test_delete_relinks_with_the_verifier(texts, expected, tmp_path):
    keep = np.ones(len(texts), bool)
    keep[::7] = False
    rest = [t for t, k in zip(texts, keep) if k]
    want = neardup.dedup(rest, "rerank", pair_types=False, scorer="verifier", candidates="minhash",
                         candidate_params=INDEX_CANDIDATES, cluster="components",
                         low_partners=None).clusters
    with Index.create(tmp_path / "idx", "minhash", rerank="verifier", threshold=THRESHOLD) as index:
        index.add(texts)
        index.delete([str(i) for i in np.flatnonzero(~keep).tolist()])
        table = index.clusters()
        assert table.column("id").to_pylist() == [str(i) for i in np.flatnonzero(keep).tolist()]
        assert partition_equal(table.column("cluster").to_numpy(), want)
        assert index._store.reader().execute("SELECT count(*) FROM rerank_text").fetchone()[0] == len(rest)


def test_cli_create_add_query_and_help(texts, tmp_path):
    runner = CliRunner()
    assert "--rerank" in runner.invoke(cli, ["index", "create", "--help"]).output
    assert "--rerank" in runner.invoke(cli, ["index", "query", "--help"]).output
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                              for i, t in enumerate(texts[:600])))
    idx = str(tmp_path / "idx")
    r = runner.invoke(cli, ["index", "create", idx, "--method", "minhash", "--threshold", "0.2",
                            "--rerank", "verifier", "--rerank-threshold", "0.8"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["rerank"]["threshold"] == 0.8
    r = runner.invoke(cli, ["index", "add", idx, str(corpus), "--id-field", "id", "--bulk", "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["index", "query", idx, str(corpus), "--id-field", "id", "--limit", "20",
                            "--rerank", "verifier", "--rerank-threshold", "0.8"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in r.output.splitlines()]
    assert rows and all(row["score"] >= 0.8 for row in rows)
    r = runner.invoke(cli, ["index", "query", idx, str(corpus), "--rerank", "verifier"])
    assert r.exit_code != 0 and "rerank" in r.output
    r = runner.invoke(cli, ["index", "create", str(tmp_path / "x"), "--rerank-threshold", "0.5"])
    assert r.exit_code != 0 and "--rerank" in r.output


def test_http_reports_and_checks_rerank(texts, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from neardup.index.service import create_app

    Index.create(tmp_path / "idx", "minhash", rerank="verifier", threshold=THRESHOLD).close()
    with TestClient(create_app(tmp_path / "idx"), raise_server_exceptions=False) as client:
        assert client.get("/stats").json()["rerank"]["scorer"] == "verifier"
        docs = [{"id": str(i), "text": t} for i, t in enumerate(texts[:50])]
        r = client.post("/add", json={"documents": docs, "rerank": {"scorer": "verifier"}})
        assert r.status_code == 200, r.text
        r = client.post("/query", json={"documents": [{"text": texts[3]}],
                                        "rerank": {"scorer": "verifier"}})
        assert r.status_code == 200 and r.json()["results"][0]["matches"][0]["id"] == "3"
        for bad in ({"scorer": "none"}, {"scorer": "verifier", "threshold": 0.1}):
            r = client.post("/query", json={"documents": [{"text": "x"}], "rerank": bad})
            assert r.status_code == 409, r.text
        r = client.post("/query", json={"documents": [{"text": "x"}], "rerank": {"scorer": "?"}})
        assert r.status_code == 422


# Two companies' dividend notices (Reuters-21578 stories 18619-like): one template, other
# figures; the shipped verifier alone calls them a copy. The third is an OCR-damaged copy
# of the first.
_NOTICE = "Qtly div five cts vs five cts prior\n    Pay July 15\n    Record June 30\n Reuter"
_OTHER_COMPANY = "Qtly div five cts vs five cts prior\n    Pay July 28\n    Record June 30\n Reuter"
_OCR_COPY = "Qtly dlv five cts vs flve cts pri0r\n    Pay Ju1y 15\n    Rec0rd June 3O\n Reuter"
# rerank's own default candidates (MinHash, character 5-grams, Jaccard 0.1) as the index's
# method: dedup --method rerank and the index then verify the same candidate pairs.
RERANK_CANDIDATES = {"threshold": 0.1, "shingle": ShingleConfig("char", 5)}


def _match_pairs(index: Index, texts: list[str]) -> dict[tuple[int, int], float]:
    """Every (stored, query) match of querying ``texts`` against an index holding them,
    as (smaller, larger) position pairs with their scores (a text's match with itself
    left out)."""
    found = index.query(texts, top_k=len(texts)).records()
    return {(min(int(r["id"]), int(m["id"])), max(int(r["id"]), int(m["id"]))): m["score"]
            for r in found for m in r["matches"] if m["id"] != r["id"]}


@pytest.mark.parametrize("guard", [True, False])
def test_template_notices_kept_apart_by_dedup_and_the_index(tmp_path, guard):
    texts = [_NOTICE, _OTHER_COMPANY, _OCR_COPY]
    # The in-memory engine reports every accepted pair (the others only those that join).
    dedup = neardup.dedup(texts, "rerank", engine="memory", pair_types=False, cluster="components",
                          template_guard=guard)
    want = {(int(a), int(b)) for a, b, _ in zip(*dedup.pairs)}
    # The guard keeps the two companies apart; the scorer alone merges them.
    assert want == ({(0, 2)} if guard else {(0, 1), (0, 2), (1, 2)})
    with Index.create(tmp_path / "idx", "minhash", **RERANK_CANDIDATES,
                      rerank={"scorer": "verifier", "template_guard": guard}) as index:
        assert index.rerank["template_guard"] is guard
        added = index.add(texts, ["0", "1", "2"])
        assert partition_equal(added.clusters, dedup.clusters)
        assert set(_match_pairs(index, texts)) == want


def test_index_query_accepts_the_pairs_dedup_accepts_with_its_scores(demo_texts, tmp_path):
    texts = [_NOTICE, _OTHER_COMPANY, _OCR_COPY, *demo_texts[:200]]
    dedup = neardup.dedup(texts, "rerank", engine="memory", pair_types=False, cluster="components")
    want = {(int(a), int(b)): float(s) for a, b, s in zip(*dedup.pairs)}
    assert len(want) > 5 and (0, 1) not in want and (0, 2) in want
    with Index.create(tmp_path / "idx", "minhash", **RERANK_CANDIDATES, rerank="verifier") as index:
        index.add(texts, [str(i) for i in range(len(texts))])
        got = _match_pairs(index, texts)
    assert set(got) == set(want)
    assert np.allclose([got[p] for p in want], [want[p] for p in want], atol=1e-6)


def test_index_recorded_before_the_guard_verifies_without_it(tmp_path):
    with Index.create(tmp_path / "idx", "minhash", **RERANK_CANDIDATES, rerank="verifier") as index:
        con = index._store.writer
        recorded = json.loads(con.execute("SELECT value FROM meta WHERE name = 'rerank'").fetchone()[0])
        del recorded["template_guard"]  # as an index of an earlier neardup records it
        con.execute("UPDATE meta SET value = ? WHERE name = 'rerank'", (json.dumps(recorded),))
    with Index(tmp_path / "idx", rerank="verifier") as index:  # the guard unset: the index's own
        assert index.rerank["template_guard"] is False
        index.add([_NOTICE, _OTHER_COMPANY])
        assert len(_match_pairs(index, [_NOTICE, _OTHER_COMPANY])) == 1
        with pytest.raises(IndexMismatchError, match="rerank"):
            index.check_rerank({"scorer": "verifier", "template_guard": True})


def test_concurrent_queries_give_the_serial_answers(demo_texts, tmp_path):
    """Queries from several threads share the index's scorer (and its profile cache, by
    position): each gets the answer it gets alone."""
    from concurrent.futures import ThreadPoolExecutor

    texts = demo_texts[:160]
    probes = [texts[i:i + 20] for i in range(0, 160, 20)]  # each query position holds 8 texts
    with Index.create(tmp_path / "idx", "minhash", **RERANK_CANDIDATES, rerank="verifier") as index:
        index.add(texts)
        serial = [index.query(p, top_k=20).records() for p in probes]
        with ThreadPoolExecutor(4) as pool:
            together = list(pool.map(lambda p: index.query(p, top_k=20).records(), probes))
    assert sum(len(r["matches"]) for answer in serial for r in answer) >= 160
    assert together == serial
