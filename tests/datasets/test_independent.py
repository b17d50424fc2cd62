"""Independent evaluation sets: third-party augmenters, seeded and reproducible."""

import numpy as np
import pytest

from neardup.datasets.independent import (
    _roff_paragraphs,
    make_independent_set,
    confusable_fold_rate,
    independent_copy,
)

TEXT = ("The Federal Reserve said on Tuesday it added temporary reserves to the banking "
        "system via customer repurchase agreements, economists said. The Fed is expected "
        "to act again on Wednesday to meet reserve needs, dealers said.")


@pytest.mark.parametrize("generator, package", [
    # Importing AugLy alone takes seconds of CPU (its NLP dependencies): the slow lane.
    pytest.param("augly", "augly", marks=pytest.mark.slow),
    ("noisocr", "noisocr"), ("confusables", "confusable_homoglyphs")])
def test_copies_are_seeded_and_noisy(generator, package):
    pytest.importorskip(package)
    a = independent_copy(TEXT, generator, np.random.default_rng([1, 2]))
    b = independent_copy(TEXT, generator, np.random.default_rng([1, 2]))
    assert a == b
    text, noise = a
    assert noise[0].startswith(f"{generator}(severity=")
    assert text != TEXT or len(noise) == 1


def test_unknown_generator_is_refused():
    with pytest.raises(ValueError, match="parameter 'generator' must be one of"):
        independent_copy(TEXT, "ours", np.random.default_rng(0))


@pytest.mark.slow
def test_confusables_set_structure_and_fold_rate():
    pytest.importorskip("confusable_homoglyphs")
    days = ["1987-03-%02d" % d for d in range(1, 13)]
    stories = [{"id": str(i), "text": f"Story {i} " + " ".join(f"word{i}x{k}" for k in range(30)),
                "date": days[i % 12] + "T10:00:00"} for i in range(120)]
    records, info = make_independent_set(stories, "confusables", seed=3,
                                          splits="validation=40,test=40")
    again, _ = make_independent_set(stories, "confusables", seed=3, splits="validation=40,test=40")
    assert records == again
    assert "test" in {r["split"] for r in records}
    val = {r["source"] for r in records if r["split"] == "validation"}
    test = {r["source"] for r in records if r["split"] == "test"}
    assert not val & test  # splits share no story
    assert {"id", "text", "cluster", "split", "date"} <= set(records[0])
    folds = confusable_fold_rate(records)
    assert folds["injected"] > 0 and 0 <= folds["folded"] <= folds["injected"]
    assert folds["table_folded"] < folds["table_glyphs"]  # the normalizer does not fold all


def test_roff_paragraphs():
    source = ('.\\" comment\n.TH LS 1\n.SH NAME\nls \\- list\n.PP\n\\fBls\\fP zeigt '
              'Verzeichnisinhalte an.\nZweite Zeile.\n.TP\n.B \\-a\nalle Dateien\n')
    paragraphs = _roff_paragraphs(source)
    assert "ls zeigt Verzeichnisinhalte an. Zweite Zeile." in paragraphs
    assert all("\\f" not in p and not p.startswith(".") for p in paragraphs)


@pytest.mark.slow
def test_multilingual_sets_drop_paragraphs_shared_across_pages(tmp_path):
    import gzip

    from neardup.datasets.independent import make_multilingual_set

    footer = ("Diese Übersetzung ist Freie Dokumentation; lesen Sie die GNU General Public "
              "License Version 3 für die Copyright-Bedingungen.")
    words = "Datei Verzeichnis Inhalt Zeile Befehl Ausgabe Eingabe Fehler Größe Schlüssel".split()
    (tmp_path / "de" / "man1").mkdir(parents=True)
    for page in range(12):
        body = "".join(
            ".PP\n" + " ".join(words[(page * 7 + k * 3 + w) % 10] + f"{page}x{k}"
                               for w in range(20)) + "\n" for k in range(5))
        source = f".TH CMD{page} 1\n.SH BESCHREIBUNG\n{body}.PP\n{footer}\n"
        (tmp_path / "de" / "man1" / f"cmd{page}.1.gz").write_bytes(gzip.compress(source.encode()))
    records, info = make_multilingual_set("latin", seed=1, docs_per_split=20, man_root=tmp_path)
    assert records and all("Übersetzung" not in r["text"] for r in records)
    assert sum(split["pages"] for split in info["splits"].values()) <= 12


@pytest.mark.slow
def test_multilingual_train_split_leaves_test_and_validation_unchanged():
    pytest.importorskip("faker")
    from neardup.datasets.independent import make_multilingual_set

    two, _ = make_multilingual_set("greek", seed=3, docs_per_split=40)
    three, info = make_multilingual_set("greek", seed=3, docs_per_split=40,
                                         splits=("test", "validation", "train"))
    assert [r for r in three if r["split"] != "train"] == two
    train = [r for r in three if r["split"] == "train"]
    assert train and info["splits"]["train"]["docs"] == len(train)
    assert {r["cluster"] for r in train}.isdisjoint({r["cluster"] for r in two})
    with pytest.raises(ValueError, match="splits"):
        make_multilingual_set("greek", splits=("dev",))


@pytest.mark.slow
def test_multilingual_language_validation_split_balances_languages(tmp_path):
    import gzip

    from neardup.datasets.independent import LANGUAGE_SPLIT, make_multilingual_set

    # Many German pages and few Polish ones: the random page order gives the first splits
    # mostly German; the language-balanced split still gets both languages.
    for language, n_pages in (("de", 30), ("pl", 6)):
        (tmp_path / language / "man1").mkdir(parents=True)
        for page in range(n_pages):
            # Latin paragraphs count as translated when they hold a diacritic.
            body = "".join(".PP\n" + " ".join(f"{language}ä{page}x{k}y{w}" for w in range(60))
                           + "\n" for k in range(4))
            (tmp_path / language / "man1" / f"c{page}.1.gz").write_bytes(
                gzip.compress(f".TH C{page} 1\n.SH X\n{body}".encode()))
    base, _ = make_multilingual_set("latin", seed=2, docs_per_split=30, man_root=tmp_path,
                                     splits=("test", "validation", "train"))
    records, info = make_multilingual_set("latin", seed=2, docs_per_split=30, man_root=tmp_path,
                                           splits=("test", "validation", "train", LANGUAGE_SPLIT),
                                           docs_per_language=20)
    assert [r for r in records if r["split"] != LANGUAGE_SPLIT] == base
    balanced = [r for r in records if r["split"] == LANGUAGE_SPLIT]
    assert {r["lang"] for r in balanced} == {"de", "pl"}
    assert info["splits"][LANGUAGE_SPLIT]["docs_by_language"]["pl"] > 0
    assert sum(info["splits"][LANGUAGE_SPLIT]["docs_by_language"].values()) == len(balanced)
    sources = lambda split: {r["source"].split("~")[0] for r in records if r["split"] == split}  # noqa: E731
    assert sources(LANGUAGE_SPLIT).isdisjoint(sources("test") | sources("validation") | sources("train"))
    with pytest.raises(ValueError, match="end with"):
        make_multilingual_set("latin", man_root=tmp_path, splits=(LANGUAGE_SPLIT, "test"))
