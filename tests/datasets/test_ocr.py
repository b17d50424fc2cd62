"""The real-OCR set: pages rendered with Pillow, read back by Tesseract (neardup/datasets/ocr.py)."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from neardup.datasets.ocr import OcrEngine, PageStyle, make_ocr_set, render_page, reprint_edit

TEXT = ("De sommen worden berekend zoals beschreven in de norm. Bij het controleren moet de "
        "invoer een eerdere uitvoer van dit programma zijn. De standaardmodus toont voor elk "
        "bestand een regel met de controlesom. Een spatie volgt op de som.")


def _tesseract_with(language: str) -> bool:
    if shutil.which("tesseract") is None:
        return False
    out = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True).stdout
    return language in out.split()


def test_pages_and_edits_follow_the_seed():
    pytest.importorskip("PIL")
    pages = []
    for _ in range(2):
        rng = np.random.default_rng([7, 1])
        text, notes = reprint_edit(TEXT, rng, ["Een andere eerste zin."])
        style = PageStyle.draw(rng)
        pages.append((text, notes, style, render_page(text, style, rng)))
    assert pages[0] == pages[1]
    assert pages[0][3].startswith(b"\x89PNG")
    assert 13 <= pages[0][2].size <= 26 and abs(pages[0][2].rotation) <= 1.5


def test_reprint_edits_shorten_or_change_the_lead():
    seen = set()
    for k in range(40):
        text, notes = reprint_edit(TEXT, np.random.default_rng(k), ["Een andere eerste zin."])
        if not notes:
            assert text == TEXT
            continue
        seen.add(notes[0].split("(")[0])
        if notes[0].startswith(("abridge", "drop_lead")):
            assert len(text) < len(TEXT)
        else:
            assert text.startswith("Een andere eerste zin.") and text.endswith("volgt op de som.")
    assert seen == {"abridge", "drop_lead", "change_first_line"}


def _needs_dutch_pages(tesseract: bool) -> None:
    """Skip unless Pillow and Debian's Dutch man pages (and, with ``tesseract``, Tesseract
    with Dutch data) are installed."""
    pytest.importorskip("PIL")
    if tesseract and not _tesseract_with("nld"):
        pytest.skip("tesseract with Dutch data (tesseract-ocr-nld) is not installed")
    if not any(Path("/usr/share/man/nl").glob("man*/*.gz")):
        pytest.skip("Debian manpages-nl is not installed")


@pytest.mark.slow
def test_tiny_set_has_the_labelled_record_format(tmp_path):
    _needs_dutch_pages(tesseract=True)
    engine = OcrEngine(cache_dir=tmp_path / "cache")
    kwargs = dict(languages=("nl",), seed=3, stories_per_language=2, splits=("validation",),
                  hard_negative_share=0.0, max_copies=1, engine=engine)
    records, info = make_ocr_set(**kwargs)
    assert len(records) == 2 and engine.calls == 2
    for k, record in enumerate(records):
        assert list(record) == ["id", "split", "cluster", "kind", "date", "lang", "source",
                                "noise", "text"]
        assert record["id"] == f"validation-{k:06d}" and record["split"] == "validation"
        assert record["lang"] == "nl" and record["kind"] == "reprint" and record["date"] is None
        assert record["noise"][-1] == "tesseract(nld)" and record["noise"][-2].startswith("page(")
        assert isinstance(record["text"], str)
    assert records[0]["cluster"] != records[1]["cluster"]
    assert info["splits"]["validation"]["docs"] == {"nl": 2}
    assert info["ocr"]["tesseract"].startswith("tesseract")
    again, _ = make_ocr_set(**kwargs)  # served from the cache, identical
    assert again == records and engine.cached == 2


def test_missing_tesseract_is_a_clear_error():
    with pytest.raises(RuntimeError, match="tesseract program was not found"):
        OcrEngine(binary="no-such-tesseract-binary")


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="parameter 'languages' must be one of"):
        make_ocr_set(languages=("xx",))


class _EchoEngine:
    """Stands in for Tesseract: "reads" a page as a long text naming its image."""

    version, calls, cached = "echo", 0, 0

    def check_language(self, language):
        pass

    def read(self, png, language):
        import hashlib

        self.calls += 1
        return "abc " * 100 + hashlib.sha1(png).hexdigest()


def _train_split_checks(engine_of):
    base = dict(languages=("nl",), seed=5, stories_per_language=3, hard_negative_share=0.3,
                max_copies=2)
    before, _ = make_ocr_set(**base, splits=("validation", "test"), engine=engine_of())
    after, info = make_ocr_set(**base, splits=("validation", "test", "train"),
                               train_stories_per_language=4, engine=engine_of())
    only, _ = make_ocr_set(**base, splits=("train",), train_stories_per_language=4,
                           engine=engine_of())
    # Validation and test are exactly as without train; train alone is the same train.
    assert [r for r in after if r["split"] != "train"] == before
    train = [r for r in after if r["split"] == "train"]
    assert train and train == only
    assert all(r["id"].startswith("train-") for r in train)
    assert info["splits"]["train"]["stories"]["nl"] >= 4
    # Page-disjoint: no source chunk, and no other chunk of the same page, in both.
    from neardup.datasets.ocr import source_documents

    page_of = {d["source"]: d["page"] for d in source_documents("nl", Path("/usr/share/man"))}
    held = {page_of[r["source"]] for r in before}
    assert held and not held & {page_of[r["source"]] for r in train}


def test_train_split_is_page_disjoint_and_leaves_validation_and_test_alone():
    _needs_dutch_pages(tesseract=False)
    _train_split_checks(_EchoEngine)


@pytest.mark.slow
def test_train_split_with_tesseract(tmp_path):
    _needs_dutch_pages(tesseract=True)
    _train_split_checks(lambda: OcrEngine(cache_dir=tmp_path / "cache"))
