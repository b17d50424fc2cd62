"""Shared fixtures for the embedding tests: one model per test session.

Tests that need onnxruntime or unisim skip cleanly when they are absent; the model is
loaded once (session scope) because every load costs a graph optimization pass.
"""

from __future__ import annotations

import importlib.util

import pytest

def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="session")
def retsim():
    """A loaded RETSim (skips without onnxruntime or unisim's model file)."""
    pytest.importorskip("onnxruntime")
    if not _has("unisim"):
        pytest.skip("unisim (which ships the RETSim model) is not installed")
    from neardup.embed import RETSim

    model = RETSim(batch_size=16)
    model.encode(["warm-up"])
    return model


@pytest.fixture(scope="session")
def reference():
    """unisim's own TextSim, the reference implementation (ONNX backend, no TensorFlow)."""
    pytest.importorskip("onnxruntime")
    unisim = pytest.importorskip("unisim")
    return unisim.TextSim(batch_size=16)
