"""Inputs a command reads a second time, by position: refused when they can be read only
once (a named pipe), and held to the first read (:class:`InputWatch`), so that an output
never takes another file's documents."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from neardup.errors import InputError
from neardup.io.identity import TextsDigest, input_identity

__all__ = ["InputWatch", "kept_parquet_batches", "non_seekable_inputs", "refuse_single_read_inputs"]


def non_seekable_inputs(inputs) -> list[tuple[Path, str]]:
    """Inputs that can be read only once (named pipes, character devices, sockets), with
    what they are."""
    import stat

    found = []
    for path in inputs:
        try:
            mode = os.stat(path).st_mode
        except OSError:  # the reader names missing inputs
            continue
        if stat.S_ISFIFO(mode):
            found.append((Path(path), "a named pipe (FIFO)"))
        elif stat.S_ISCHR(mode):
            found.append((Path(path), "a character device"))
        elif stat.S_ISSOCK(mode):
            found.append((Path(path), "a socket"))
    return found


def refuse_single_read_inputs(inputs, argument: str, why: str, drop: list[str] | None = None) -> None:
    """UsageError, before any work, for an input that can be read only once (a named pipe,
    a device) when the command reads its inputs a second time (``why``: which part does,
    in the user's words; ``drop``: the flags that ask for it, if dropping them avoids
    it): the second read would wait forever for data the first one consumed."""
    import click

    for path, what in non_seekable_inputs(inputs):
        name = os.fspath(path)
        raise click.UsageError(
            f"{argument} {name} is {what}, which can be read only once, and {why}. Save it to "
            f"a file first (cat {name} > corpus.jsonl) and give that file"
            + (f", or drop {' and '.join(drop)}." if drop else ".")
        )


def kept_parquet_batches(watch: InputWatch, keep, during: str):
    """The Parquet inputs of ``watch`` read again as Arrow batches for output ``during``
    (after :meth:`InputWatch.check`, held to the first read by
    :meth:`InputWatch.second_read_batches`), each cut to the rows whose ``keep`` is true
    (one flag per document, in input order)."""
    from neardup.io import iter_record_batches, kept_batches

    batches = iter_record_batches(list(watch.inputs), watch.reader)
    watch.check(during)
    checked = watch.second_read_batches(batches, during, len(keep))
    return kept_batches((batch for _source, batch in checked), keep)


def _file_state(path: Path) -> tuple[int, int, int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class InputWatch:
    """The inputs as the first read found them, to check before and while a later read
    (``--out``'s records, the pair types' texts, the HTML report) takes their documents
    by position again.

    Recorded when the run starts: each input file's device, inode, size and modification
    time (for a directory input, those of its ``.txt`` and ``.sgm`` files); during the
    first read, per input, a digest of its texts and their number
    (:class:`~neardup.io.identity.TextsDigest`). :meth:`check` compares the files with the
    record; :meth:`second_read` compares the texts a second read finds with the first
    read's, input by input. Either
    raises :class:`~neardup.errors.InputError` naming the file.
    """

    def __init__(self, inputs, reader) -> None:
        from neardup.io import detect_format
        from neardup.io.locations import is_url

        self.inputs = [p if is_url(p) else Path(p) for p in inputs]
        self.reader = reader
        self.kinds = {}
        for path in self.inputs:
            try:
                self.kinds[os.fspath(path)] = detect_format(path, reader.storage_options)
            except Exception:  # noqa: BLE001 - the reader names bad inputs
                self.kinds[os.fspath(path)] = None
        self.states = self._states()
        self.digests: dict[str, Any] = {}
        self.batch_digests: list[tuple[str, bytes]] = []  # (source, digest), batch by batch

    def _states(self) -> dict[str, Any]:
        states: dict[str, Any] = {}
        for path in self.inputs:
            if isinstance(path, str):  # a URL: each object's size and ETag (or mtime)
                try:
                    states[path] = input_identity([path], {}, self.reader.storage_options)
                except Exception as exc:  # noqa: BLE001 - the reader names unreadable inputs
                    states[path] = f"unreadable ({exc})"
                continue
            try:
                if path.is_dir():
                    entries = sorted(p for p in path.rglob("*")
                                     if p.suffix.lower() in (".txt", ".sgm") and p.is_file())
                    states[os.fspath(path)] = [(os.fspath(p), _file_state(p)) for p in entries]
                else:
                    states[os.fspath(path)] = _file_state(path)
            except OSError as exc:
                states[os.fspath(path)] = f"unreadable ({exc.strerror or exc})"
        return states

    def first_read(self, batches, per_batch: bool = False):
        """Pass the first read's batches through, recording their texts' digest, per
        input and (``per_batch``, for :meth:`second_batches`) per batch."""
        for batch in batches:
            source = batch.source
            digest = self.digests.get(source)
            if digest is None:
                digest = self.digests[source] = TextsDigest()
            parts = TextsDigest.parts(batch.texts)
            digest.update_parts(parts)
            if per_batch:
                own = TextsDigest()
                own.update_parts(parts)
                self.batch_digests.append((source, own.hexdigest()))
            yield batch

    @property
    def counts(self) -> dict[str, int]:
        """The documents the first read found in each input, in reading order."""
        return {source: digest.count for source, digest in self.digests.items()}

    def recorded_texts(self, total: int) -> list[dict[str, Any]]:
        """What the first read found in each input, in reading order (``source``, ``first``
        row, ``documents``, ``digest``: :class:`~neardup.io.identity.TextsDigest`), for the
        run's report; [] unless it saw all ``total`` documents the run clustered (a resumed
        run skips the stages that read the input, and its choices read only the first)."""
        if sum(self.counts.values()) != total:
            return []
        return [{"source": source, "first": 0, "documents": digest.count,
                 "digest": digest.hexdigest()} for source, digest in self.digests.items()]

    def _changed(self, path: str, what: str, during: str) -> InputError:
        return InputError(
            f"{path}: the input changed during the run ({what}). {during} reads it a second "
            "time and takes its documents by position, so it would write records other than "
            "the ones the run examined. No output was written; previous files are as they were. "
            "Run again when nothing else is writing the file (or on a copy of it)."
        )

    def check(self, during: str) -> None:
        """InputError if an input file is not as the run found it when it started."""
        now = self._states()
        for path, before in self.states.items():
            after = now.get(path)
            if after == before:
                continue
            if isinstance(before, tuple) and isinstance(after, tuple):
                if before[:2] != after[:2]:
                    what = "it was replaced by another file"
                elif before[2] != after[2]:
                    what = f"its size went from {before[2]:,} to {after[2]:,} bytes"
                else:
                    what = "it was modified"
            elif isinstance(before, list) and isinstance(after, list):
                what = "files in the directory were added, removed or modified"
            else:
                what = f"it is now {after}" if isinstance(after, str) else "it was replaced"
            raise self._changed(path, what, during)

    def _text_of(self, record: dict, kind: str | None) -> str | None:
        field = "text" if kind == "txtdir" else self.reader.text_field
        value = record.get(field)
        if isinstance(value, str):
            return value
        if value is None and kind == "reuters":
            return ""
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", "replace" if self.reader.errors == "replace"
                                       else "strict")
        return None

    def second_read_records(self, during: str, total: int):
        """The inputs' full records read again (:func:`neardup.io.iter_records`) for
        output ``during``, after :meth:`check`, through :meth:`second_read`."""
        from neardup.io import iter_records

        records = iter_records(list(self.inputs), self.reader)
        self.check(during)
        return self.second_read(records, during, total)

    def second_read(self, records, during: str, total: int):
        """Pass a second read's full records through (``iter_records`` order), checking
        that each input gives the same number of documents with the same texts as the
        first read. ``total``: the documents the run clustered; when the first read did
        not see them all (a resumed run reuses the stages that read the input), only
        their number is checked."""
        if sum(self.counts.values()) != total:
            yield from self._counted(records, during, total)
            return
        yield from self._compared(records, during)

    def second_batches(self, batches, during: str):
        """Pass a second read's batches through (the pair types' read, with the first
        read's batch size), checking each against the first read's batch: the same input
        and the same texts, as far as the reader goes."""
        if not self.counts:  # a resumed run: the first read was skipped
            yield from batches
            return
        try:
            for index, batch in enumerate(batches):
                digest = TextsDigest()
                digest.update(batch.texts)
                if index >= len(self.batch_digests):
                    self.check(during)
                    raise self._changed(batch.source, "it holds more documents than the "
                                        "first read found", during)
                if self.batch_digests[index] != (batch.source, digest.hexdigest()):
                    self.check(during)
                    raise self._changed(batch.source, "the texts read a second time differ "
                                        "from the first read's", during)
                yield batch
        except InputError:
            self.check(during)
            raise

    def _counted(self, items, during: str, total: int, size=lambda item: 1):
        """Pass ``items`` (records, or batches of ``size(item)`` records) through, checking
        that they hold ``total`` records."""
        listed = ", ".join(os.fspath(p) for p in self.inputs)
        seen = 0
        for item in items:
            seen += size(item)
            if seen > total:
                self.check(during)
                raise self._changed(listed, "it holds more documents than the run clustered",
                                    during)
            yield item
        if seen != total:
            self.check(during)
            raise self._changed(listed, f"the second read found {seen:,} documents where the "
                                f"run clustered {total:,}", during)

    def second_read_batches(self, batches, during: str, total: int):
        """:meth:`second_read` for a second read as Arrow record batches
        (:func:`neardup.io.iter_record_batches`, ``(source, batch)`` pairs): the same
        checks, the texts taken from each batch's text column."""
        if sum(self.counts.values()) != total:
            yield from self._counted(batches, during, total, size=lambda item: item[1].num_rows)
            return
        texts = _SecondReadTexts(self, during)
        try:
            for source, batch in batches:
                field = self.reader.text_field
                values = (batch.column(field).to_pylist() if field in batch.schema.names
                          else [None] * batch.num_rows)
                for value in values:
                    texts.add(value if value is None or isinstance(value, str)
                              else self._text_of({field: value}, "parquet"))
                yield source, batch
        except InputError:
            self.check(during)
            raise
        texts.finish()

    def _compared(self, records, during: str):
        texts = _SecondReadTexts(self, during)
        try:
            for record in records:
                texts.add(self._text_of(record, texts.kind()))
                yield record
        except InputError:
            self.check(during)  # an input rewritten mid-read: say so, not its symptom
            raise
        texts.finish()


class _SecondReadTexts:
    """The texts of a second read, one by one, held to the first read's (its inputs'
    document counts and digests in :class:`InputWatch`): InputError naming the input
    whose texts or number of documents differ."""

    #: Texts gathered before each digest update: one join and encode per chunk.
    CHUNK = 4096

    def __init__(self, watch: InputWatch, during: str) -> None:
        self.watch, self.during = watch, during
        self.counts = watch.counts
        self.sources = list(self.counts)
        self.index, self.seen, self.digest = 0, 0, TextsDigest()
        self.pending: list[str] = []

    def _advance(self) -> None:
        """Move past every input whose documents were all seen, checking each."""
        while self.index < len(self.sources) and \
                self.seen == self.counts[self.sources[self.index]]:
            self._compare()

    def kind(self) -> str | None:
        """The format of the input the next text belongs to."""
        self._advance()
        if self.index < len(self.sources):
            return self.watch.kinds.get(self.sources[self.index])
        return None

    def _compare(self) -> None:
        source = self.sources[self.index]
        self.digest.update(self.pending)
        self.pending = []
        if self.digest.hexdigest() != self.watch.digests[source].hexdigest():
            self.watch.check(self.during)
            raise self.watch._changed(source, "the texts read a second time differ from the "
                                      "first read's", self.during)
        self.index, self.seen, self.digest = self.index + 1, 0, TextsDigest()

    def add(self, text: str | None) -> None:
        """Count the next document's text in (None: it has none)."""
        watch = self.watch
        self._advance()
        if self.index == len(self.sources):
            watch.check(self.during)
            raise watch._changed(self.sources[-1] if self.sources else os.fspath(watch.inputs[0]),
                                 "it holds more documents than the first read found", self.during)
        self.pending.append("" if text is None else text)
        if len(self.pending) >= self.CHUNK:
            self.digest.update(self.pending)
            self.pending = []
        self.seen += 1

    def finish(self) -> None:
        """Check that the second read held every input's documents, no fewer."""
        watch = self.watch
        while self.index < len(self.sources):
            expected = self.counts[self.sources[self.index]]
            if self.seen != expected:
                watch.check(self.during)
                raise watch._changed(
                    self.sources[self.index], f"the second read found {self.seen:,} documents "
                    f"where the first found {expected:,}", self.during)
            self._compare()
