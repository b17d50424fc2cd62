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
    file, a rewritten one) the texts decide: the inputs are read whole, and each range of
    rows the run recorded (a whole input; on Ray, each shard of a file) must hold as many
    documents with the same texts' digest. A run that recorded no digest (resumed, in
    memory) is not checked here; the report still checks each shown document's id.
    """
    from neardup.io.identity import reading_digest

    if not outputs.input_texts:
        return
    if outputs.input_identity is not None:
        try:
            now = reading_digest(list(inputs), reader)
        except OSError:
            now = None  # the reader names an unreadable input
        if now == outputs.input_identity:
            return
    _compare_texts(outputs.input_texts, inputs, reader)


def _compare_texts(recorded: list[dict], inputs: Sequence[str | os.PathLike], reader: Any) -> None:
    """Read ``inputs`` whole, digesting the row ranges ``recorded`` names; the inputs are
    matched to the recorded sources by order (a copy has another name)."""
    from neardup.io import read_corpus
    from neardup.io.identity import TextsDigest

    sources: list[str] = []  # the recorded sources, in order
    ranges: list[list[tuple[int, int, dict]]] = []  # per source: (first, stop, entry)
    for entry in recorded:
        if not sources or sources[-1] != entry.get("source"):
            sources.append(entry.get("source"))
            ranges.append([])
        first = int(entry.get("first", 0))
        ranges[-1].append((first, first + int(entry["documents"]), entry))
    digests = [[TextsDigest() for _ in r] for r in ranges]
    names: list[str] = []  # the sources read now, in order
    seen: list[int] = []  # documents read of each
    for batch in read_corpus(list(inputs), reader):
        if not names or names[-1] != batch.source:
            names.append(batch.source)
            seen.append(0)
        index, start = len(names) - 1, seen[-1]
        seen[-1] += len(batch)
        if index >= len(ranges):
            continue  # an input the run did not read: named below
        texts = batch.texts
        for (first, stop, _), digest in zip(ranges[index], digests[index]):
            lo, hi = max(first, start), min(stop, start + len(texts))
            if lo < hi:
                digest.update(texts[lo - start:hi - start])
    for index, source in enumerate(sources):
        if index >= len(names):
            raise _changed(source, "it is missing from the inputs given")
        expected = ranges[index][-1][1] if ranges[index] else 0
        if seen[index] != expected:
            raise _changed(names[index], f"it holds {seen[index]:,} documents where the run "
                           f"read {expected:,}")
        for (first, stop, entry), digest in zip(ranges[index], digests[index]):
            if digest.count != stop - first or digest.hexdigest() != entry["digest"]:
                where = "its texts" if first == 0 and stop == expected else \
                    f"its texts in rows {first:,} to {stop - 1:,}"
                raise _changed(names[index], f"{where} differ from the ones the run read")
    if len(names) > len(sources):
        raise _changed(names[len(sources)], "the run did not read it")


def _changed(source: str, what: str) -> InputError:
    return InputError(
        f"report: {source}: this is not the corpus the run read ({what}). The report takes "
        "each document's text by its position in the input, so it would show texts the run "
        "never clustered. Pass the files the run read, unchanged and in the same order, "
        "with the same --text-field, --id-field and --limit; or run neardup dedup again "
        "on the corpus as it is now."
    )
