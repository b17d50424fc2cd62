"""Whether the corpus a report is given is the one its run read: the report takes texts
by position, so another corpus would show texts the run never clustered."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from neardup.errors import InputError
from neardup.report.run import RunOutputs

__all__ = ["check_corpus"]


def check_corpus(outputs: RunOutputs, inputs: Sequence[str | os.PathLike], reader: Any) -> None:
    """InputError unless ``inputs``, read with ``reader``, hold the texts the run read.

    When the files are as the run found them (the same paths, sizes and modification
    times, read with the same options) nothing is read. Otherwise (a copy, a touched
    file, a rewritten one) the texts decide: each input is read whole and its texts'
    digest compared with the one the run recorded. A run that recorded no digest (on
    Ray, resumed, in memory) is not checked here; the report still checks each shown
    document's id.
    """
    from neardup.io import read_corpus
    from neardup.io.identity import TextsDigest, input_identity

    recorded = outputs.input_texts
    if not recorded:
        return
    if outputs.input_identity is not None:
        try:
            now = input_identity(list(inputs), reader.params(), reader.storage_options)
        except OSError:
            now = None  # the reader names an unreadable input
        if now == outputs.input_identity:
            return
    found: dict[str, TextsDigest] = {}
    for batch in read_corpus(list(inputs), reader):
        found.setdefault(batch.source, TextsDigest()).update(batch.texts)
    then = [(t.get("source", "?"), t["documents"], t["digest"]) for t in recorded]
    now_read = [(source, d.count, d.hexdigest()) for source, d in found.items()]
    for index, (source, count, digest) in enumerate(then):
        if index >= len(now_read):
            raise _changed(source, "it is missing from the inputs given")
        name, now_count, now_digest = now_read[index]
        if now_count != count:
            raise _changed(name, f"it holds {now_count:,} documents where the run read {count:,}")
        if now_digest != digest:
            raise _changed(name, "its texts differ from the ones the run read")
    if len(now_read) > len(then):
        raise _changed(now_read[len(then)][0], "the run did not read it")


def _changed(source: str, what: str) -> InputError:
    return InputError(
        f"report: {source}: this is not the corpus the run read ({what}). The report takes "
        "each document's text by its position in the input, so it would show texts the run "
        "never clustered. Pass the files the run read, unchanged and in the same order, "
        "with the same --text-field, --id-field and --limit; or run neardup dedup again "
        "on the corpus as it is now."
    )
