"""Hugging Face ``datasets``: in-memory datasets as Arrow, and datasets saved to disk.

Nothing here downloads: a ``Dataset`` or ``IterableDataset`` the caller already holds is
read through Arrow, and a directory written by ``Dataset.save_to_disk`` is read as the
Arrow stream files its ``state.json`` lists (without importing ``datasets``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from neardup.errors import InputError
from neardup.io.locations import Location, storage_error

__all__ = ["dataset_kind", "dataset_table", "dataset_tables", "saved_dataset_files"]


def dataset_kind(data: Any) -> str | None:
    """``"dataset"``, ``"iterable"`` or ``"dict"`` for a Hugging Face ``Dataset``,
    ``IterableDataset`` or ``DatasetDict``/``IterableDatasetDict``; None for anything
    else (``datasets`` is imported only when ``data`` comes from it)."""
    if type(data).__module__.partition(".")[0] != "datasets":
        return None
    import datasets

    if isinstance(data, datasets.Dataset):
        return "dataset"
    if isinstance(data, datasets.IterableDataset):
        return "iterable"
    if isinstance(data, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        return "dict"
    return None


def _split_hint(data: Any, caller: str) -> InputError:
    splits = ", ".join(repr(k) for k in data) or "none"
    return InputError(f"{caller}: got a DatasetDict (splits {splits}); pass one split, e.g. "
                      f"data[{next(iter(data), 'train')!r}].")


def dataset_table(data: Any, caller: str = "dedup") -> pa.Table:
    """A ``datasets.Dataset`` as a pyarrow Table, without copying its data when it has no
    indices mapping (its memory-mapped Arrow table, sliced); after ``select``,
    ``shuffle`` or ``filter`` the rows are gathered once (Arrow ``take``)."""
    if dataset_kind(data) == "dict":
        raise _split_hint(data, caller)
    table = data.with_format("arrow")[:]
    if not isinstance(table, pa.Table):  # pragma: no cover - older datasets
        table = pa.Table.from_batches([table]) if isinstance(table, pa.RecordBatch) else table
    return table


def dataset_tables(data: Any, batch_size: int) -> Iterator[pa.Table]:
    """A ``datasets.IterableDataset`` streamed as pyarrow Tables of at most
    ``batch_size`` rows, in its iteration order; nothing else is held in memory."""
    yield from data.with_format("arrow").iter(batch_size=batch_size)


def saved_dataset_files(location: Location) -> list[Location] | None:
    """The ``.arrow`` files of a dataset saved with ``Dataset.save_to_disk`` in
    ``location``, in the order of its ``state.json``; None when the directory is not one.
    A ``DatasetDict`` saved to disk is an InputError naming its splits."""
    state_file = location.child("state.json")
    dict_file = location.child("dataset_dict.json")
    try:
        if dict_file.exists():
            with dict_file.open("rb") as handle:
                splits = json.load(handle).get("splits", [])
            shown = ", ".join(repr(s) for s in splits) or "none"
            example = location.child(splits[0]).url if splits else location.url + "/train"
            raise InputError(
                f"{location.url}: a DatasetDict saved with save_to_disk (splits {shown}); "
                f"give one split's directory, e.g. {example}."
            )
        if not state_file.exists():
            return None
        with state_file.open("rb") as handle:
            state = json.load(handle)
    except (OSError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise storage_error(exc, state_file, "") from None
    try:
        names = [entry["filename"] for entry in state["_data_files"]]
    except (KeyError, TypeError):
        raise InputError(
            f"{state_file.url}: not the state.json of a saved dataset (no '_data_files' "
            "list of {'filename': ...})."
        ) from None
    if not names:
        raise InputError(f"{state_file.url}: the saved dataset lists no data files.")
    return [location.child(name) for name in names]
