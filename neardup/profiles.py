"""Named settings for the lexical methods, and the default that picks one from the input.

Word 3-grams at Jaccard 0.5 (``clean``) suit clean web and wire text but score near 0 ARI
on heavy OCR noise, typos and other scripts; character 5-grams at 0.3 (``noisy``) hold up
there and lose on light OCR, where word shingles do best (docs/transfer.md). No single
setting serves both (decision 0021), so ``auto``, the default, reads the input's first
:data:`~neardup.text.noise_signal.SAMPLE_DOCS` documents and takes ``noisy`` when the
noise signal (:mod:`neardup.text.noise_signal`, chosen on validation splits and clean
text only) fires, ``clean`` otherwise (decision 0031). The noisy threshold is the
maximin one over the ten labelled sets' validation splits, per method. A parameter the
user gives wins over the profile's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["NOISY", "PROFILED_METHODS", "PROFILES", "ProfileChoice", "choose_from_batches",
           "choose_profile", "profile_settings", "shingle_setting"]

#: The profile names; "auto" (the default) resolves to "clean" or "noisy" per input,
#: "clean" changes nothing.
PROFILES = ("auto", "clean", "noisy")
#: The noisy profile: per method, its threshold and shingling (unit, length).
NOISY: dict[str, dict[str, Any]] = {
    "ngram": {"threshold": 0.3, "shingle": ("char", 5)},
    "minhash": {"threshold": 0.3, "shingle": ("char", 5)},
}
#: The methods a profile other than "clean" changes.
PROFILED_METHODS = tuple(NOISY)


@dataclass(frozen=True)
class ProfileChoice:
    """The profile a run uses: ``name`` ("clean" or "noisy"), the ``requested`` one, and,
    when ``auto`` read a sample, the noise signal's shares over it."""

    name: str
    requested: str
    broken_tokens: float | None = None
    stuck_punctuation: float | None = None
    sample_docs: int = 0

    @property
    def chosen(self) -> bool:
        """Whether ``auto`` read the input to choose."""
        return self.requested == "auto" and self.broken_tokens is not None

    def record(self) -> dict[str, Any]:
        """The run record's ``profile`` entry."""
        record: dict[str, Any] = {"name": self.name, "requested": self.requested}
        if self.chosen:
            record.update(sample_docs=self.sample_docs, broken_tokens=self.broken_tokens,
                          stuck_punctuation=self.stuck_punctuation)
        return record

    def run_params(self) -> dict[str, Any]:
        """The entries a run's ``params`` record: ``profile``, and ``profile_auto`` when
        ``auto`` read the input."""
        return {"profile": self.name, **({"profile_auto": self.record()} if self.chosen else {})}

    def describe(self) -> str:
        """One line for a summary: what ``auto`` chose and why; empty otherwise."""
        if not self.chosen:
            return ""
        from neardup.text.noise_signal import BROKEN_TOKEN_SHARE, STUCK_PUNCTUATION_SHARE

        signs = (f"{100 * self.broken_tokens:.2f}% broken words (cut-off "
                 f"{100 * BROKEN_TOKEN_SHARE:.1f}%), {100 * self.stuck_punctuation:.2f}% with "
                 f"punctuation stuck between letters (cut-off {100 * STUCK_PUNCTUATION_SHARE:.1f}%)"
                 f" in the first {self.sample_docs:,} documents")
        if self.name == "noisy":
            return (f"profile auto chose noisy (character 5-grams at Jaccard 0.3): {signs}. "
                    "Pass --profile clean for word 3-grams at 0.5.")
        return (f"profile auto chose clean (word 3-grams at Jaccard 0.5): {signs}. "
                "Pass --profile noisy for OCR'd or otherwise noisy text.")


def choose_profile(profile: str, method: str, texts: Iterable[str] | None) -> ProfileChoice:
    """The profile ``method`` runs with: ``profile`` itself unless it is "auto"; for
    "auto", "noisy" when the noise signal fires on the first
    :data:`~neardup.text.noise_signal.SAMPLE_DOCS` of ``texts``, else "clean". A method
    no profile changes, or no texts (None: a front door that sees no documents before it
    must fix its settings, such as an empty index), get "clean" without reading."""
    from neardup.errors import check_choice
    from neardup.text.noise_signal import SAMPLE_DOCS, noise_shares

    check_choice("profile", "profile", profile, PROFILES)
    if profile != "auto":
        return ProfileChoice(profile, profile)
    if method not in NOISY or texts is None:
        return ProfileChoice("clean", "auto")
    sample = []
    for text in texts:
        if len(sample) == SAMPLE_DOCS:
            break
        if isinstance(text, str):
            sample.append(text)
    shares = noise_shares(sample)
    return ProfileChoice("noisy" if shares.noisy() else "clean", "auto", shares.broken_tokens,
                         shares.stuck_punctuation, len(sample))


def choose_from_batches(profile: str, method: str, batches):
    """:func:`choose_profile` over the first documents of ``batches`` (DocumentBatch
    objects), and an iterator over every batch from the first: a stream is read once.
    Nothing is read when the choice needs no documents."""
    from neardup.io.batch import look_ahead
    from neardup.text.noise_signal import SAMPLE_DOCS

    if profile != "auto" or method not in NOISY:
        return choose_profile(profile, method, None), batches
    head, batches = look_ahead(batches, SAMPLE_DOCS)
    return choose_profile(profile, method, (t for b in head for t in b.texts)), batches


def profile_settings(profile: str, method: str) -> dict[str, Any]:
    """Constructor keywords that ``profile`` ("clean" or "noisy"; resolve "auto" with
    :func:`choose_profile` first) sets for ``method`` (empty for "clean" and for methods it
    does not change); ``shingle`` as a ShingleConfig."""
    from neardup.errors import check_choice
    from neardup.text import ShingleConfig

    check_choice("profile", "profile", profile, PROFILES[1:])
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
