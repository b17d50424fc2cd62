"""Datelines and bylines restyled as a reprinting paper does."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from neardup.datasets.noise.checks import check_rng, check_text
from neardup.errors import check_float

_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH_PREFIX = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
# "SALVADOR, Feb 26 - ", "Greeley, Colo., Jan. 28. — ", "AMSTERDAM, 2 March - ",
# "WASHINGTON (AP) — ", "PEPPERELL, Mass., Jan. 27 (AP) — ".
_DATELINE = re.compile(
    rf"""(?P<indent>\s*)
    (?P<place>[A-Z][A-Za-z.'&/ -]{{1,40}}?(?:,\s*[A-Z][A-Za-z. ]{{1,20}}?)?)
    ,?\s*(?:-\s*)?
    (?:(?P<month>{_MONTH_PREFIX})[A-Za-z]*\.?\s+(?P<day>\d{{1,2}})[.,]?
      |(?P<day2>\d{{1,2}})\s+(?P<month2>{_MONTH_PREFIX})[A-Za-z]*[.,]?)?
    \s*(?:\((?P<wire>[^()\n]{{1,25}})\)\s*)?
    [-—–]+[^\S\n]*""",
    re.VERBOSE,
)
_WIRES = ("AP", "UP", "UPI", "INS", "Reuter", "Reuters")
_AGENCIES = (
    "Associated Press", "United Press", "United Press International",
    "International News Service", "Reuters", "Staff Correspondent",
)  # fmt: skip
_FIRST_NAMES = tuple("JOHN MARY ROBERT HELEN JAMES RUTH WILLIAM ALICE GEORGE EDNA".split())
_LAST_NAMES = tuple("SMITH JOHNSON BROWN MILLER DAVIS WILSON MOORE TAYLOR CLARK HALL".split())
_CITIES = (
    "WASHINGTON", "NEW YORK", "CHICAGO", "LONDON", "PARIS", "TOKYO", "BOSTON",
    "SAN FRANCISCO", "KANSAS CITY, Mo.", "DENVER, Colo.", "ATLANTA, Ga.", "TORONTO",
)  # fmt: skip


def _find_dateline(text: str) -> re.Match[str] | None:
    m = _DATELINE.match(text)
    if m is None:
        return None
    city, comma, _ = m.group("place").partition(",")
    # Without a date or wire tag, only "CITY, State - " is trusted ("WOODBRIDGE, N.J. - "),
    # so that "NOTE - ..." is not taken for a dateline.
    if (m.group("month") or m.group("month2") or m.group("wire")) is None and not (
        comma and city.isupper()
    ):
        return None
    return m


def _choose(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _render_dateline(
    rng: np.random.Generator, place: str, month: str | None, day: str | None
) -> str:
    """One of the dateline styles seen across wire services and papers."""
    city, _, state = place.partition(",")
    city = city.strip().upper() if rng.random() < 0.7 else city.strip().title()
    place = f"{city},{state}" if state else city
    wire = _choose(rng, _WIRES)
    if month is None:
        return f"{place} ({wire}) — "
    month = month.title()
    full = next((m for m in _MONTHS if m.startswith(month)), month)
    shift = int(rng.choice([-1, 0, 0, 0, 1]))  # reprinted a day later, or a typo
    day_text = str(min(max(int(day) + shift, 1), 31)) if day else ""
    month_text = _choose(rng, (month, full if len(full) <= 5 else full[:3] + ".", full))
    styles = (
        f"{place}, {month_text} {day_text} - ",
        f"{place}, {month_text} {day_text}. — ",
        f"{place}, {month_text} {day_text} ({wire}) — ",
        f"{place} ({wire}) — ",
    )
    return _choose(rng, styles)


def change_dateline(
    text: str,
    rng: np.random.Generator,
    remove_prob: float = 0.3,
    city_prob: float = 0.15,
    byline_prob: float = 0.3,
) -> str:
    """Restyle, replace or remove a leading dateline, and maybe add a byline.

    A dateline such as ``"SALVADOR, Feb 26 - "``, ``"Greeley, Colo., Jan. 28. — "`` or
    ``"WASHINGTON (AP) — "`` at the start of ``text`` is removed (``remove_prob``) or
    re-rendered in another paper's style (case, month format, wire tag, dash, date off by
    a day at most), with its city replaced by another with ``city_prob``. A byline such as
    ``"By JOHN SMITH, Associated Press"`` is then prepended on its own line with
    ``byline_prob``. Text without a dateline always gets a byline or a new dateline.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    remove_prob, city_prob, byline_prob : float
        Probabilities in [0, 1], defaults 0.3, 0.15 and 0.3.

    Returns
    -------
    str
    """
    caller = "change_dateline"
    check_text(caller, text)
    check_rng(caller, rng)
    remove_prob = check_float(caller, "remove_prob", remove_prob, low=0.0, high=1.0)
    city_prob = check_float(caller, "city_prob", city_prob, low=0.0, high=1.0)
    byline_prob = check_float(caller, "byline_prob", byline_prob, low=0.0, high=1.0)
    m = _find_dateline(text)
    add_byline = rng.random() < byline_prob
    if m is None:
        body = text.lstrip()
        if add_byline or rng.random() < 0.5:
            add_byline = True
        else:
            month = _MONTHS[int(rng.integers(12))][:3]
            day = str(rng.integers(1, 29))
            body = _render_dateline(rng, _choose(rng, _CITIES), month, day) + body
    else:
        body = text[m.end() :]
        if rng.random() >= remove_prob:
            place = m.group("place")
            if rng.random() < city_prob:
                place = _choose(rng, _CITIES)
            month, day = m.group("month") or m.group("month2"), m.group("day") or m.group("day2")
            body = m.group("indent") + _render_dateline(rng, place, month, day) + body
    if add_byline:
        name = f"{_choose(rng, _FIRST_NAMES)} {_choose(rng, _LAST_NAMES)}"
        byline = f"By {name}, {_choose(rng, _AGENCIES)}" if rng.random() < 0.6 else f"By {name}"
        body = f"{byline}\n{body.lstrip()}"
    return body
