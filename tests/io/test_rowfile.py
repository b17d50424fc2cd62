import numpy as np
import pytest

from neardup.io.rowfile import read_rows, read_spans


@pytest.fixture
def row_file(tmp_path):
    rows = np.arange(1000 * 16, dtype=np.uint8).reshape(1000, 16)
    path = tmp_path / "rows.bin"
    rows.tofile(path)
    return path, rows


def test_read_rows_matches_indexing_in_any_order_with_repeats(row_file):
    path, rows = row_file
    wanted = np.array([999, 3, 4, 5, 3, 0, 500, 501], np.int64)
    out = read_rows(path, wanted, 16)
    np.testing.assert_array_equal(out, rows[wanted])
    assert out.flags.writeable  # callers may modify rows in place


def test_read_spans_concatenates_and_skips_empty_spans(row_file):
    path, rows = row_file
    flat = rows.ravel()
    out = read_spans(path, np.array([10, 0, 100, 116]), np.array([3, 0, 16, 4]))
    np.testing.assert_array_equal(out, np.concatenate([flat[10:13], flat[100:116], flat[116:120]]))
    assert read_spans(path, np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0


def test_a_truncated_file_is_an_error_not_short_rows(row_file):
    path, _ = row_file
    with pytest.raises(OSError, match="shorter than the rows asked for"):
        read_rows(path, np.array([999, 1000]), 16)


def test_rows_near_and_far_apart_read_as_runs_give_the_rows_asked_for(tmp_path):
    from neardup.io.rowfile import GAP_BYTES

    row_bytes = 64
    gap_rows = GAP_BYTES // row_bytes
    rows = np.random.default_rng(0).integers(0, 255, (40 * gap_rows, row_bytes), dtype=np.uint8)
    path = tmp_path / "rows.bin"
    rows.tofile(path)
    # Runs of one row, neighbours, rows just within and just beyond the gap, repeats.
    wanted = np.array([5 * gap_rows, 0, 1, 2 + gap_rows, 3 + 3 * gap_rows, 5 * gap_rows,
                       40 * gap_rows - 1, 1], np.int64)
    np.testing.assert_array_equal(read_rows(path, wanted, row_bytes), rows[wanted])
    assert read_rows(path, np.zeros(0, np.int64), row_bytes).shape == (0, row_bytes)
