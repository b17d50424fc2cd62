"""The shipped-model registry behind ``--model``."""

from __future__ import annotations

import json

import pytest

from neardup.models import resolve_model, shipped_models


def test_every_shipped_model_has_a_kind_and_a_model_card():
    for name, meta in shipped_models().items():
        from neardup.models import KINDS, MODELS_DIR

        assert meta["kind"] in KINDS, name
        card = (MODELS_DIR / name / "README.md").read_text(encoding="utf-8")
        assert "test" in card.lower() and "validation" in card.lower(), name
        size = sum(p.stat().st_size for p in (MODELS_DIR / name).rglob("*") if p.is_file())
        assert size <= 30 * 2**20, f"{name} is {size / 2**20:.1f} MB (limit 30 MB)"


def test_directories_resolve_and_unknown_names_list_the_shipped_ones(tmp_path):
    assert resolve_model(str(tmp_path), "biencoder") == tmp_path
    with pytest.raises(FileNotFoundError, match="shipped"):
        resolve_model("no-such-model", "retsim")
    with pytest.raises(ValueError, match="kind"):
        resolve_model(str(tmp_path), "nonsense")


def test_a_shipped_name_of_another_kind_is_refused():
    models = shipped_models()
    if not models:
        pytest.skip("no shipped models")
    name, meta = next(iter(models.items()))
    other = "biencoder" if meta["kind"] != "biencoder" else "retsim"
    with pytest.raises(ValueError, match="not a"):
        resolve_model(name, other)
    json.dumps(meta)
