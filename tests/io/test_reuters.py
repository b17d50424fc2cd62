"""Reuters-21578 SGML reader: fixtures for the markup cases, and the real collection if present."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from neardup.errors import InputError
from neardup.io import ReaderConfig, detect_format, find_reuters_dir, iter_records, read_corpus
from neardup.io.reuters import parse_story, reuters_records

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "io"
SMALL = FIXTURES / "reuters_small.sgm"
BAD_DATE = FIXTURES / "reuters_bad_date.sgm"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

STORY = """<REUTERS TOPICS="NO" LEWISSPLIT="TRAIN" CGISPLIT="TRAINING-SET" OLDID="1" NEWID="{id}">
<DATE>26-FEB-1987 15:01:01.79</DATE>
<TOPICS></TOPICS>
<TEXT>&#2;
<TITLE>T{id}</TITLE>
<BODY>Body {id}.
&#3;</BODY></TEXT>
</REUTERS>
"""


def _records(path: Path) -> dict[str, dict]:
    return {record["id"]: record for _, _, record in reuters_records(path)}


def test_detect_format_sgm():
    assert detect_format(SMALL) == "reuters"


def test_fixture_stories_are_all_returned_in_order():
    rows = list(reuters_records(SMALL))
    assert [record["id"] for _, _, record in rows] == ["101", "102", "103", "104", "105"]
    assert [row for row, _, _ in rows] == [0, 1, 2, 3, 4]
    assert [line for _, line, _ in rows] == [2, 21, 40, 59, 71]


def test_entities_decoded_and_control_characters_removed():
    story = _records(SMALL)["101"]
    assert story["title"] == "AT&T <T> COCOA REVIEW"
    assert story["body"] == "Showers continued in the <Bahia> zone,\nsaid Smith & Co.\n Reuter"
    assert story["text"] == story["title"] + "\n" + story["body"]
    assert story["dateline"] == "SALVADOR, Feb 26 -"
    assert story["topics"] == ["cocoa", "grain"]
    assert story["places"] == ["el-salvador"]
    assert story["people"] == []
    assert story["type"] == "NORM"
    assert (story["oldid"], story["lewissplit"], story["topics_attr"]) == ("5544", "TRAIN", "YES")
    for record in _records(SMALL).values():
        for field in ("text", "title", "body", "unmarked", "date_raw"):
            assert not CONTROL.search(record[field] or ""), (record["id"], field)
            assert "&#" not in (record[field] or "") and "&lt;" not in (record[field] or "")


def test_brief_story_is_its_title():
    story = _records(SMALL)["102"]
    assert story["type"] == "BRIEF"
    assert story["text"] == "ASSETS OF MONEY MARKET MUTUAL FUNDS ROSE 720.4 MLN DLRS"
    assert story["body"] == ""
    assert story["unmarked"] == "******Blah blah blah."


def test_unproc_story_text_sits_inside_text_element():
    story = _records(SMALL)["103"]
    assert story["type"] == "UNPROC"
    assert story["title"] is None
    assert story["text"].startswith("FEDERAL RESERVE WEEKLY REPORT 1 - FEB 26\n Net free")
    assert story["text"].endswith("1,337\n Bank borrowings...............680 vs.......425")


def test_story_without_title_or_body_is_kept_with_empty_text():
    story = _records(SMALL)["104"]
    assert story["text"] == ""
    batches = list(read_corpus([SMALL]))
    assert batches[0].ids[3] == "104" and batches[0].texts[3] == ""


def test_latin1_byte_and_author():
    story = _records(SMALL)["105"]
    assert story["author"] == "by Jane Doe, Reuters"
    # 0xFC is not UTF-8; Latin-1 keeps it as one character instead of failing.
    assert "done.\u00fcside measures" in story["body"]


def test_dates_with_noise_and_fractional_seconds():
    batch = next(read_corpus([SMALL]))
    assert batch.dates.dtype == np.dtype("datetime64[s]")
    assert batch.dates[0] == np.datetime64("1987-02-26T15:01:01")
    assert batch.dates[1] == np.datetime64("1987-03-03T00:43:42")  # trailing &#5;...RM noise
    assert _records(SMALL)["102"]["date"] == "1987-03-03T00:43:42"


def test_invalid_date_is_nat_with_warning():
    with pytest.warns(UserWarning, match=r"reuters_bad_date\.sgm: 1 story.*NEWID=201.*605:12"):
        batch = next(read_corpus([BAD_DATE]))
    assert np.isnat(batch.dates[0])
    assert batch.texts == ["ODD DATE\nBody text."]


def test_read_corpus_ignores_field_config_for_reuters():
    config = ReaderConfig(text_field="body", id_field="oldid", batch_size=2)
    batches = list(read_corpus([SMALL], config))
    assert [len(b) for b in batches] == [2, 2, 1]
    assert [i for b in batches for i in b.ids] == ["101", "102", "103", "104", "105"]


def test_iter_records_matches_read_corpus():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the bad date, tested above
        ids = [i for b in read_corpus([SMALL, BAD_DATE]) for i in b.ids]
        records = list(iter_records([SMALL, BAD_DATE]))
    assert [r["id"] for r in records] == ids
    assert set(records[0]) >= {"id", "date", "title", "body", "text", "topics", "places"}


def test_duplicate_newid_across_files_is_an_error():
    with pytest.raises(InputError, match=r"duplicate NEWID '101'.*first seen in .*reuters_small\.sgm, line 2\. The same input is given twice: pass it once\.$"):
        list(read_corpus([SMALL, SMALL]))


def test_duplicate_newid_hint_applies_to_reuters(tmp_path):
    """Issue #40: no hint about ids numbered by position, which Reuters files never use."""
    within = tmp_path / "within.sgm"
    within.write_text(STORY.format(id=7) + STORY.format(id=8) + STORY.format(id=7))
    with pytest.raises(InputError) as caught:
        list(read_corpus([within]))
    message = str(caught.value)
    assert re.search(r"within\.sgm, line 17: duplicate NEWID '7', first seen in .*within\.sgm, "
                     r"line 1\. Two stories in this file carry the same NEWID.*deduplicate the "
                     r"input", message), message
    assert "position" not in message and "id field" not in message
    first = tmp_path / "first.sgm"
    first.write_text(STORY.format(id=8))
    second = tmp_path / "second.sgm"
    second.write_text(STORY.format(id=9) + STORY.format(id=8))
    with pytest.raises(InputError) as caught:
        list(read_corpus([first, second]))
    message = str(caught.value)
    assert re.search(r"second\.sgm, line 9: duplicate NEWID '8', first seen in .*first\.sgm, "
                     r"line 1\. .*unique across the \.sgm files.*deduplicate the input", message), message
    assert "position" not in message


def test_unclosed_story(tmp_path):
    path = tmp_path / "broken.sgm"
    path.write_text(STORY.format(id=1) + STORY.format(id=2).replace("</REUTERS>\n", ""))
    with pytest.raises(InputError, match=r"broken\.sgm, line 9: .*never closed"):
        list(read_corpus([path]))


def test_story_opened_inside_another(tmp_path):
    path = tmp_path / "nested.sgm"
    path.write_text(STORY.format(id=1).replace("</REUTERS>\n", "") + STORY.format(id=2))
    with pytest.raises(InputError, match=r"nested\.sgm, line 8: .*before the story opened at line 1"):
        list(read_corpus([path]))


def test_text_outside_stories(tmp_path):
    path = tmp_path / "stray.sgm"
    path.write_text('<!DOCTYPE lewis SYSTEM "lewis.dtd">\n' + STORY.format(id=1) + "stray words\n")
    with pytest.raises(InputError, match=r"stray\.sgm, line 10: text outside any <REUTERS> story"):
        list(read_corpus([path]))


def test_story_without_newid(tmp_path):
    path = tmp_path / "noid.sgm"
    path.write_text(STORY.format(id=1).replace(' NEWID="1"', ""))
    with pytest.raises(InputError, match=r"noid\.sgm, line 1: .*no NEWID"):
        list(read_corpus([path]))


def test_stories_on_one_line(tmp_path):
    path = tmp_path / "compact.sgm"
    path.write_text(STORY.format(id=1).replace("\n", " ") + STORY.format(id=2).replace("\n", " "))
    assert [r["text"] for r in iter_records([path])] == ["T1\nBody 1.", "T2\nBody 2."]


def test_parse_story_without_text_element():
    record = parse_story('<REUTERS NEWID="7">\n<DATE></DATE>\n</REUTERS>')
    assert (record["id"], record["text"], record["type"], record["date"]) == ("7", "", None, None)


def test_find_reuters_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NEARDUP_REUTERS_DIR", str(tmp_path))
    assert find_reuters_dir() is None  # no reut2-*.sgm yet
    (tmp_path / "reut2-000.sgm").write_text(STORY.format(id=1))
    assert find_reuters_dir() == tmp_path.resolve()


@pytest.mark.slow
def test_full_collection_has_21578_stories():
    directory = find_reuters_dir()
    if directory is None:
        pytest.skip("Reuters-21578 not found (set NEARDUP_REUTERS_DIR)")
    files = sorted(directory.glob("reut2-*.sgm"))
    assert len(files) == 22
    ids: list[str] = []
    empty = nat = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch in read_corpus(files):
            assert batch.dates is not None
            ids.extend(batch.ids)
            empty += sum(1 for text in batch.texts if not text)
            nat += int(np.isnat(batch.dates).sum())
            assert not any(CONTROL.search(text) for text in batch.texts)
            assert not any("&lt;" in text or "&#" in text for text in batch.texts)
    assert len(ids) == 21_578
    assert sorted(map(int, ids)) == list(range(1, 21_579))
    assert nat == 1  # NEWID 17192 is dated '31-MAR-1987 605:12:19.12'
    assert empty <= 1  # one UNPROC story has no text at all; it is still returned
    assert [str(w.message) for w in caught if "reut2-017" not in str(w.message)] == []


def test_numeric_reference_too_long_is_kept_as_written(tmp_path):
    """A reference with thousands of digits is no character (and no Python error)."""
    path = tmp_path / "long.sgm"
    reference = "&#" + "9" * 5000 + ";"
    path.write_text(STORY.format(id=1).replace("Body 1.", f"Body {reference} 1."))
    (record,) = [r for _, _, r in reuters_records(path)]
    assert record["body"] == f"Body {reference} 1."
