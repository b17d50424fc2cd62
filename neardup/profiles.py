"""Named settings for the lexical methods: ``clean`` (their defaults) and ``noisy``.

Word 3-grams at Jaccard 0.5 suit clean text but score near 0 ARI on heavy OCR noise,
typos and other scripts; character 5-grams at 0.3 hold up there (docs/transfer.md). No
single setting serves both within the defaults rule (decision 0019), so the user names
the profile: ``--profile noisy`` / ``profile="noisy"``. The noisy threshold is the
maximin one over the ten labelled sets' validation splits (decision 0008's rule), for
each method separately. A parameter the user gives wins over the profile's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NOISY", "PROFILED_METHODS", "PROFILES", "profile_settings", "shingle_setting"]

#: The profile names; "clean" is the default and changes nothing.
PROFILES = ("clean", "noisy")
#: The noisy profile: per method, its threshold and shingling (unit, length).
NOISY: dict[str, dict[str, Any]] = {
    "ngram": {"threshold": 0.3, "shingle": ("char", 5)},
    "minhash": {"threshold": 0.3, "shingle": ("char", 5)},
}
#: The methods a profile other than "clean" changes.
PROFILED_METHODS = tuple(NOISY)


def profile_settings(profile: str, method: str) -> dict[str, Any]:
    """Constructor keywords that ``profile`` sets for ``method`` (empty for "clean" and
    for methods it does not change); ``shingle`` as a ShingleConfig."""
    from neardup.errors import check_choice
    from neardup.text import ShingleConfig

    check_choice("profile", "profile", profile, PROFILES)
    if profile == "clean" or method not in NOISY:
        return {}
    settings = dict(NOISY[method])
    unit, n = settings.pop("shingle")
    return {**settings, "shingle": ShingleConfig(unit=unit, n=n)}


def shingle_setting(profile: str, method: str, unit: str | None, n: int | None):
    """The ShingleConfig from ``--shingle``/``--ngram`` (None: not given) over the
    profile's: each given flag wins; a unit other than the profile's gets that unit's
    command-line default length (3)."""
    from neardup.text import ShingleConfig

    base = profile_settings(profile, method).get("shingle", ShingleConfig(unit="word", n=3))
    unit = base.unit if unit is None else unit
    if n is None:
        n = base.n if unit == base.unit else 3
    return ShingleConfig(unit=unit, n=n)
