"""Reader for the Reuters-21578 collection (Lewis, 1997), distributed as 22 SGML files.

Each ``reut2-NNN.sgm`` file holds up to 1,000 ``<REUTERS>`` stories (21,578 in all). The
markup is regular (see ``README.txt`` and ``lewis.dtd`` in the distribution), so stories
are found and taken apart with regular expressions rather than a generic SGML parser.

Decisions
---------
* **Encoding.** The files are 8-bit text from 1987 and are not valid UTF-8 everywhere
  (``reut2-017.sgm`` holds a stray byte 0xFC). They are read as Latin-1, which maps every
  byte to one character, so reading never fails and never shifts offsets; the stray
  byte becomes ``'ü'``. ``ReaderConfig.errors`` does not apply to this format.
* **Entities and control characters.** ``&lt; &gt; &amp; &quot; &apos;`` and numeric
  references (``&#3;``) are decoded, then C0/C1 control characters other than tab and
  newline are removed: the wire-service codes (``&#2;`` start of text, ``&#3;`` end of
  text, ``&#5;``, ``&#22;``, ``&#31;``, ``&#127;``...) carry no words.
* **Text.** ``text`` is TITLE and BODY joined by a newline, each stripped of surrounding
  whitespace; a missing part is left out, so a story with neither has ``text == ""``
  and is still returned. ``TYPE="UNPROC"`` stories have no TITLE or BODY: their whole
  TEXT content is the body. ``TYPE="BRIEF"`` stories have only a TITLE; the placeholder
  after it (``******Blah blah blah.``) is not part of ``text`` but is kept, like any other
  TEXT content outside TITLE, DATELINE, AUTHOR and BODY, in the record's ``unmarked`` field.
* **Dates.** ``<DATE>`` is ``26-FEB-1987 15:01:01.79`` with optional leading blanks and
  trailing noise; hundredths of a second are dropped. One story in the collection
  (``31-MAR-1987 605:12:19.12``) has an impossible time: its date is NaT, its raw text is
  kept in ``date_raw``, and a warning counts such stories per file.

Reference: D. D. Lewis, *Reuters-21578 text categorization test collection*,
Distribution 1.0, README.txt, 1997.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

from neardup.errors import InputError
from neardup.io._dates import reuters_epoch_seconds

__all__ = ["find_reuters_dir", "parse_story", "reuters_records"]

#: Environment variable that points to the directory holding ``reut2-*.sgm``.
REUTERS_DIR_ENV = "NEARDUP_REUTERS_DIR"

_STORY_TAG = re.compile(r"<REUTERS\b[^>]*>|</REUTERS>")
_DOCTYPE = re.compile(r"<!DOCTYPE[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r'([A-Za-z]+)\s*=\s*"([^"]*)"')
_TEXT = re.compile(r"<TEXT\b([^>]*)>(.*?)</TEXT>", re.DOTALL)
_TEXT_TYPE = re.compile(r'TYPE\s*=\s*"([^"]*)"')
_D = re.compile(r"<D>(.*?)</D>", re.DOTALL)
_INNER = {
    name: re.compile(rf"<{name}>(.*?)</{name}>", re.DOTALL)
    for name in ("DATE", "TITLE", "DATELINE", "AUTHOR", "BODY")
}
_CATEGORY_SETS = ("TOPICS", "PLACES", "PEOPLE", "ORGS", "EXCHANGES", "COMPANIES")
_CATEGORY = {
    name: re.compile(rf"<{name}\b[^>]*>(.*?)</{name}>", re.DOTALL) for name in _CATEGORY_SETS
}
_MARKED = re.compile(r"<(TITLE|DATELINE|AUTHOR|BODY)>.*?</\1>", re.DOTALL)
_ANY_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_ENTITY = re.compile(r"&(?:#(\d+)|#[xX]([0-9a-fA-F]+)|(lt|gt|amp|quot|apos));")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
# C0 and C1 control characters except tab (\x09) and newline (\x0a).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def find_reuters_dir() -> Path | None:
    """Locate the Reuters-21578 SGML files, or return None when they are absent.

    Looks at ``$NEARDUP_REUTERS_DIR`` when it is set (and only there), else at
    ``shared/data/reuters21578`` beside the repository root (``<repo>/../shared/...``).
    A directory counts only if it holds at least one ``reut2-*.sgm`` file.

    Returns
    -------
    pathlib.Path or None
        The resolved directory.
    """
    override = os.environ.get(REUTERS_DIR_ENV)
    if override:
        candidate = Path(override)
    else:
        repo_root = Path(__file__).resolve().parents[2]
        candidate = repo_root / ".." / "shared" / "data" / "reuters21578"
    candidate = candidate.resolve()
    if candidate.is_dir() and any(candidate.glob("reut2-*.sgm")):
        return candidate
    return None


def _decode_entity(match: re.Match[str]) -> str:
    if match.group(3):
        return _NAMED[match.group(3)]
    digits = match.group(1) or match.group(2)
    if len(digits.lstrip("0")) > 7:  # past U+10FFFF (and int()'s digit limit): not a character
        return match.group(0)
    code = int(match.group(1)) if match.group(1) else int(match.group(2), 16)
    if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000:
        return chr(code)
    return match.group(0)  # not a character: keep the reference as written


def _clean(raw: str) -> str:
    return _CONTROL.sub("", _ENTITY.sub(_decode_entity, raw))


def _inner(name: str, raw: str) -> str | None:
    match = _INNER[name].search(raw)
    return None if match is None else match.group(1)


def parse_story(raw: str) -> dict:
    """Take one ``<REUTERS ...>...</REUTERS>`` story apart.

    Parameters
    ----------
    raw : str
        The story's markup, from its opening tag to its closing tag.

    Returns
    -------
    dict
        ``id`` (NEWID, str), ``oldid``, ``date`` (ISO 8601 string in UTC, or None when
        missing or invalid), ``date_raw``, ``type`` (``NORM``, ``BRIEF``, ``UNPROC``...;
        None without a TEXT element), ``title``, ``dateline``, ``author``, ``body``,
        ``text`` (title and body joined by a newline), ``unmarked`` (other TEXT content),
        ``topics``, ``places``, ``people``, ``orgs``, ``exchanges``, ``companies`` (lists of
        str), ``topics_attr``, ``lewissplit``, ``cgisplit`` (REUTERS attributes, or None).
        Text fields are entity-decoded and free of control characters. ``id`` is None
        when the story has no NEWID; the reader reports that as an error.
    """
    open_tag = _STORY_TAG.match(raw)
    attributes = dict(_ATTRIBUTE.findall(open_tag.group(0))) if open_tag else {}

    date_raw = _clean(_inner("DATE", raw) or "").strip()
    seconds = reuters_epoch_seconds(date_raw) if date_raw else None
    date = None
    if seconds is not None:
        date = (_dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=seconds)).isoformat()

    text_match = _TEXT.search(raw)
    story_type = title = dateline = author = None
    body = unmarked = ""
    if text_match is not None:
        type_match = _TEXT_TYPE.search(text_match.group(1))
        story_type = type_match.group(1) if type_match else "NORM"
        content = text_match.group(2)
        title_raw = _inner("TITLE", content)
        body_raw = _inner("BODY", content)
        dateline_raw = _inner("DATELINE", content)
        author_raw = _inner("AUTHOR", content)
        title = None if title_raw is None else _clean(title_raw).strip()
        dateline = None if dateline_raw is None else _clean(dateline_raw).strip()
        author = None if author_raw is None else _clean(author_raw).strip()
        rest = _clean(_ANY_TAG.sub("", _MARKED.sub("", content))).strip()
        if body_raw is not None:
            body, unmarked = _clean(body_raw).strip(), rest
        elif title_raw is None:
            body = rest  # UNPROC: the text sits directly inside <TEXT>
        else:
            unmarked = rest  # BRIEF: only a title, then a placeholder
    text = "\n".join(part for part in (title, body) if part)

    record = {
        "id": attributes.get("NEWID"),
        "oldid": attributes.get("OLDID"),
        "date": date,
        "date_raw": date_raw,
        "type": story_type,
        "title": title,
        "dateline": dateline,
        "author": author,
        "body": body,
        "text": text,
        "unmarked": unmarked,
    }
    for name in _CATEGORY_SETS:
        match = _CATEGORY[name].search(raw)
        values = _D.findall(match.group(1)) if match else []
        record[name.lower()] = [_clean(value).strip() for value in values]
    record["topics_attr"] = attributes.get("TOPICS")
    record["lewissplit"] = attributes.get("LEWISSPLIT")
    record["cgisplit"] = attributes.get("CGISPLIT")
    return record


def _check_outside(path: str, lineno: int, piece: str) -> None:
    leftover = _DOCTYPE.sub("", piece).strip()
    if leftover:
        raise InputError(
            f"{path}, line {lineno}: text outside any <REUTERS> story: {leftover[:60]!r}. "
            "Every story must sit between <REUTERS ...> and </REUTERS>."
        )


def _raw_stories(path: str) -> Iterator[tuple[int, str]]:
    """Yield (first line, markup) for each story, streaming the file line by line."""
    inside = False
    start = 0
    parts: list[str] = []
    with open(path, encoding="latin-1") as handle:
        lineno = 0
        for lineno, line in enumerate(handle, start=1):
            if "REUTERS" not in line:  # fast path: most lines hold no story tag
                if inside:
                    parts.append(line)
                elif not line.isspace():
                    _check_outside(path, lineno, line)
                continue
            position = 0
            for tag in _STORY_TAG.finditer(line):
                piece = line[position : tag.start()]
                position = tag.end()
                if tag.group(0) == "</REUTERS>":
                    if not inside:
                        raise InputError(
                            f"{path}, line {lineno}: </REUTERS> without an opening <REUTERS> tag."
                        )
                    parts.append(piece)
                    parts.append(tag.group(0))
                    yield start, "".join(parts)
                    inside, parts = False, []
                else:
                    if inside:
                        raise InputError(
                            f"{path}, line {lineno}: a new <REUTERS> story starts before the "
                            f"story opened at line {start} is closed with </REUTERS>."
                        )
                    _check_outside(path, lineno, piece)
                    inside, start, parts = True, lineno, [tag.group(0)]
            rest = line[position:]
            if inside:
                parts.append(rest)
            else:
                _check_outside(path, lineno, rest)
        if inside:
            raise InputError(
                f"{path}, line {start}: the story opened here is never closed with </REUTERS> "
                f"(the file ends at line {lineno}); the file may be truncated."
            )


def reuters_records(path: str | os.PathLike) -> Iterator[tuple[int, int, dict]]:
    """Stream the stories of one Reuters-21578 ``.sgm`` file.

    Parameters
    ----------
    path : str or os.PathLike
        An SGML file such as ``reut2-000.sgm``.

    Yields
    ------
    (row, line, record) : tuple of int, int, dict
        The story's index in the file (from 0), the line its ``<REUTERS>`` tag is on
        (from 1), and the record described in :func:`parse_story`.

    Raises
    ------
    InputError
        On broken markup (an unclosed story, text outside stories) or a story without
        a NEWID attribute. Nothing is skipped.

    Warns
    -----
    UserWarning
        Once per file, counting stories whose DATE is present but not a valid date.
    """
    path = os.fspath(path)
    bad_dates: list[tuple[str, str]] = []
    try:
        for row, (line, raw) in enumerate(_raw_stories(path)):
            record = parse_story(raw)
            if not record["id"]:
                raise InputError(
                    f"{path}, line {line}: the <REUTERS> tag has no NEWID attribute, so the "
                    "story has no id."
                )
            if record["date"] is None and record["date_raw"]:
                bad_dates.append((record["id"], record["date_raw"]))
            yield row, line, record
    finally:
        if bad_dates:
            newid, raw_date = bad_dates[0]
            warnings.warn(
                f"{path}: {len(bad_dates)} story(ies) have a DATE that is not a valid date "
                f"(first: NEWID={newid}, {raw_date!r}); their date is NaT.",
                UserWarning,
                stacklevel=2,
            )
