"""The real-OCR set: pages rendered with Pillow, read back by Tesseract (neardup/datasets/ocr.py)."""

import re
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


# --------------------------------------------------------------------------------------
# es and bg (added after data/multi-ocr was built)
# --------------------------------------------------------------------------------------

_BG_MESSAGES = Path("/usr/share/locale/bg/LC_MESSAGES")


def _needs_language_source(language: str, tesseract: bool) -> None:
    """Skip unless ``language``'s source text (es: Debian manpages-es; bg: the installed
    Bulgarian gettext catalogs) and, with ``tesseract``, Pillow and Tesseract with its data
    are installed."""
    from neardup.datasets.ocr import OCR_LANGUAGES

    if language == "es" and not any(Path("/usr/share/man/es").glob("man*/*.gz")):
        pytest.skip("Debian manpages-es is not installed")
    if language == "bg" and not any(_BG_MESSAGES.glob("*.mo")):
        pytest.skip("no Bulgarian gettext catalogs in /usr/share/locale/bg/LC_MESSAGES")
    if tesseract:
        pytest.importorskip("PIL")
        if not _tesseract_with(OCR_LANGUAGES[language]):
            pytest.skip(f"tesseract with {OCR_LANGUAGES[language]} data "
                        f"(tesseract-ocr-{OCR_LANGUAGES[language]}) is not installed")


def test_spanish_man_page_chunks():
    _needs_language_source("es", tesseract=False)
    from neardup.datasets.ocr import _FUNCTION_WORDS, source_documents

    docs = source_documents("es", Path("/usr/share/man"))
    assert len(docs) >= 60 and len({d["page"] for d in docs}) >= 10
    spanish = set(_FUNCTION_WORDS["es"].split())
    for d in docs:
        assert d["lang"] == "es" and d["page"].startswith("es:") and d["source"].startswith("es-man-")
        assert 40 <= len(d["text"].split()) <= 240 and "\\" not in d["text"]
        assert sum(w in spanish for w in d["text"].lower().split()) >= 2


def test_bulgarian_message_chunks():
    _needs_language_source("bg", tesseract=False)
    from neardup.datasets.ocr import source_documents

    docs = source_documents("bg", Path("/usr/share/man"))
    assert len(docs) >= 60 and len({d["page"] for d in docs}) >= 10
    for d in docs:
        assert d["lang"] == "bg" and d["page"].startswith("bg:") and d["source"].startswith("bg-mo-")
        assert 40 <= len(d["text"].split()) <= 240
        assert "%" not in d["text"] and not re.search(r"(?<!\w)--?\w", d["text"])  # no options
        letters = [c for c in d["text"] if c.isalpha()]
        assert sum("\u0400" <= c <= "\u04ff" for c in letters) >= 0.9 * len(letters)
    # No message is in two chunks (shared messages dropped, one copy per page kept).
    lines = [line for d in docs for line in d["text"].split("\n")]
    assert len(lines) == len(set(lines))


def test_prose_message_filter():
    from neardup.datasets.ocr import _prose_message

    assert _prose_message("Дали скритите файлове и папки да\nбъдат показани") == \
        "Дали скритите файлове и папки да бъдат показани."
    keep = "Необходим е точно един параметър с номер на процес."
    assert _prose_message(keep) == keep
    for message in ("не може да се отвори %s за четене и запис от програмата",  # directive
                    "  -a, --all         не пропуска записите, започващи с точка",  # option list
                    "Използвайте --help за повече информация за тази програма сега",
                    "файлът /etc/passwd не може да бъде прочетен от тази програма",  # path
                    "Това е кратко съобщение.",  # under 8 words
                    "This message was not translated into Bulgarian at all, sorry."):
        assert _prose_message(message) is None, message


def _write_mo(path: Path, messages: dict[str, str]) -> None:
    """A minimal GNU .mo catalog (what msgfmt writes, without a hash table)."""
    import struct

    entries = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    ids = [k.encode() for k, _ in entries]
    strs = [v.encode() for _, v in entries]
    start = 7 * 4 + 16 * len(entries)
    offsets, blob = [], b""
    for data in ids + strs:
        offsets.append((len(data), start + len(blob)))
        blob += data + b"\0"
    n = len(entries)
    header = struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0)
    table = b"".join(struct.pack("<2I", *o) for o in offsets)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + table + blob)


def test_catalog_pages_drop_shared_messages_and_join_package_versions(tmp_path):
    from neardup.datasets.ocr import source_documents

    def sentences(tag, n):
        return {f"{tag} message {k}": f"Съобщение номер {k} на пакета {tag} е достатъчно дълго "
                                       f"за проза тук." for k in range(n)}

    shared = {"zz shared": "Това съобщение е общо за двата каталога и трябва да отпадне."}
    root = tmp_path / "locale"
    _write_mo(root / "bg" / "LC_MESSAGES" / "tar.mo", {**sentences("тар", 12), **shared})
    _write_mo(root / "bg" / "LC_MESSAGES" / "gtk20.mo", {**sentences("гтк", 6), **shared})
    _write_mo(root / "bg" / "LC_MESSAGES" / "gtk30.mo", sentences("гтк", 6))  # same as gtk20
    _write_mo(root / "bg" / "LC_MESSAGES" / "iso_639.mo", {"English": "английски"})
    (root / "bg" / "LC_MESSAGES" / "broken.mo").write_bytes(b"not a catalog")
    docs = source_documents("bg", tmp_path / "man", root)
    assert {d["page"] for d in docs} == {"bg:tar", "bg:gtk"}
    text = "\n".join(d["text"] for d in docs)
    assert "общо за двата" not in text  # in two catalogs (tar, gtk): dropped
    # gtk20's and gtk30's identical messages: one page, each message once.
    gtk = [line for d in docs if d["page"] == "bg:gtk" for line in d["text"].split("\n")]
    assert len(gtk) == len(set(gtk)) and len(gtk) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("language", ["es", "bg"])
def test_tiny_set_in_a_new_language(tmp_path, language):
    _needs_language_source(language, tesseract=True)
    from neardup.datasets.ocr import OCR_LANGUAGES

    engine = OcrEngine(cache_dir=tmp_path / "cache")
    records, info = make_ocr_set(languages=(language,), seed=3, stories_per_language=2,
                                 splits=("validation",), hard_negative_share=0.0,
                                 max_copies=1, engine=engine)
    # Whole pages of at most 2 chunks (a bigger page gives a sample of 2 // 4 = 0).
    assert 2 <= len(records) <= 3 and {r["lang"] for r in records} == {language}
    assert records[0]["noise"][-1] == f"tesseract({OCR_LANGUAGES[language]})"
    assert all(sum(c.isalpha() for c in r["text"]) > 50 for r in records)
    if language == "bg":
        assert sum("\u0400" <= c <= "\u04ff" for c in records[0]["text"]) > 50
    assert list(info["sources"]) == [language]


class _ConstantEngine(_EchoEngine):
    """A stand-in whose reading ignores the pixels: the records then depend only on the
    plan (sources, splits, clusters, edits, page styles), not on Pillow's rendering."""

    def read(self, png, language):
        self.calls += 1
        return f"{language} " * 100


def _fake_sources(language, *_):
    """Deterministic stand-in source chunks: 5 pages of 3 chunks of 4 sentences."""
    docs = []
    for page in range(5):
        for chunk in range(3):
            text = " ".join(f"Sentence {s} of chunk {chunk} on page {page} in {language} has "
                            f"several words to cut." for s in range(4))
            docs.append({"page": f"{language}:p{page}", "lang": language, "text": text,
                         "source": f"{language}-man-{page * 3 + chunk}"})
    return docs


# sha256 of the records and info (without "ocr") of the build below, made with the code
# before es and bg were added (commit afaca52): the six languages' build must not change.
_SIX_LANGUAGE_DIGEST = "e6fd7afdc2d4f572709b5fc011609192e9a60810e55858be105c633fcb457e12"


@pytest.mark.slow  # builds and hashes the six languages' set: seconds of its own work
def test_six_language_build_is_unchanged_by_the_new_languages(monkeypatch):
    pytest.importorskip("PIL")
    import hashlib
    import json

    from neardup.datasets import ocr

    if not all((ocr._FONT_ROOT / f).exists() for f in ocr._FONTS):
        pytest.skip("the DejaVu and Liberation fonts are not all installed")
    assert ocr.DEFAULT_OCR_LANGUAGES == ("pl", "nl", "de", "cs", "fr", "en")
    assert tuple(ocr.OCR_LANGUAGES)[:6] == ocr.DEFAULT_OCR_LANGUAGES
    monkeypatch.setattr(ocr, "source_documents", _fake_sources)
    records, info = make_ocr_set(seed=2024, stories_per_language=4, hard_negative_share=0.3,
                                 max_copies=3, engine=_ConstantEngine())
    info.pop("ocr")
    assert list(info["sources"]) == list(ocr.DEFAULT_OCR_LANGUAGES)
    digest = hashlib.sha256(json.dumps([records, info], sort_keys=True).encode()).hexdigest()
    assert digest == _SIX_LANGUAGE_DIGEST
