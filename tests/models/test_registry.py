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


def test_tuned_thresholds_are_read_from_model_json(tmp_path):
    from neardup.models import tuned_threshold

    (tmp_path / "model.json").write_text(json.dumps(
        {"kind": "biencoder", "tuned_thresholds": {"biencoder": 0.61, "other": "x"}}))
    assert tuned_threshold(tmp_path, "biencoder", "biencoder") == 0.61
    assert tuned_threshold(tmp_path, "biencoder", "other") is None  # not a number
    assert tuned_threshold(tmp_path, "biencoder", "retsim") is None  # not tuned there
    assert tuned_threshold(None, "retsim", "retsim") is None
    assert tuned_threshold(tmp_path / "missing", "retsim", "retsim") is None
    for name, meta in shipped_models().items():  # every shipped model says its thresholds
        assert meta["tuned_thresholds"], name
        for setting, value in meta["tuned_thresholds"].items():
            assert tuned_threshold(name, meta["kind"], setting) == value and 0 < value < 1


def test_methods_default_to_the_models_tuned_threshold(tmp_path):
    from neardup.methods import make_method

    (tmp_path / "model.json").write_text(json.dumps(
        {"kind": "biencoder", "tuned_thresholds": {"biencoder": 0.61}}))
    assert make_method("biencoder", model=str(tmp_path)).threshold == 0.61
    assert make_method("biencoder", model=str(tmp_path), threshold=0.8).threshold == 0.8
    assert make_method("biencoder").threshold == 0.9  # the off-the-shelf model: generic
    if "biencoder-news" in shipped_models("biencoder"):
        assert make_method("biencoder", model="biencoder-news").threshold == 0.68
