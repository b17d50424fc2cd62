"""Library errors in the command line's words: flags, not Python parameters.

The library names parameters as Python does (``NGramOverlap: parameter 'max_df'``,
``ReaderConfig(text_field=...)``). The commands run inside
:func:`neardup.errors.spelled_as` with :func:`spell_flag`, so messages built with
:func:`neardup.errors.setting` name the flag, and :func:`cli_message` renders a
:class:`~neardup.errors.ParameterError` (or any message of the shared
``<caller>: parameter '<name>'`` shape) with the flag that sets that parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from neardup.errors import ParameterError
from neardup.params import PARAMS

__all__ = ["FLAGS", "cli_message", "cli_text", "spell_flag"]

#: Python parameter name (or phrase used by :func:`neardup.errors.setting`) -> how the
#: command line says it.
FLAGS = {
    # every run parameter: its flag, as neardup.params declares it
    **{p.name: p.flag for p in PARAMS if p.cli},
    # library names of the same settings
    "n": "--ngram",
    "unit": "--shingle",
    "errors": "--errors",
    "storage_options": "--storage-option KEY=VALUE",
    "errors=replace": "--errors replace",
    "id_field=None": "leave out --id-field",
    "fields": "--text-field, --id-field or --date-field",
    "algorithm": "--cluster",
    "shard_rows": "--ray-shard-rows",
    "skip_existing": "--skip-existing",
}
_PARAMETER = re.compile(r"\b[A-Za-z_][\w.]*: parameter '(\w+)'")


def spell_flag(name: str) -> str | None:
    """The flag (or phrase) for a Python parameter; other parameters are set through
    ``--param NAME=VALUE``."""
    if name in FLAGS:
        return FLAGS[name]
    if name.isidentifier():
        return f"--param {name}=..."
    return None


def cli_message(exc: BaseException, spell: Callable[[str], str | None] | None = None) -> str:
    """The message of a library error, with flags in place of Python parameters
    (``spell``: a command's own spelling of them; default :func:`spell_flag`)."""
    spell = spell or spell_flag
    if isinstance(exc, ParameterError):
        return cli_text(exc.render(spell(exc.parameter) or exc.parameter))
    return cli_text(_PARAMETER.sub(lambda m: spell(m.group(1)) or m.group(0), str(exc)))


#: Python spellings that messages built outside :func:`neardup.errors.spelled_as` (or
#: before their module used :func:`neardup.errors.setting`) may still carry, and how the
#: command line says them. Applied by :func:`cli_text` to every message the CLI prints.
_PYTHON_PHRASES = (
    (re.compile(r"\(errors='replace'\)"), "(--errors replace)"),
    (re.compile(r"ReaderConfig\(errors='replace'\)|errors='replace'|errors=\"replace\""),
     "--errors replace"),
    (re.compile(r"set id_field=None|id_field=None"), "leave out --id-field"),
    (re.compile(r"ReaderConfig\((\w+)=\.\.\.\)"), lambda m: spell_flag(m.group(1)) or m.group(0)),
    (re.compile(r"\b(resume|skip_existing)=True"), lambda m: "--" + m.group(1).replace("_", "-")),
    (re.compile(r"\btime_window_hours=None|Use None for no time window"),
     "leave out --time-window for no time window"),
    # Python's own message for an integer too long to convert (json.loads of a number).
    (re.compile(r"Exceeds the limit \((\d+) digits\) for integer string conversion(?:: value "
                r"has (\d+) digits)?; use sys\.set_int_max_str_digits\(\) to increase the limit"),
     lambda m: f"an integer of {m.group(2) or 'more'} digits; at most {m.group(1)} can be read"),
)


def cli_text(text: str) -> str:
    """``text`` with the Python spellings of :data:`_PYTHON_PHRASES` replaced by flags."""
    for pattern, replacement in _PYTHON_PHRASES:
        text = pattern.sub(replacement, text)
    return text
