"""What an input is, to tell later whether it is still the one a run read: its files'
identity (:func:`input_identity`) and a digest of its texts (:class:`TextsDigest`)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TextsDigest", "input_identity", "reading_digest"]


def input_identity(inputs, reader_params: dict[str, Any],
                   storage_options: dict[str, Any] | None = None) -> dict:
    """The inputs as a later read must find them again: resolved paths, sizes and
    modification times (a directory's entries too; for a URL, each file's size and its
    ETag or modification time as the store reports it), and how they are read."""
    from neardup.io.locations import is_url, locate

    files = []
    for path in inputs:
        if is_url(path):
            location = locate(path, storage_options)
            entries = location.files() if location.is_dir() else [location]
            for entry in entries:
                info = entry.info()
                files.append([entry.url, info.get("size"),
                              str(info.get("ETag") or info.get("mtime") or info.get("created"))])
            continue
        path = Path(path)
        entries = [path]
        if path.is_dir():
            entries = sorted(p for p in path.rglob("*") if p.is_file())
        for entry in entries:
            stat = os.stat(entry)
            files.append([str(entry.resolve()), stat.st_size, stat.st_mtime_ns])
    return {"files": files, "reader": reader_params}


def reading_digest(inputs, reader) -> str:
    """SHA-256 of :func:`input_identity` as ``reader`` (a ReaderConfig) reads the inputs,
    its batch size left out (it cuts the same texts into other batches): one line that
    tells whether the inputs are the same, however many files a directory holds."""
    params = {k: v for k, v in reader.params().items() if k != "batch_size"}
    identity = input_identity(inputs, params, reader.storage_options)
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class TextsDigest:
    """A digest of a sequence of texts that does not depend on how the sequence is cut
    into batches: SHA-256 over the texts' UTF-8 bytes end to end, and SHA-256 over their
    lengths in code points (together they determine the sequence). Each batch costs one
    join and one encode (:meth:`parts`), however many digests take it; SHA-256 because
    CPUs hash it in hardware (about twice BLAKE2b's speed here)."""

    __slots__ = ("_lengths", "_texts", "count")

    def __init__(self) -> None:
        self._texts = hashlib.sha256()
        self._lengths = hashlib.sha256()
        self.count = 0

    @staticmethod
    def parts(texts) -> tuple[bytes, bytes, int]:
        """``texts`` (a sequence of str) as :meth:`update_parts` takes them."""
        texts = texts if isinstance(texts, list) else list(texts)
        lengths = np.fromiter(map(len, texts), dtype="<i8", count=len(texts))
        return "".join(texts).encode("utf-8", "surrogatepass"), lengths.tobytes(), len(texts)

    def update_parts(self, parts: tuple[bytes, bytes, int]) -> None:
        data, lengths, count = parts
        self._texts.update(data)
        self._lengths.update(lengths)
        self.count += count

    def update(self, texts) -> None:
        """Add the next texts (a sequence of str)."""
        self.update_parts(self.parts(texts))

    def hexdigest(self) -> str:
        return self._texts.hexdigest() + self._lengths.hexdigest()
