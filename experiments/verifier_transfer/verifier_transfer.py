"""The verifier trained on a mixture of generators, with leave-one-set-out transfer.

    python -m experiments.verifier_transfer.verifier_transfer features [--sets NAME ...]   # pair features, cached
    python -m experiments.verifier_transfer.verifier_transfer evaluate [--ship DIR]         # fits, tables, model

``features`` computes, per set: the verifier's training pairs on the set's *train*
split (:func:`neardup.train.cross_encoder.training_pairs`: MinHash candidates over
character 5-grams at Jaccard 0.1 plus generator pairs, ``--max-pairs`` per set), and the
candidates of its validation and test splits, from MinHash over character 5-grams and
from rerank's former default MinHash over word 3-grams (both Jaccard 0.1), each with
every feature of :data:`neardup.methods.pair_features.LEXICAL_FEATURES` (cache:
``--cache``); with ``--retsim`` also off-the-shelf RETSim's two similarities
(``RETSIM_FEATURES``; use another cache), which ``evaluate`` then adds as a third feature
set.

``evaluate`` fits HistGradientBoosting verifiers (as ``neardup train verifier``) on
these rows and scores connected components of the re-scored candidates (what
``--method rerank`` does, dates included) by ARI:

* **candidate oracle**: the true pairs among the candidates, the best re-ranking can do;
* **shipped**: the shipped ``verifier-news`` (trained by ``evaluate --ship``), at its
  default threshold, on both candidate sets;
* **leave-one-set-out** (per feature set: the shipped model's lexical features, or
  with the char 3/5-gram and white-space-free ones): for each set X, a verifier trained on every
  other set's train split, its threshold the one maximising the worst *validation* ARI
  of the other sets; test ARI on X. ``reuters-adversarial`` has no train split (it is
  always held out of training). The multi-* sets are copied by the same three
  augmenters as indep-nlpaug/augly/noisocr, so the strict rows for those three also
  leave every multi-* set out of training;
* **all sets**: trained on every train split, threshold by the maximin rule over every
  validation split, with the old and with the new features: ``--ship DIR`` writes the
  one whose worst validation ARI is higher (the maximin rule again; validation only),
  and only if that beats the shipped model's worst validation ARI at its default
  threshold (``ship_decision`` in the results says which won).

"Validation splits" in these rules include, for the sets of more than one language
(multi-latin, multi-cjk), each language of their language-balanced validation split
(``language_validation.jsonl.gz``, from ``make_independent_sets.py
--language-validation``): the worst curve over sets *and* languages decides.

Test ARIs are only read at thresholds chosen on validation splits. Results:
experiments/verifier_transfer/results/verifier_transfer.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from neardup.datasets.independent import LANGUAGE_SPLIT
from neardup.text import ShingleConfig

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "verifier_transfer.json"
SETS = ["reuters-news", "reuters-adversarial", "indep-nlpaug", "indep-augly", "indep-noisocr",
        "indep-confusables", "multi-latin", "multi-cyrillic", "multi-greek", "multi-cjk"]
MULTI = [s for s in SETS if s.startswith("multi-")]
AUGMENTERS = ["indep-nlpaug", "indep-augly", "indep-noisocr"]
THRESHOLDS = [0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65,
              0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98]
DATE_DROPOUT = 0.25


#: Candidate settings: rerank's former MinHash (word 3-grams, Jaccard 0.1) and its current
#: default, MinHash over character 5-grams (Jaccard 0.1), which does not need word
#: boundaries. Both shingles are given: ``{}`` would take rerank's current defaults.
CANDIDATES = {"word": {"shingle": ShingleConfig("word", 3)},
              "char5": {"shingle": ShingleConfig("char", 5)}}


def candidates(corpus, kind: str):
    """The candidate pairs of ``CANDIDATES[kind]`` over a labelled corpus (canonical order)."""
    from neardup.io import DocumentBatch
    from neardup.methods.rerank import candidate_method
    from neardup.pipeline import sketch_corpus

    method = candidate_method("minhash", CANDIDATES[kind])
    batch = DocumentBatch(ids=corpus.ids.tolist(), texts=corpus.texts, dates=corpus.dates,
                          source="<labeled>", rows=np.arange(len(corpus), dtype=np.int64))
    return method.find_pairs(sketch_corpus([batch], method, progress=False).sketch).canonical()


def _languages(path: Path) -> np.ndarray:
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as f:
        return np.array([json.loads(line).get("lang") or "" for line in f], dtype=object)


def compute_features(name: str, kind: str, cache: Path, max_pairs: int, seed: int,
                     fold_diacritics: bool = False, retsim: bool = False,
                     splits: tuple[str, ...] = ("validation", "test", LANGUAGE_SPLIT),
                     train_path: Path | None = None) -> None:
    """Pair features of set ``name``'s train pairs and ``splits``' candidates, cached as
    ``cache/NAME-KIND.npz``; ``train_path``: another train file than the set's own."""
    from neardup.eval import load_labeled
    from neardup.methods.pair_features import LEXICAL_FEATURES, RETSIM_FEATURES, pair_features
    from neardup.train.cross_encoder import training_pairs
    from neardup.train.data import load_training_corpus

    features = list(LEXICAL_FEATURES) + (list(RETSIM_FEATURES) if retsim else [])
    out: dict[str, np.ndarray] = {"features": np.array(features),
                                  "fold_diacritics": np.array(fold_diacritics)}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    train_path = train_path or ROOT / "data" / name / "train.jsonl.gz"
    if train_path.exists() and kind == "char5":
        corpus, negative_of = load_training_corpus(train_path)
        data = training_pairs(corpus, negative_of=negative_of, max_pairs=max_pairs,
                              candidates="minhash", candidate_params=CANDIDATES[kind],
                              seed=seed, threads=1)
        out["train_x"] = pair_features(corpus.texts, data["left"], data["right"],
                                       dates=corpus.dates, features=features, threads=1,
                                       fold_diacritics=fold_diacritics)
        out["train_y"] = data["label"].astype(np.int8)
    for split in splits:
        path = ROOT / "data" / name / f"{split}.jsonl.gz"
        if split == LANGUAGE_SPLIT and not path.exists():
            continue  # sets of one language have none
        corpus = load_labeled(path)
        pairs = candidates(corpus, kind)
        out[f"{split}_x"] = pair_features(corpus.texts, pairs.left, pairs.right,
                                          dates=corpus.dates, features=features, threads=1,
                                          fold_diacritics=fold_diacritics)
        out[f"{split}_left"], out[f"{split}_right"] = pairs.left, pairs.right
        out[f"{split}_clusters"] = np.asarray(corpus.clusters).astype(str)
        out[f"{split}_lang"] = _languages(path).astype(str)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(cache / f"{name}-{kind}.npz", **out)
    shown = "/".join(str(len(out[f"{s}_left"])) for s in splits if f"{s}_left" in out)
    print(f"{name} ({kind} candidates): {len(out.get('train_y', []))} train pairs, "
          f"{shown} {'/'.join(s for s in splits if f'{s}_left' in out)} candidates, "
          f"{time.process_time() - cpu0:.0f} CPU s, {time.perf_counter() - wall0:.0f} s",
          flush=True)


def validation_curve(data: dict, split: str, prob: np.ndarray, lang: str | None = None) -> dict:
    from sklearn.metrics import adjusted_rand_score

    from neardup.graph.cluster import connected_components
    from neardup.graph.edges import Pairs

    clusters = data[f"{split}_clusters"]
    left, right = data[f"{split}_left"], data[f"{split}_right"]
    n = len(clusters)
    keep_docs = None if lang is None else data[f"{split}_lang"] == lang
    out = {}
    for t in THRESHOLDS:
        keep = prob >= t
        labels = connected_components(Pairs(left[keep], right[keep], prob[keep]), n)
        if keep_docs is None:
            out[t] = float(adjusted_rand_score(clusters, labels))
        else:
            out[t] = float(adjusted_rand_score(clusters[keep_docs], labels[keep_docs]))
    return out


def validation_curves(data: dict, prob_of) -> dict[str, dict]:
    """A set's validation ARI curves: ``"validation"``, and one ``"<lang>"`` per language
    of its language-balanced validation split if it has one (ARI over that language's
    documents, the whole split clustered). ``prob_of(x)`` gives the pairs' probabilities.
    Every curve counts in the maximin rule, so a language that one validation split
    barely holds (multi-latin's has 8 Polish documents) still weighs in."""
    out = {"validation": validation_curve(data, "validation", prob_of(data["validation_x"]))}
    if f"{LANGUAGE_SPLIT}_x" in data:
        prob = prob_of(data[f"{LANGUAGE_SPLIT}_x"])
        for lang in sorted(set(data[f"{LANGUAGE_SPLIT}_lang"].tolist()) - {""}):
            out[lang] = validation_curve(data, LANGUAGE_SPLIT, prob, lang)
    return out


def language_scores(curves: dict[str, dict], t: float) -> dict[str, float]:
    """ARI at threshold ``t`` of each language curve of :func:`validation_curves`."""
    return {k: c[t] for k, c in curves.items() if k != "validation"}


def fit_model(xs: list[np.ndarray], ys: list[np.ndarray], columns: list[int], names: list[str],
         seed: int = 0):
    from threadpoolctl import threadpool_limits

    from neardup.train.verifier import drop_dates, make_classifier

    x = np.concatenate(xs)[:, columns].copy()
    y = np.concatenate(ys).astype(np.int64)
    drop_dates(x, names, DATE_DROPOUT, seed)  # as train_verifier
    model = make_classifier("hgb", seed=seed)
    with threadpool_limits(limits=1):
        model.fit(x, y)
    return model


def verifier_scores(model, x: np.ndarray) -> np.ndarray:
    from threadpoolctl import threadpool_limits

    if len(x) == 0:
        return np.zeros(0, np.float32)
    with threadpool_limits(limits=1):
        return model.predict_proba(x)[:, 1].astype(np.float32)


def maximin_threshold(curves: list[dict]) -> tuple[float, float]:
    best, score = THRESHOLDS[0], -np.inf
    for t in THRESHOLDS:
        worst = min(c[t] for c in curves)
        if worst > score:
            best, score = t, worst
    return best, float(score)


def _folded(data: dict) -> bool:
    """Whether a cached set's features were computed on texts without diacritics (caches
    written before the flag was stored were not)."""
    return bool(data.get("fold_diacritics", False))


def evaluate_all(cache: Path, ship: Path | None, results_path: Path,
                 sets: list[str] = SETS, shipped_cache: Path | None = None,
                 save_held_out: Path | None = None) -> None:
    import joblib

    from neardup.methods.pair_features import LEXICAL_FEATURES, RETSIM_FEATURES
    from neardup.models import resolve_model

    SETS = sets  # noqa: N806 (a subset for trial runs)
    data = {s: dict(np.load(cache / f"{s}-char5.npz", allow_pickle=False)) for s in SETS}
    fold = _folded(data[SETS[0]])
    if any(_folded(d) != fold for d in data.values()):
        raise SystemExit(f"{cache}: some sets' features were computed with --fold-diacritics, "
                         "others without; recompute them into one cache")
    all_names = [str(f) for f in data[SETS[0]]["features"]]  # the cache's columns
    if any([str(f) for f in d["features"]] != all_names for d in data.values()):
        raise SystemExit(f"{cache}: sets computed with different feature lists; recompute them")
    shipped_dir = resolve_model("verifier-news", "verifier")
    shipped_meta = json.loads((shipped_dir / "model.json").read_text())
    # The shipped model is scored on features computed as it computes them: with a cache
    # of the other diacritic setting, --shipped-cache must give one of its own.
    shipped_cache = shipped_cache or cache
    shipped_data = data if shipped_cache == cache else {
        s: dict(np.load(shipped_cache / f"{s}-char5.npz", allow_pickle=False)) for s in SETS}
    shipped_fold = bool(shipped_meta.get("fold_diacritics", False))
    if any(_folded(d) != shipped_fold for d in shipped_data.values()):
        raise SystemExit(f"{shipped_cache}: the shipped model computes its features "
                         f"{'with' if shipped_fold else 'without'} --fold-diacritics, this cache "
                         "the other way; give one computed as the model does with --shipped-cache")
    word = {s: dict(np.load(shipped_cache / f"{s}-word.npz", allow_pickle=False)) for s in SETS
            if (shipped_cache / f"{s}-word.npz").exists()}
    kinds = ([("word", word), ("char5", shipped_data)] if len(word) == len(SETS)
             else [("char5", shipped_data)])
    old = list(shipped_meta["features"])
    feature_sets = {"lexical (shipped features)": old,
                    "+ char 3/5 and no-space 5-grams": list(LEXICAL_FEATURES)}
    if set(RETSIM_FEATURES) <= set(all_names):
        feature_sets["shipped features + RETSim"] = old + list(RETSIM_FEATURES)
    languages = {s: sorted(set(data[s]["test_lang"].tolist()) - {""}) for s in SETS}
    results: dict = {"sets": SETS, "thresholds": THRESHOLDS, "fold_diacritics": fold,
                     "train_pairs": {s: int(len(d.get("train_y", []))) for s, d in data.items()}}

    def score(model, names, source=data) -> dict:
        out = {}
        for s in SETS:
            d = source[s]
            # Columns by name in this source's cache (a --shipped-cache may hold others).
            columns = [str(f) for f in d["features"]]
            cols = [columns.index(f) for f in names]
            row = {"validation_curves": validation_curves(d, lambda x: verifier_scores(model, x[:, cols]))}
            row["validation"] = row["validation_curves"]["validation"]
            prob = verifier_scores(model, d["test_x"][:, cols])
            row["test"] = validation_curve(d, "test", prob)
            if len(languages[s]) > 1:
                row["test_lang"] = {lang: validation_curve(d, "test", prob, lang) for lang in languages[s]}
            out[s] = row
        return out

    def every_validation(curves: dict) -> list[dict]:
        return [c for s in SETS for c in curves[s]["validation_curves"].values()]

    def language_validation_at(curves: dict, t: float) -> dict:
        return {s: language_scores(curves[s]["validation_curves"], t)
                for s in SETS if len(curves[s]["validation_curves"]) > 1}

    # Upper bound of re-ranking these candidates: keep exactly the true pairs among them.
    results["candidate_oracle_test_ari"] = {}
    for kind, source in (("word", word), ("char5", data)):
        row = {}
        for s in SETS:
            if s not in source:
                continue  # word candidates not computed for this set
            d = source[s]
            truth = d["test_clusters"][d["test_left"]] == d["test_clusters"][d["test_right"]]
            row[s] = validation_curve(d, "test", truth.astype(np.float32))[0.5]
        results["candidate_oracle_test_ari"][kind] = row
        print("oracle", kind, {s: round(v, 3) for s, v in row.items()}, flush=True)
    # The shipped model, at its default threshold (MinHash candidates).
    t0 = time.process_time()
    shipped = joblib.load(shipped_dir / shipped_meta["file"])
    default_t = float(shipped_meta["tuned_thresholds"]["minhash"])
    results["shipped"] = {}
    for kind, source in kinds:
        curves = score(shipped, old, source)
        mm_t, mm_worst = maximin_threshold(every_validation(curves))
        results["shipped"][kind] = {
            "default_threshold": default_t,
            "validation_at_default": {s: curves[s]["validation"][default_t] for s in SETS},
            "language_validation_at_default": language_validation_at(curves, default_t),
            "worst_validation_at_default": min(c[default_t] for c in every_validation(curves)),
            "worst_validation_at_maximin": mm_worst,
            "test_at_default": {s: curves[s]["test"][default_t] for s in SETS},
            "maximin_threshold_all_validation": mm_t,
            "test_at_maximin": {s: curves[s]["test"][mm_t] for s in SETS},
            "test_lang_at_default": {s: {lang: c[default_t] for lang, c in curves[s]["test_lang"].items()}
                                     for s in SETS if "test_lang" in curves[s]},
        }
        print("shipped", kind,
              {s: round(v, 3) for s, v in results["shipped"][kind]["test_at_default"].items()},
              flush=True)

    trainable = [s for s in SETS if "train_x" in data[s]]
    results["leave_one_set_out"] = {}
    for label, names in feature_sets.items():
        cols = [all_names.index(f) for f in names]
        rows = {}
        plans = [(s, s, [t for t in trainable if t != s]) for s in SETS]
        plans += [(f"{s} (strict: no multi-* in training)", s,
                   [t for t in trainable if t != s and t not in MULTI])
                  for s in AUGMENTERS if s in SETS]
        for key, held, train_sets in plans:
            model = fit_model([data[t]["train_x"] for t in train_sets],
                         [data[t]["train_y"] for t in train_sets], cols, names)
            val_curves = {s: validation_curves(data[s], lambda x: verifier_scores(model, x[:, cols]))
                          for s in SETS}
            t, worst = maximin_threshold([c for s in SETS if s != held for c in val_curves[s].values()])
            prob = verifier_scores(model, data[held]["test_x"][:, cols])
            test_curve = validation_curve(data[held], "test", prob)
            row = {"trained_on": train_sets, "threshold": t, "worst_other_validation_ari": worst,
                   "validation_ari": val_curves[held]["validation"][t],
                   "test_ari": test_curve[t]}
            if len(val_curves[held]) > 1:
                row["language_validation"] = language_scores(val_curves[held], t)
            if len(languages[held]) > 1:
                row["test_lang"] = {lang: validation_curve(data[held], "test", prob, lang)[t]
                                    for lang in languages[held]}
            rows[key] = row
            print(f"LOSO [{label}] {key}: threshold {t} test {test_curve[t]:.3f}", flush=True)
            if save_held_out is not None and names == old and key == held:
                _ship((model, names, t, worst, row), save_held_out / held, data, train_sets,
                      fold, scope=f"every set but {held}")
        results["leave_one_set_out"][label] = rows

    # Every train split: the model to ship, threshold by maximin over every validation split.
    results["all_sets"] = {}
    models = {}
    for label, names in feature_sets.items():
        cols = [all_names.index(f) for f in names]
        model = fit_model([data[t]["train_x"] for t in trainable],
                     [data[t]["train_y"] for t in trainable], cols, names)
        curves = score(model, names)
        t, worst = maximin_threshold(every_validation(curves))
        results["all_sets"][label] = {
            "threshold": t, "worst_validation_ari": worst,
            "validation_at_threshold": {s: curves[s]["validation"][t] for s in SETS},
            "language_validation_at_threshold": language_validation_at(curves, t),
            "test_at_threshold": {s: curves[s]["test"][t] for s in SETS},
            "test_lang": {s: {lang: c[t] for lang, c in curves[s]["test_lang"].items()}
                          for s in SETS if "test_lang" in curves[s]},
            "tuned_per_set": {s: {"threshold": max(THRESHOLDS, key=lambda x, s=s: (curves[s]["validation"][x], -x)),
                                  } for s in SETS},
        }
        for s in SETS:
            tt = results["all_sets"][label]["tuned_per_set"][s]["threshold"]
            results["all_sets"][label]["tuned_per_set"][s]["test_ari"] = curves[s]["test"][tt]
        models[label] = (model, names, t, worst, results["all_sets"][label])
        print(f"ALL [{label}] threshold {t}",
              {s: round(v, 3) for s, v in results["all_sets"][label]["test_at_threshold"].items()},
              flush=True)
    results["cpu_seconds"] = time.process_time() - t0
    # The shipping rule reads validation splits only: the better of the two all-sets models
    # replaces the shipped one only if its worst validation ARI (at its maximin threshold)
    # beats the shipped model's at the shipped default threshold, on the same splits.
    chosen = max(models, key=lambda label: models[label][3])  # first (fewer features) on ties
    incumbent = results["shipped"]["char5"]["worst_validation_at_default"]
    results["ship_decision"] = {
        "candidate": chosen, "candidate_worst_validation": models[chosen][3],
        "shipped_worst_validation_at_default": incumbent,
        "replace_shipped": models[chosen][3] > incumbent}
    results_path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {results_path}")
    print(markdown(results))
    print(f"best retrained [{chosen}]: worst validation ARI {models[chosen][3]:.4f}; "
          f"shipped model {incumbent:.4f} at its default threshold", flush=True)
    if ship is not None:
        if models[chosen][3] > incumbent:
            print(f"shipping [{chosen}]", flush=True)
            _ship(models[chosen], ship, data, trainable, fold)
        else:
            print(f"not shipped: the shipped model is at least as good on validation; {ship} left as it is",
                  flush=True)


def _ship(entry, out: Path, data: dict, trainable: list[str], fold: bool,
          scope: str = "every set") -> None:
    """Write a verifier model directory (``model.joblib``, ``model.json``) that
    ``--method rerank --param model=DIR`` loads; ``scope``: the sets whose validation
    splits chose its threshold."""
    import joblib
    import sklearn

    model, names, threshold, worst, summary = entry
    out.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, out / "model.joblib", compress=3)
    meta = {
        "kind": "verifier", "file": "model.joblib", "classifier": "hgb", "features": names,
        "threshold": threshold, "validation_ari": round(worst, 4),
        "validation_ari_is": f"worst validation ARI over {scope} (maximin threshold)",
        "candidates": "minhash", "candidate_params": None,
        "candidates_described": "rerank's default MinHash candidates: character 5-grams, "
                                "Jaccard 0.1 (neardup.methods.rerank.CANDIDATE_DEFAULTS)",
        "tuned_thresholds": {"minhash": threshold},
        "tuned_thresholds_source": f"maximin over the validation splits of {scope} in "
                                   "experiments/verifier_transfer/verifier_transfer.py (MinHash candidates)",
        "trained_on": {s: int(len(data[s]["train_y"])) for s in trainable},
        "fold_diacritics": fold,
        "sklearn": sklearn.__version__,
        "files": ["model.joblib", "model.json"],
    }
    (out / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {out}")


def markdown(results: dict) -> str:
    """The tables of docs/transfer.md's verifier section."""
    sets = results["sets"]
    f = lambda x: "" if x is None else f"{x:.3f}"  # noqa: E731
    head = "| | " + " | ".join(sets) + " |\n|---|" + "---:|" * len(sets) + "\n"
    rows = []
    for kind in results["candidate_oracle_test_ari"]:
        rows.append(f"| candidate oracle, {kind} MinHash | "
                    + " | ".join(f(results["candidate_oracle_test_ari"][kind].get(s))
                                 for s in sets) + " |")
    for kind in results["shipped"]:
        sh = results["shipped"][kind]
        rows.append(f"| shipped verifier-news, {kind} MinHash, threshold {sh['default_threshold']:g} | "
                    + " | ".join(f(sh["test_at_default"][s]) for s in sets) + " |")
        if "validation_at_default" in sh:
            rows.append(f"| ... the same on the validation splits (worst {sh['worst_validation_at_default']:.4f}) | "
                        + " | ".join(f(sh["validation_at_default"][s]) for s in sets) + " |")
    for label, table in results["leave_one_set_out"].items():
        rows.append(f"| leave-one-set-out, {label} | "
                    + " | ".join(f"{f(table[s]['test_ari'])} ({table[s]['threshold']:g})"
                                 for s in sets) + " |")
        strict = [k for k in table if "strict" in k]
        if strict:
            rows.append(f"| ... strict (no multi-* in training), {label} | "
                        + " | ".join(next((f"{f(table[k]['test_ari'])} ({table[k]['threshold']:g})"
                                           for k in strict if k.startswith(s + " ")), "")
                                     for s in sets) + " |")
    for label, a in results["all_sets"].items():
        rows.append(f"| all train splits, {label}, maximin threshold {a['threshold']:g} | "
                    + " | ".join(f(a["test_at_threshold"][s]) for s in sets) + " |")
        rows.append(f"| ... the same on the validation splits (worst {a['worst_validation_ari']:.4f}) | "
                    + " | ".join(f(a["validation_at_threshold"][s]) for s in sets) + " |")
    lang = []
    sh = results["shipped"].get("char5", {})
    for s, per in sh.get("test_lang_at_default", {}).items():
        lang.append(f"| shipped verifier-news | {s} | " + ", ".join(f"{k} {v:.3f}" for k, v in per.items()) + " |")
    for label, a in results["all_sets"].items():
        for s, per in a["test_lang"].items():
            lang.append(f"| {label} | {s} | " + ", ".join(f"{k} {v:.3f}" for k, v in per.items()) + " |")
    for label, table in results["leave_one_set_out"].items():
        for s, row in table.items():
            if "test_lang" in row and "strict" not in s:
                lang.append(f"| leave-one-set-out, {label} | {s} | "
                            + ", ".join(f"{k} {v:.3f}" for k, v in row["test_lang"].items()) + " |")
    lang_val = []
    per = lambda d: ", ".join(f"{k} {v:.3f}" for k, v in d.items())  # noqa: E731
    for s, row in sh.get("language_validation_at_default", {}).items():
        lang_val.append(f"| shipped verifier-news, threshold {sh['default_threshold']:g} | {s} | {per(row)} |")
    for label, a in results["all_sets"].items():
        for s, row in a.get("language_validation_at_threshold", {}).items():
            lang_val.append(f"| all train splits, {label}, threshold {a['threshold']:g} | {s} | {per(row)} |")
    for label, table in results["leave_one_set_out"].items():
        for s, row in table.items():
            if "language_validation" in row and "strict" not in s:
                lang_val.append(f"| leave-one-set-out, {label}, threshold {row['threshold']:g} | {s} | "
                                f"{per(row['language_validation'])} |")
    decision = results.get("ship_decision")
    if decision:
        rows.append(f"\nShipping rule (validation only): best retrained model [{decision['candidate']}] worst "
                    f"validation ARI {decision['candidate_worst_validation']:.4f} against the shipped model's "
                    f"{decision['shipped_worst_validation_at_default']:.4f} at its default threshold: "
                    + ("replaces it." if decision["replace_shipped"] else "the shipped model stays."))
    out = (head + "\n".join(rows) + "\n\nPer language (test ARI):\n\n| model | set | languages |\n"
           "|---|---|---|\n" + "\n".join(lang) + "\n")
    if lang_val:
        out += ("\nPer language, language-balanced validation splits (ARI; these count in the "
                "maximin and shipping rules):\n\n| model | set | languages |\n|---|---|---|\n"
                + "\n".join(lang_val) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["features", "evaluate", "table"])
    parser.add_argument("--sets", nargs="*", default=SETS)
    parser.add_argument("--candidates", nargs="*", default=["char5", "word"],
                        choices=list(CANDIDATES), help="candidate settings to compute")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/neardup-verifier-transfer"))
    parser.add_argument("--max-pairs", type=int, default=10000,
                        help="training pairs per set's train split (half MinHash candidates)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fold-diacritics", action="store_true",
                        help="features: compute the pair features on texts without diacritics "
                             "(pair_features(fold_diacritics=True)); use another --cache")
    parser.add_argument("--retsim", action="store_true",
                        help="features: also off-the-shelf RETSim's two similarities "
                             "(RETSIM_FEATURES); use another --cache")
    parser.add_argument("--ship", type=Path, help="write the all-sets model to this folder")
    parser.add_argument("--shipped-cache", type=Path,
                        help="evaluate: features computed as the shipped model computes them "
                             "(default --cache; needed when --cache has the other "
                             "--fold-diacritics setting)")
    parser.add_argument("--save-held-out", type=Path, metavar="DIR",
                        help="evaluate: also write each leave-one-set-out model with the "
                             "shipped features to DIR/<set> (for experiments/calibrate_labels/calibrate_labels.py "
                             "--model)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.step == "features":
        for kind in args.candidates:
            for name in args.sets:
                compute_features(name, kind, args.cache, args.max_pairs, args.seed,
                                 args.fold_diacritics, args.retsim)
    elif args.step == "table":
        print(markdown(json.loads(args.results.read_text())))
    else:
        evaluate_all(args.cache, args.ship, args.results, args.sets, args.shipped_cache,
                     args.save_held_out)


if __name__ == "__main__":
    main()
