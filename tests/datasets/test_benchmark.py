"""Tests for neardup.datasets.benchmark: labelled benchmarks built from clean dated stories."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from neardup.datasets import benchmark as B
from neardup.datasets.noise import split_sentences
from neardup.io import write_records

SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
COMMON = "the said company would also market first year price bank trade plan new".split()
DAYS = ["1987-03-02", "1987-03-03", "1987-03-04", "1987-03-05", "1987-03-06", "1987-03-09"]
TOPICS = [["grain"], ["trade"], ["crude", "trade"]]
FED = (
    "The Federal Reserve entered the U.S. Government securities market to arrange {x} "
    "billion dlrs of customer repurchase agreements, a Fed spokesman said.\n    Dealers said "
    "Federal funds were trading at {y} pct when the Fed began its temporary and indirect "
    "supply of reserves to the banking system."
)


def _sentence(rng: np.random.Generator, vocab: list[str], quote: bool = False) -> str:
    words = [vocab[i] if rng.random() < 0.8 else COMMON[i % len(COMMON)]
             for i in rng.integers(0, len(vocab), size=int(rng.integers(8, 15)))]  # fmt: skip
    if quote:
        return f'"{" ".join(words[:6]).capitalize()}," said {words[6].capitalize()} {words[7]}.'
    return " ".join(words).capitalize() + "."


def synthetic_stories(n_per_day: int = 22, seed: int = 0) -> list[dict]:
    """Reuters-like records: dated, with topics, a headline, a dateline and a body; plus a
    4-story template family, an exact duplicate re-sent the next day and an expanded
    re-send."""
    rng = np.random.default_rng(seed)
    records = []
    for d, day in enumerate(DAYS):
        for k in range(n_per_day):
            vocab = [
                "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 4)))) for _ in range(60)
            ]
            sentences = [
                _sentence(rng, vocab, quote=(i == 3 and k % 2 == 0))
                for i in range(int(rng.integers(6, 10)))
            ]
            body = "\n    ".join(
                " ".join(sentences[i : i + 2]) for i in range(0, len(sentences), 2)
            )
            title = " ".join(vocab[:5]).upper()
            records.append({
                "id": f"s{d}-{k:02d}", "date": f"{day}T{8 + k % 10:02d}:00:00", "title": title,
                "dateline": f"SPRINGFIELD, March {2 + d} -", "body": body + "\n Reuter",
                "text": f"{title}\n{body}", "topics": TOPICS[(d + k) % 3],
            })  # fmt: skip
    for d, (x, y) in enumerate(
        [("1.5", "6-3/16"), ("2.5", "6-1/4"), ("3.0", "6-1/8"), ("1.0", "6")]
    ):
        body = FED.format(x=x, y=y)
        title = "FED ADDS RESERVES VIA CUSTOMER REPURCHASES"
        records.append({"id": f"fed-{d}", "date": f"{DAYS[d]}T11:45:00", "title": title,
                        "dateline": "NEW YORK -", "body": body, "text": f"{title}\n{body}",
                        "topics": ["money-fx"]})  # fmt: skip
    base = records[5]
    records.append({**base, "id": "dup-copy", "date": f"{DAYS[1]}T09:00:00"})
    extra = " Officials said talks would resume next week in the capital. Prices were steady."
    records.append(
        {**records[30], "id": "expanded", "body": records[30]["body"].replace("\n Reuter", extra)}
    )
    return records


STORIES = synthetic_stories()
SMALL_SPLITS = "train=150,validation=150,test=150"


def build(**kw):
    params = {"seed": 3, "splits": SMALL_SPLITS, "mean_cluster_size": 3.0, "max_cluster_size": 20,
              "hard_negative_share": 0.4}  # fmt: skip
    params.update(kw)
    return B.make_benchmark(STORIES, return_info=True, **params)


@pytest.fixture(scope="module")
def built():
    return build()


def by_source_family():
    stories, _ = B.prepare_stories(STORIES)
    groups = B.find_story_groups(stories)
    return stories, groups


# ------------------------------------------------------------------------------ determinism


def test_same_seed_gives_byte_identical_file(tmp_path, built):
    records, _ = built
    again, _ = build()
    write_records(tmp_path / "a.jsonl.gz", records)
    write_records(tmp_path / "b.jsonl.gz", again)
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    other, _ = build(seed=4)
    write_records(tmp_path / "c.jsonl.gz", other)
    assert (tmp_path / "c.jsonl.gz").read_bytes() != (tmp_path / "a.jsonl.gz").read_bytes()


def test_input_records_are_not_mutated():
    stories = synthetic_stories()
    before = [dict(s) for s in stories]
    B.make_benchmark(stories, seed=1, splits="test=100", mean_cluster_size=2.0)
    assert stories == before


# ------------------------------------------------------------------------------ format


def test_every_record_has_the_shared_fields(built):
    records, _ = built
    assert records
    assert len({r["id"] for r in records}) == len(records)
    for r in records:
        assert isinstance(r["id"], str) and isinstance(r["text"], str) and r["text"].strip()
        assert isinstance(r["cluster"], str)
        assert r["split"] in B.SPLITS
        assert r["date"] is None or (isinstance(r["date"], str) and r["date"][:4] == "1987")
        assert r["kind"] in B.KINDS
        assert isinstance(r["noise"], list) and all(isinstance(n, str) for n in r["noise"])
        assert isinstance(r["source"], str)
    # Grouped by split, in SPLITS order.
    order = [B.SPLITS.index(r["split"]) for r in records]
    assert order == sorted(order)


def test_news_copies_are_noisy_and_report_their_noise(built):
    records, _ = built
    stories = {s.id: s for s in B.prepare_stories(STORIES)[0]}
    ocr = [any(n.startswith("ocr_noise(") for n in r["noise"]) for r in records]
    assert np.mean(ocr) > 0.75  # a text can come through a light scan unchanged
    assert np.mean([r["text"] != stories[r["source"]].text for r in records]) > 0.95
    for r in records:
        title = stories[r["source"]].title
        if "drop_headline" in r["noise"]:
            assert not r["text"].startswith(title[:10])
        if "drop_lead" in r["noise"]:  # continued from another page: no headline either
            assert "drop_headline" in r["noise"]
        if not r["noise"]:
            assert r["text"] == stories[r["source"]].text
    # The wire's "Reuter" sign-off is not part of what papers print.
    assert not any(r["text"].rstrip().endswith("Reuter") for r in records)


# ------------------------------------------------------------------------------ splits


def test_splits_are_disjoint_by_source_story_and_family(built):
    records, _ = built
    stories, groups = by_source_family()
    family_of = {s.id: int(f) for s, f in zip(stories, groups.family)}
    splits_of_source = defaultdict(set)
    splits_of_family = defaultdict(set)
    for r in records:
        splits_of_source[r["source"]].add(r["split"])
        splits_of_family[family_of[r["source"]]].add(r["split"])
    assert len({r["split"] for r in records}) == 3
    assert all(len(s) == 1 for s in splits_of_source.values())
    assert all(len(s) == 1 for s in splits_of_family.values())
    # The template family and the duplicate pair are families with several stories.
    assert family_of["fed-0"] == family_of["fed-3"]
    assert family_of["dup-copy"] == family_of[STORIES[5]["id"]]


def test_splits_are_full_days(built):
    records, info = built
    stories, groups = by_source_family()
    day_of = {s.id: s.day for s in stories}
    split_of = {r["source"]: r["split"] for r in records}
    for name, split in info["splits"].items():
        sources = {r["source"] for r in records if r["split"] == name}
        for day in split["days"]:
            # Every story of a chosen day is in the split, unless its family (spanning
            # several days) went to a split filled before it.
            for story in (s for s in stories if s.day == day):
                assert story.id in sources or B.SPLITS.index(split_of[story.id]) > B.SPLITS.index(
                    name
                )
        outside = {s for s in sources if day_of[s] not in split["days"]}
        assert len(outside) == split["other_day_stories"]
    all_days = [d for s in info["splits"].values() for d in s["days"]]
    assert len(all_days) == len(set(all_days))


def test_assign_splits_fractions_rest_and_zero():
    stories, groups = by_source_family()
    got = B.assign_splits(stories, groups.family, "train=rest,validation=0.2,test=0",
                          np.random.default_rng(0))  # fmt: skip
    assert set(got) == {"train", "validation"}
    assert sum(len(v["stories"]) for v in got.values()) == len(stories)
    assert not set(got["train"]["stories"]) & set(got["validation"]["stories"])


@pytest.mark.parametrize(
    "spec, message",
    [
        ("test", "NAME=SIZE"),
        ("dev=100", "'train', 'validation', 'test'"),
        ("test=100,test=5", "given twice"),
        ("test=-3", "must be"),
        ("train=rest,test=rest", "at most one"),
        ("train=0.7,test=0.6", "sum to at most 1"),
        ("test=many", "Sizes are documents"),
    ],
)
def test_parse_splits_rejects_bad_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        B.parse_splits(spec)


def test_parse_splits_accepts_forms():
    assert B.parse_splits("train=rest, validation=0.1,test=4000") == (
        ("train", "rest"), ("validation", 0.1), ("test", 4000))  # fmt: skip
    assert B.parse_splits({"test": 10}) == (("test", 10),)
    assert B.parse_splits([("validation", 5)]) == (("validation", 5),)


# ------------------------------------------------------------------------------ real groups


def test_find_story_groups_duplicates_templates_and_expansions():
    stories, groups = by_source_family()
    pos = {s.id: i for i, s in enumerate(stories)}
    dup, fam = groups.duplicate, groups.family
    # Exact duplicate re-sent the next day and an expanded re-send: one story each.
    assert dup[pos["dup-copy"]] == dup[pos[STORIES[5]["id"]]]
    assert dup[pos["expanded"]] == dup[pos[STORIES[30]["id"]]]
    # Template stories: one family, four different events.
    feds = [pos[f"fed-{d}"] for d in range(4)]
    assert len({int(fam[i]) for i in feds}) == 1
    assert len({int(dup[i]) for i in feds}) == 4
    assert groups.pairs["identical"] >= 1 and groups.pairs["template"] >= 6
    # Unrelated synthetic stories stay alone.
    assert np.bincount(fam).max() == 4


def test_identical_texts_are_one_story_only_if_they_can_be_a_resend():
    body = " ".join(f"word{i}" for i in range(40))

    def duplicates(**dates):
        stories = [B.Story(k, "", "", body, d, (d or "x")[:10]) for k, d in dates.items()]
        groups = B.find_story_groups(stories)
        assert len(set(groups.family.tolist())) == 1
        return len(set(groups.duplicate.tolist()))

    # Sent again that day, or on Monday after a weekend (~68 h): one story.
    assert duplicates(a="1987-03-02T11:45:00", b="1987-03-02T13:10:00") == 1
    assert duplicates(a="1987-03-06T11:45:00", b="1987-03-09T07:30:00") == 1
    # Same time of day on another day (a scheduled report), or a week later: two events.
    assert duplicates(a="1987-03-02T11:45:00", b="1987-03-03T11:46:00") == 2
    assert duplicates(a="1987-03-02T11:45:00", b="1987-03-09T08:00:00") == 2
    # Without a time of day there is no telling: one story.
    assert duplicates(a="1987-03-02", b="1987-03-03") == 1
    assert duplicates(a=None, b="1987-03-03T11:45:00") == 1


def test_real_duplicates_share_a_cluster_and_templates_do_not(built):
    records, _ = built
    cluster_of = defaultdict(set)
    for r in records:
        cluster_of[r["source"]].add(r["cluster"])
    assert cluster_of["dup-copy"] | cluster_of[STORIES[5]["id"]] == cluster_of[STORIES[5]["id"]]
    fed = [r for r in records if r["source"].startswith("fed-")]
    assert {r["kind"] for r in fed} == {"template"}
    assert len({r["cluster"] for r in fed}) == 4
    clusters_in_split = {(r["split"], r["cluster"]) for r in records}
    for r in fed:
        assert r["negative_of"] != r["cluster"]
        assert (r["split"], r["negative_of"]) in clusters_in_split


def test_prepare_stories_fields_skips_and_pseudo_days():
    records = [
        {"id": 7, "text": "too short"},
        {"text": ""},
        {"text": " ".join(["word"] * 30), "date": "2020-01-05", "topics": "x"},
        {"text": " ".join(["word"] * 30), "date": "not a date"},
        {"id": "r", "text": "T\nbody", "title": "T", "dateline": "X -",
         "body": " ".join(["w"] * 30) + "\n Reuter"},
    ]  # fmt: skip
    stories, skipped = B.prepare_stories(records)
    assert skipped == {"empty": 1, "short": 1, "undated": 2}  # among dated stories
    assert [s.id for s in stories] == ["2"]
    assert stories[0].day == "2020-01-05" and stories[0].topics == ("x",)
    stories, skipped = B.prepare_stories(records[3:])
    assert skipped["undated"] == 0 and [s.id for s in stories] == ["0", "r"]
    assert stories[0].date is None and {s.day for s in stories} == {"undated-0000"}
    assert stories[1].text == "T\nX - " + " ".join(["w"] * 30)
    with pytest.raises(ValueError, match="ids must be unique"):
        B.prepare_stories([{"id": 1, "text": "a"}, {"id": "1", "text": "b"}])
    with pytest.raises(TypeError, match="'text'"):
        B.prepare_stories([{"body": "x"}])


# ------------------------------------------------------------------------------ hard negatives


def test_hard_negatives_present_and_labelled_as_other_clusters(built):
    records, info = built
    kinds = {r["kind"] for r in records}
    assert set(B.HARD_NEGATIVE_KINDS) <= kinds
    clusters_in_split = defaultdict(set)
    for r in records:
        clusters_in_split[r["split"]].add(r["cluster"])
    for r in records:
        if r["kind"].startswith("hard_negative:"):
            assert r["negative_of"] != r["cluster"]
            assert r["negative_of"] in clusters_in_split[r["split"]]
        elif r["kind"] != "template":
            assert "negative_of" not in r
    for split in info["splits"].values():
        assert sum(split["hard_negatives"].values()) > 0


def test_update_replaces_about_half_the_sentences_and_shared_quote_is_inserted():
    stories, _ = by_source_family()
    by_id = {s.id: s for s in stories}
    # In the adversarial profile the first member of each cluster is its clean text.
    records, _ = build(profile="adversarial")
    updates = [r for r in records if r["kind"] == "hard_negative:update" and len(r["noise"]) == 1]
    quotes = [
        r for r in records if r["kind"] == "hard_negative:shared_quote" and len(r["noise"]) == 1
    ]
    assert updates and quotes
    for r in updates:
        anchor = by_id[r["source"]]
        donor = by_id[r["noise"][0].split("donor=")[1].split(",")[0]]
        k, n = map(int, r["noise"][0].split("replaced=")[1].rstrip(")").split("/"))
        assert r["negative_of"] == anchor.id and r["cluster"] == anchor.id + "~update"
        old = split_sentences(anchor.body)
        new = split_sentences(r["text"].split(" - ", 1)[1])
        assert len(new) == len(old) == n
        replaced = [a != b for a, b in zip(old, new)]
        assert sum(replaced) == k and 0.3 <= k / n <= 0.7
        donor_sentences = set(split_sentences(donor.body))
        assert all(b in donor_sentences for a, b, x in zip(old, new, replaced) if x)
    for r in quotes:
        anchor_id = r["noise"][0].split("from=")[1].rstrip(")")
        partner = by_id[r["source"]]
        inserted = set(split_sentences(r["text"])) - set(split_sentences(partner.text))
        assert len(inserted) == 1
        assert inserted <= set(split_sentences(by_id[anchor_id].body))
        assert r["negative_of"] == next(x["cluster"] for x in records if x["source"] == anchor_id)


# ------------------------------------------------------------------------------ calibration


def test_positive_pair_jaccard_lands_near_the_target(built):
    records, info = built
    stats = B.benchmark_stats(records)
    assert info["calibration"]["split"] == "test"
    assert abs(info["calibration"]["estimate"] - 0.30) < 0.01
    assert 0.25 <= stats["test"]["jaccard_positive_mean"] <= 0.35
    assert stats["test"]["jaccard_random_negative_mean"] < 0.05
    clean, _ = build(splits="test=250", target_jaccard=0.6)
    assert B.benchmark_stats(clean)["test"]["jaccard_positive_mean"] > 0.5


def test_fixed_rate_and_noise_scale_turn_calibration_off():
    _, info = build(splits="test=100", rate=0.01)
    assert info["calibration"] is None
    records, info = build(splits="test=100", noise_scale=0.5)
    assert info["calibration"] is None and info["noise_scale"] == 0.5
    with pytest.raises(ValueError, match="target_jaccard"):
        build(splits="test=100", rate=0.01, target_jaccard=0.3)


# ------------------------------------------------------------------------------ adversarial


def test_adversarial_profile_keeps_one_clean_source_per_cluster():
    records, info = build(profile="adversarial", splits="validation=150,test=150")
    assert info["calibration"] is None
    originals = {s.id: s for s in B.prepare_stories(STORIES)[0]}
    members = defaultdict(list)
    for r in records:
        members[(r["split"], r["cluster"])].append(r)
    for group in members.values():
        clean = [
            r
            for r in group
            if not r["noise"] or r["noise"][0].startswith(("update(", "shared_quote("))
        ]
        assert len(clean) >= 1
    sources = [r for r in records if r["kind"] == "source"]
    assert sources and all(r["text"] == originals[r["source"]].text for r in sources)
    adversarial = [r for r in records if r["kind"] == "adversarial"]
    assert adversarial and all(r["noise"] and r["text"] != originals[r["source"]].text
                               for r in adversarial)  # fmt: skip


# ------------------------------------------------------------------------------ stats


def _rec(split, cluster, text, source, date=None, kind="reprint", **extra):
    return {"split": split, "cluster": cluster, "kind": kind, "text": text, "source": source,
            "date": date, **extra}  # fmt: skip


def test_benchmark_stats_on_a_hand_built_case():
    day1, day2 = "1987-03-02T10:00:00", "1987-03-03T10:00:00"
    records = [
        # test: cluster A (3 docs), B (1 doc, a hard negative of A), C (1 doc).
        _rec("test", "A", "one two three four", "a", day1),
        _rec("test", "A", "one two three five", "a", day1),
        _rec("test", "A", "ONE two, three four!", "a", day1),
        _rec("test", "B", "one two three six", "b", day2, "hard_negative:update", negative_of="A"),
        _rec("test", "C", "seven eight nine", "c"),
        # validation: one pair with Jaccard 0.
        _rec("validation", "D", "x y z", "d"),
        _rec("validation", "D", "p q r", "d"),
    ]
    stats = B.benchmark_stats(records)
    assert list(stats) == ["validation", "test", "all"]
    t = stats["test"]
    assert (t["docs"], t["clusters"], t["singletons"], t["reproduced_clusters"]) == (5, 3, 2, 1)
    assert (t["cluster_size_mean"], t["cluster_size_median"], t["cluster_size_max"]) == (
        1.667,
        1.0,
        3,
    )
    assert (t["positive_pairs"], t["negative_pairs"]) == (3, 7)
    # Pairs of A: (1,2) 1/3, (1,3) 1 (same after normalization), (2,3) 1/3.
    assert t["jaccard_positive_mean"] == pytest.approx((1 / 3 + 1 + 1 / 3) / 3, abs=1e-4)
    # B with each member of A: 1/3, 1/3, 1/3.
    assert t["hard_negative_pairs"] == 3
    assert t["jaccard_hard_negative_mean"] == pytest.approx(1 / 3, abs=1e-4)
    assert t["jaccard_hard_negative_by_kind"] == {
        "hard_negative:update": pytest.approx(1 / 3, abs=1e-4)
    }
    assert t["kinds"] == {"hard_negative:update": 1, "reprint": 4}
    assert (t["days"], t["sources"]) == (2, 3)
    v = stats["validation"]
    assert (v["positive_pairs"], v["negative_pairs"], v["jaccard_positive_mean"]) == (1, 0, 0.0)
    a = stats["all"]
    assert (a["docs"], a["clusters"], a["positive_pairs"], a["negative_pairs"]) == (7, 4, 4, 7)
    assert a["jaccard_positive_mean"] == pytest.approx(((1 / 3 + 1 + 1 / 3) + 0) / 4, abs=1e-4)


def test_benchmark_stats_samples_pairs_beyond_max_pairs():
    texts = ["alpha beta gamma delta", "alpha beta gamma epsilon"]
    records = [{"cluster": "A", "text": texts[i % 2], "split": "test"} for i in range(40)]
    exact = B.benchmark_stats(records)["test"]
    sampled = B.benchmark_stats(records, max_pairs=50)["test"]
    assert exact["positive_pairs"] == sampled["positive_pairs"] == 780
    assert abs(exact["jaccard_positive_mean"] - sampled["jaccard_positive_mean"]) < 0.2
    unsplit = B.benchmark_stats([{"cluster": "x", "text": "a b c"}])
    assert list(unsplit) == ["unsplit", "all"]


def test_invalid_parameters_raise_with_the_shared_message_shape():
    with pytest.raises(ValueError, match="make_benchmark: parameter 'profile'"):
        B.make_benchmark(STORIES, profile="spam")
    with pytest.raises(ValueError, match="parameter 'mean_cluster_size'"):
        B.make_benchmark(STORIES, mean_cluster_size=300.0)
    with pytest.raises(ValueError, match="parameter 'hard_negative_share'"):
        B.make_benchmark(STORIES, hard_negative_share=2.0)
    with pytest.raises(TypeError, match="record 0"):
        B.benchmark_stats([{"cluster": "a"}])


def test_empty_and_tiny_corpora():
    assert B.make_benchmark([], splits="test=10") == []
    records = B.make_benchmark(STORIES[:1], splits="test=10", seed=0)
    assert {r["source"] for r in records} == {STORIES[0]["id"]}
    assert all(a["cluster"] == b["cluster"] for a, b in itertools.pairwise(records))
