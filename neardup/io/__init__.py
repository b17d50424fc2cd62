"""Corpus I/O: stream documents in as batches, write tables and records out atomically."""

from neardup.io._dates import as_datetime64, field_epoch_seconds
from neardup.io._formats import parquet_num_rows, parquet_records
from neardup.io.batch import DocumentBatch
from neardup.io.locations import Location, locate
from neardup.io.outputs import OutputSet
from neardup.io.readers import (
    InputFile,
    ReaderConfig,
    detect_format,
    input_files,
    iter_record_batches,
    iter_records,
    kept_batches,
    parquet_inputs_schema,
    read_corpus,
)
from neardup.io.reuters import find_reuters_dir
from neardup.io.writers import atomic_path, write_records, write_table

__all__ = [
    "as_datetime64",
    "field_epoch_seconds",
    "parquet_num_rows",
    "parquet_records",
    "DocumentBatch",
    "InputFile",
    "Location",
    "OutputSet",
    "ReaderConfig",
    "atomic_path",
    "detect_format",
    "find_reuters_dir",
    "input_files",
    "locate",
    "iter_record_batches",
    "iter_records",
    "kept_batches",
    "parquet_inputs_schema",
    "read_corpus",
    "write_records",
    "write_table",
]
