import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.embed.binarizer import (
    CHUNK_SIZE,
    CODE_BITS,
    binarize,
    binarize_codes,
    chunk_texts,
)


@pytest.fixture(scope="module")
def reference_binarizer():
    module = pytest.importorskip("unisim.embedder.text.binarizer")
    return module.binarizer


# -- chunking rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "lengths"),
    [
        (0, [0]),  # empty: one chunk of padding
        (1, [1]),
        (511, [511]),
        (512, [512, 0]),  # exactly one chunk: the reference adds a padding chunk
        (513, [512]),  # remainder 1 <= 256: dropped
        (768, [512]),  # remainder 256: dropped
        (769, [512, 257]),  # remainder 257: padded
        (1024, [512, 512]),  # exact multiple above one chunk: no padding chunk
        (1025, [512, 512]),
        (1536 + 300, [512, 512, 512, 300]),
    ],
)
def test_chunk_lengths_follow_reference_rules(n, lengths):
    chunks = chunk_texts(["q" * n])
    assert chunks.lengths.tolist() == lengths
    assert chunks.offsets.tolist() == [0, len(lengths)]
    assert chunks.starts.tolist() == [512 * i for i in range(len(lengths))]


def test_chunks_of_a_batch_point_into_the_concatenation():
    texts = ["ab", "", "c" * 800, "d"]
    chunks = chunk_texts(texts)
    assert chunks.offsets.tolist() == [0, 1, 2, 4, 5]
    assert chunks.starts.tolist() == [0, 2, 2, 514, 802]
    assert chunks.lengths.tolist() == [2, 0, 512, 288, 1]
    codes = chunks.codes()
    assert codes.dtype == np.uint32 and codes.shape == (5, CHUNK_SIZE)
    assert codes[0, :3].tolist() == [ord("a"), ord("b"), 0]
    assert not codes[1].any()  # the empty text is padding only
    assert (codes[3, :288] == ord("c")).all() and not codes[3, 288:].any()  # no spill
    assert codes[4, 0] == ord("d") and not codes[4, 1:].any()
    sub = chunks.codes(np.array([4, 0]))
    np.testing.assert_array_equal(sub, codes[[4, 0]])


def test_empty_batch():
    inputs, offsets = binarize([])
    assert inputs.shape == (0, CHUNK_SIZE, CODE_BITS) and inputs.dtype == np.float32
    assert offsets.tolist() == [0]


# -- bit codes ----------------------------------------------------------------------------


def test_code_is_24_bits_most_significant_first():
    codes = np.zeros((1, 4), np.uint32)
    codes[0] = [0, 1, ord("A"), 0x10FFFF]
    bits = binarize_codes(codes)
    assert bits.shape == (1, 4, 24) and bits.dtype == np.float32
    assert not bits[0, 0].any()
    assert bits[0, 1].tolist() == [0.0] * 23 + [1.0]
    assert "".join(str(int(b)) for b in bits[0, 2]) == format(ord("A"), "024b")
    assert "".join(str(int(b)) for b in bits[0, 3]) == format(0x10FFFF, "024b")


def test_out_buffer_is_filled_and_returned():
    codes = chunk_texts(["hello", "world" * 200]).codes()
    buffer = np.full((8, CHUNK_SIZE, CODE_BITS), 7.0, np.float32)
    got = binarize_codes(codes, out=buffer[: len(codes)])
    assert np.shares_memory(got, buffer)
    np.testing.assert_array_equal(got, binarize_codes(codes))


def test_surrogates_are_kept_as_code_points():
    # Two lone surrogates in a row (also across a text boundary) stay two code points.
    chunks = chunk_texts(["a\ud83d", "\ude00b", "\ud83d\ude00"])
    codes = chunks.codes()
    assert codes[0, :2].tolist() == [ord("a"), 0xD83D]
    assert codes[1, :2].tolist() == [0xDE00, ord("b")]
    assert codes[2, :2].tolist() == [0xD83D, 0xDE00]


# -- equality with the reference (google/unisim) ------------------------------------------


def test_matches_reference_exactly(reference_binarizer, varied_texts):
    ours, offsets = binarize(varied_texts)
    theirs, chunk_ids = reference_binarizer(varied_texts)
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_array_equal(ours, theirs)
    assert np.diff(offsets).tolist() == [len(ids) for ids in chunk_ids]


def test_matches_reference_on_lengths_around_every_rule(reference_binarizer):
    texts = ["αβγ😀"[i % 4] * n for i, n in enumerate(range(0, 2 * CHUNK_SIZE + 300, 37))]
    texts += ["k" * n for n in (255, 256, 257, 511, 512, 513, 767, 768, 769, 1023, 1024)]
    ours, offsets = binarize(texts)
    theirs, chunk_ids = reference_binarizer(texts)
    np.testing.assert_array_equal(ours, theirs)
    assert np.diff(offsets).tolist() == [len(ids) for ids in chunk_ids]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.text(st.characters(exclude_categories=()), max_size=40), min_size=1, max_size=8
    ),
    chunk_size=st.integers(1, 12),
    last_chunk_min_size=st.integers(0, 14),
)
def test_matches_reference_for_any_chunk_rule(texts, chunk_size, last_chunk_min_size):
    reference = pytest.importorskip("unisim.embedder.text.binarizer").binarizer
    ours, offsets = binarize(texts, chunk_size=chunk_size, last_chunk_min_size=last_chunk_min_size)
    theirs, chunk_ids = reference(
        texts, chunk_size=chunk_size, last_chunk_min_size=last_chunk_min_size
    )
    np.testing.assert_array_equal(ours, theirs)
    assert np.diff(offsets).tolist() == [len(ids) for ids in chunk_ids]


# -- hostile input ------------------------------------------------------------------------


def test_five_megabyte_text_is_chunked_without_materializing_it():
    text = ("0123456789abcdef" * 32) * 10240  # 5 MiB, exactly 10,240 chunks
    tracemalloc.start()
    try:
        chunks = chunk_texts([text])
        first = binarize_codes(chunks.codes(np.arange(16)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(chunks) == 10240 and (chunks.lengths == CHUNK_SIZE).all()
    assert first.shape == (16, CHUNK_SIZE, CODE_BITS)
    # The whole-text float input would be 503 MB; chunking needs the code points (20 MB)
    # plus temporary copies of the text.
    assert peak < 120 * 2**20


def test_invalid_chunk_parameters():
    with pytest.raises(ValueError, match="chunk_texts: parameter 'chunk_size' must be"):
        chunk_texts(["a"], chunk_size=0)
    with pytest.raises(ValueError, match="parameter 'last_chunk_min_size' must be"):
        chunk_texts(["a"], last_chunk_min_size=-1)
