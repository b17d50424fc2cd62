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

from neardup.errors import ParameterError

__all__ = ["FLAGS", "cli_message", "spell_flag"]

#: Python parameter name (or phrase used by :func:`neardup.errors.setting`) -> how the
#: command line says it.
FLAGS = {
    # method parameters with a flag of their own
    "threshold": "--threshold",
    "num_perm": "--num-perm",
    "bands": "--bands",
    "rows": "--rows",
    "verify": "--verify",
    "max_bucket_pairs": "--max-bucket-pairs",
    "similarity": "--similarity",
    "max_df": "--max-df",
    "weighting": "--weighting",
    "model": "--model",
    "seed": "--seed",
    "n": "--ngram",
    "unit": "--shingle",
    "spell_max_edit_distance": "--spell-max-edit-distance",
    # reader
    "text_field": "--text-field",
    "id_field": "--id-field",
    "date_field": "--date-field",
    "errors": "--errors",
    "batch_size": "--batch-size",
    "limit": "--limit",
    "errors=replace": "--errors replace",
    "id_field=None": "leave out --id-field",
    "fields": "--text-field, --id-field or --date-field",
    # clustering and representatives
    "algorithm": "--cluster",
    "linkage": "--linkage",
    "distance_threshold": "--hac-distance",
    "resolution": "--resolution",
    "max_cluster_size": "--max-cluster-size",
    "oversized": "--oversized",
    "time_window_hours": "--time-window",
    "keep": "--keep",
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


def cli_message(exc: BaseException) -> str:
    """The message of a library error, with flags in place of Python parameters."""
    if isinstance(exc, ParameterError):
        return exc.render(spell_flag(exc.parameter) or exc.parameter)
    return _PARAMETER.sub(lambda m: spell_flag(m.group(1)) or m.group(0), str(exc))
