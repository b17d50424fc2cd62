"""Fast, deterministic stand-ins for the embedding models, shared by the vector-stage and
Ray tests (a module of its own so Ray workers can import the classes), and a simulated kill
for the resume tests."""

from __future__ import annotations

import numpy as np

from neardup.methods.embedding import BiEncoderMethod, RETSimMethod, RETSimPartialMethod


class TrigramEmbedder:
    """Hashed character-trigram counts, L2-normalised: near-identical texts get close rows."""

    dim = 64

    def _rows(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            data = np.frombuffer(text.lower().encode("utf-8"), dtype=np.uint8).astype(np.int64)
            if data.size >= 3:
                grams = (data[:-2] * 65599 + data[1:-1] * 257 + data[2:]) % 1000003
                np.add.at(out[i], (grams * 2654435761) % self.dim, 1.0)
            else:
                out[i, 0] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def encode(self, texts, batch_size=None, progress=False):
        return self._rows(texts)

    def encode_chunks(self, texts, batch_size=None, progress=False):
        pieces = [[t[s:s + 300] for s in range(0, max(len(t), 1), 300)] for t in texts]
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in pieces], out=offsets[1:])
        return self._rows([c for p in pieces for c in p]), offsets


class FakeRETSim(RETSimMethod):
    def _make_embedder(self):
        return TrigramEmbedder()


class FakeRETSimPartial(RETSimPartialMethod):
    def _make_embedder(self):
        return TrigramEmbedder()


class FakeBiEncoder(BiEncoderMethod):
    def _make_embedder(self):
        return TrigramEmbedder()


class Killed(Exception):
    """A simulated kill: the process dying half-way through a stage."""


def die_at_call(monkeypatch, owner, name: str, n: int) -> dict:
    """Replace ``owner.name`` with a wrapper that raises :class:`Killed` at its ``n``-th call
    (earlier calls run the real one). Returns the call counter ``{"n": calls so far}``."""
    real = getattr(owner, name)
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            raise Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, dying)
    return calls
