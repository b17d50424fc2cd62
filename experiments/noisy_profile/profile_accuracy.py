"""The noisy profile against the defaults on every labelled set's test split.

    python -m experiments.noisy_profile.profile_accuracy

1. **Choice (validation only).** For ngram and minhash on character 5-grams, the
   threshold with the best worst-case validation ARI over the ten sets (decision 0008's
   rule; :func:`experiments.method_comparison.compare_transfer.maximin`), read from the
   validation sweeps that compare_transfer.py records in
   experiments/method_comparison/results/transfer.json. The script stops if that choice
   is not the threshold :data:`neardup.profiles.NOISY` ships.
2. **Measure (test).** Each method at its defaults and with exactly the settings of
   ``profile="noisy"`` (:func:`neardup.profiles.profile_settings`), evaluated on each
   set's test split (connected components, as compare_transfer.py), and the same for the
   clean-text hint: whether :func:`neardup.text.noise_signal.looks_noisy` flags the
   first documents of the test split. ``auto`` (the default since decision 0031) is
   measured as it runs: :func:`neardup.profiles.choose_profile` on the test split's
   documents, then that profile's settings.

Writes experiments/noisy_profile/results/profile_accuracy.json.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from experiments.method_comparison.compare_transfer import RESULTS as TRANSFER
from experiments.method_comparison.compare_transfer import ROOT, SETS, maximin
from neardup.eval import evaluate, load_labeled
from neardup.profiles import NOISY, choose_profile, profile_settings
from neardup.text.noise_signal import BROKEN_TOKEN_SHARE, SAMPLE_DOCS, broken_token_share

OUT = Path(__file__).resolve().parent / "results" / "profile_accuracy.json"
#: compare_transfer.py's entry holding each profiled method's character 5-gram sweeps.
SWEEP_LABELS = {"ngram": "ngram char-5", "minhash": "minhash char-5"}
COMPONENTS = {"algorithm": "components"}


def chosen_thresholds() -> dict[str, dict]:
    """Per method: the maximin threshold over the validation sweeps, its worst ARI."""
    results = json.loads(TRANSFER.read_text())
    chosen = {}
    for method, label in SWEEP_LABELS.items():
        cells = [results[f"{label}|{name}"] for name, _ in SETS]
        key, worst = maximin(cells)
        threshold = json.loads(key)["threshold"]
        if threshold != NOISY[method]["threshold"]:
            raise SystemExit(f"{method}: validation maximin picks {threshold}, the noisy "
                             f"profile ships {NOISY[method]['threshold']}; update neardup/profiles.py")
        chosen[method] = {"threshold": threshold, "worst_validation_ari": worst}
    return chosen


def main() -> None:
    chosen = chosen_thresholds()
    rows = []
    for name, _ in SETS:
        test = load_labeled([ROOT / "data" / name / "test.jsonl.gz"])
        share = broken_token_share(test.texts[:SAMPLE_DOCS])
        for method in NOISY:
            for setting in ("default", "noisy", "auto"):
                start = time.process_time()
                chosen = (choose_profile("auto", method, test.texts).name if setting == "auto"
                          else "clean" if setting == "default" else setting)
                params = profile_settings(chosen, method)
                report = evaluate(test, method, params=params, cluster=COMPONENTS)
                rows.append({"set": name, "method": method, "setting": setting,
                             "profile": chosen,
                             "ari": report["ari"], "precision": report["precision"],
                             "recall": report["recall"],
                             "cpu_seconds": round(time.process_time() - start, 2),
                             "broken_token_share": share})
                print(json.dumps(rows[-1]), flush=True)
    OUT.write_text(json.dumps({"chosen_on_validation": chosen, "hint_threshold": BROKEN_TOKEN_SHARE,
                               "rows": rows}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
