"""The RETVec character binarizer that turns text into RETSim model input, vectorized.

RETSim (Zhang et al. 2023, sec. 3.1) reads text as fixed chunks of 512 characters. Each
character becomes the 24-bit binary code of its Unicode code point (RETVec, Bursztein et
al. 2023), most significant bit first, as float32 zeros and ones: a chunk is a (512, 24)
matrix. Every valid code point (at most 0x10FFFF, 21 bits) fits, in any script.

Chunking follows the reference implementation, google/unisim
``unisim/embedder/text/binarizer.py`` (v1.0.1), exactly, so that embeddings match it. With
``c = chunk_size`` (512) and ``m = last_chunk_min_size`` (256), a text of ``n`` characters
is cut into consecutive chunks of ``c`` characters, and then:

* if ``n > c`` and the remainder ``r = n % c`` is at most ``m``, the last ``r`` characters
  are dropped (nothing is dropped when ``r == 0``): ``n // c`` chunks;
* otherwise the text is padded with zero codes up to the next multiple of ``c``, always
  adding at least one padding character: ``n // c + 1`` chunks. So the empty text is one
  chunk of padding, and a text of exactly ``c`` characters gets a second chunk made only
  of padding (a quirk of the reference, kept because the model's averaged embedding of such
  a text depends on it).

There is no cap on the number of chunks per text. Padding is the zero code, the same as
the character U+0000.

How this differs from the reference: the reference builds one Python list of 24 floats per
character and a nested list per text, then converts; a 5 MB text costs several GB of
Python objects. Here the whole batch becomes one array of code points with a single
``str.encode`` (:func:`neardup.text.hashing.encode_codepoints`), chunks are described by
``(start, length)`` pairs into that array (:class:`Chunks`), and the float input is built
per model batch from any subset of chunks with ``np.unpackbits``, so memory stays bounded by
the batch, not by the longest text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neardup.errors import check_int
from neardup.text.hashing import encode_codepoints

__all__ = [
    "CHUNK_SIZE",
    "CODE_BITS",
    "LAST_CHUNK_MIN_SIZE",
    "Chunks",
    "binarize",
    "binarize_codes",
    "chunk_texts",
]

#: Characters per chunk (the RETSim model's fixed input length).
CHUNK_SIZE = 512
#: A last partial chunk of at most this many characters is dropped (texts longer than a chunk).
LAST_CHUNK_MIN_SIZE = 256
#: Bits per character code.
CODE_BITS = 24


@dataclass(frozen=True)
class Chunks:
    """How a batch of texts is cut into fixed-size chunks.

    Attributes
    ----------
    codepoints : ndarray of uint32, shape (total_chars + chunk_size,)
        The code points of all texts, concatenated, followed by ``chunk_size`` zeros so that
        a window of ``chunk_size`` starting at any text position stays in bounds.
    starts : ndarray of int64, shape (n_chunks,)
        Position in ``codepoints`` of each chunk's first character.
    lengths : ndarray of int64, shape (n_chunks,)
        Characters of text in each chunk, in ``[0, chunk_size]``; the rest is padding.
        0 marks a chunk made only of padding (the empty text, or the extra chunk of a text
        of exactly ``chunk_size`` characters).
    offsets : ndarray of int64, shape (n_texts + 1,)
        Text ``i`` owns chunks ``offsets[i]:offsets[i + 1]``; every text owns at least one.
    chunk_size : int
    """

    codepoints: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    offsets: np.ndarray
    chunk_size: int = CHUNK_SIZE

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def codes(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Code points of chunks ``rows`` (default: all), zero-padded.

        Returns
        -------
        ndarray of uint32, shape (len(rows), chunk_size), C-contiguous
        """
        starts, lengths = self.starts, self.lengths
        if rows is not None:
            starts, lengths = starts[rows], lengths[rows]
        c = self.chunk_size
        # Every chunk is a window of c code points starting at its first character; one
        # fancy-index copy gathers them all. Windows of partial chunks run into the next
        # text (or the zero tail), so those few rows are masked afterwards.
        windows = np.lib.stride_tricks.sliding_window_view(self.codepoints, c)
        codes = windows[starts]
        partial = np.flatnonzero(lengths < c)
        if partial.size:
            keep = np.arange(c) < lengths[partial, None]
            codes[partial] *= keep.astype(np.uint32)
        return codes


def chunk_texts(
    texts: Sequence[str],
    *,
    chunk_size: int = CHUNK_SIZE,
    last_chunk_min_size: int = LAST_CHUNK_MIN_SIZE,
) -> Chunks:
    """Cut ``texts`` into chunks with the reference RETSim rules (see the module docstring).

    Parameters
    ----------
    texts : sequence of str
        Raw texts. Lone surrogates are kept as their own code points, as the reference's
        ``ord`` does.
    chunk_size : int, default 512
        Characters per chunk; the RETSim model needs 512.
    last_chunk_min_size : int, default 256
        For texts longer than one chunk, a last partial chunk of at most this many
        characters is dropped; a longer one is padded.

    Returns
    -------
    Chunks
    """
    chunk_size = check_int("chunk_texts", "chunk_size", chunk_size, low=1)
    last_chunk_min_size = check_int(
        "chunk_texts", "last_chunk_min_size", last_chunk_min_size, low=0
    )
    codepoints, text_offsets = encode_codepoints(list(texts))
    codepoints = np.concatenate([codepoints, np.zeros(chunk_size, np.uint32)])

    n = np.diff(text_offsets)
    whole, rest = np.divmod(n, chunk_size)
    truncate = (n > chunk_size) & (rest <= last_chunk_min_size)
    n_chunks = np.where(truncate, whole, whole + 1)
    offsets = np.zeros(len(n) + 1, np.int64)
    np.cumsum(n_chunks, out=offsets[1:])

    text_of_chunk = np.repeat(np.arange(len(n)), n_chunks)
    index_in_text = np.arange(offsets[-1], dtype=np.int64) - offsets[text_of_chunk]
    begin = index_in_text * chunk_size
    starts = text_offsets[text_of_chunk] + begin
    lengths = np.clip(n[text_of_chunk] - begin, 0, chunk_size)
    return Chunks(codepoints, starts, lengths, offsets, chunk_size)


def binarize_codes(codes: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """Expand code points into their 24-bit binary codes, most significant bit first.

    Parameters
    ----------
    codes : ndarray of uint32, shape (k, chunk_size)
        Code points (at most 0xFFFFFF), e.g. from :meth:`Chunks.codes`.
    out : ndarray of float32, shape (k, chunk_size, 24), optional
        C-contiguous buffer to fill (reused across model batches); allocated when None.

    Returns
    -------
    ndarray of float32, shape (k, chunk_size, 24)
        ``out[i, j, b]`` is bit ``23 - b`` of ``codes[i, j]``, as 0.0 or 1.0.
    """
    k, c = codes.shape
    if out is None:
        out = np.empty((k, c, CODE_BITS), np.float32)
    # Big-endian bytes put the most significant byte first; the low three bytes hold the
    # 24-bit code, and unpackbits yields each byte's bits most significant first.
    low3 = codes.astype(">u4").view(np.uint8).reshape(k, c, 4)[:, :, 1:]
    np.copyto(out, np.unpackbits(low3, axis=-1), casting="unsafe")
    return out


def binarize(
    texts: Sequence[str],
    *,
    chunk_size: int = CHUNK_SIZE,
    last_chunk_min_size: int = LAST_CHUNK_MIN_SIZE,
) -> tuple[np.ndarray, np.ndarray]:
    """Model input for a whole batch of texts at once (the reference binarizer's output).

    Memory grows with the total text length (``4 * 24 * chunk_size`` bytes per chunk);
    :class:`~neardup.embed.RETSim` instead binarizes one model batch at a time.

    Returns
    -------
    inputs : ndarray of float32, shape (n_chunks, chunk_size, 24)
    offsets : ndarray of int64, shape (len(texts) + 1,)
        Text ``i``'s chunks are ``inputs[offsets[i]:offsets[i + 1]]``.
    """
    chunks = chunk_texts(texts, chunk_size=chunk_size, last_chunk_min_size=last_chunk_min_size)
    return binarize_codes(chunks.codes()), chunks.offsets
