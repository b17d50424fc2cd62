"""Every raw result file a docs table reads, by name, and the command that rewrites it.

This is the only place that names them (paths relative to the repository root): when result
files move, remap them here. A table names each file it reads by its key in ``SOURCES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Source:
    """A raw result file and the command that rewrites it (run from the repository root)."""

    path: str
    command: str


_MAKE_TEST_CMD = "python scripts/time_make_test.py [--beside-shared] [--target test-fast]"
_SPANS_CMD = ("python benchmarks/peers_spans.py --corpus /tmp/neardup-scale/{n} --results "
              "benchmarks/results/spans/{n} --scratch /tmp/spans-bench-{n}{extra}")
_DECON_CMD = "python benchmarks/peers_decontaminate.py --train-docs {docs} --eval-items 10000 --planted 400{extra}"
_TEMPLATES_MIXING_CMD = "python -m experiments.reuters_templates.mixing_clusters OUT"
# The students of experiments/student_biencoder (not shipped; its README rebuilds them into STUDENTS).
_STUDENTS = "".join(f" --model STUDENTS/{name}" for name in ("student-2L-64", "student-3L-64", "student-3L-128"))
_SPINE_CMD = ("python -m benchmarks one before_after --before EXPORT_OF_5cf0f87 --input GLOB --method {m} "
              "--warmup /tmp/neardup-scale/5k/part-00000.parquet{extra}")

SOURCES: dict[str, Source] = {
    "transfer": Source(
        "experiments/method_comparison/results/transfer.json",
        "python experiments/method_comparison/compare_transfer.py --neural  (lexical only without --neural)",
    ),
    "comparison": Source("docs/method-comparison.json", "python experiments/method_comparison/compare_methods.py"),
    "comparison-window48h": Source(
        "docs/method-comparison-window48h.json",
        "python experiments/method_comparison/compare_methods.py --time-window 48",
    ),
    "scale-100k": Source(
        "benchmarks/results/archive/scale-100k.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods minhash exact simhash --peers rensa datasketch --name scale-100k",
    ),
    "scale-100k-datatrove": Source(
        "benchmarks/results/archive/scale-100k-datatrove.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods minhash --datatrove-python DT_VENV/bin/python --name scale-100k-datatrove",
    ),
    "scale-100k-ngram": Source(
        "benchmarks/results/archive/scale-100k-ngram-prefix.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods ngram --name scale-100k-ngram-prefix",
    ),
    "scale-100k-stats": Source(
        "benchmarks/results/archive/scale-100k-stats-keyed.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods wminhash sanderson --name scale-100k-stats-keyed",
    ),
    "scale-100k-rerank": Source(
        "benchmarks/results/rerank/scale-100k-rerank.json",
        "python -m benchmarks one scale --corpus /tmp/neardup-scale/100k --methods rerank --extra --cluster auto (its default clustering, Leiden 0.4; copied from benchmarks/results/adhoc/scale.json)",
    ),
    "scale-1M": Source(
        "benchmarks/results/archive/scale-1M-minhash-pread.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods minhash --name scale-1M-minhash-pread",
    ),
    "scale-1M-exact-simhash": Source(
        "benchmarks/results/archive/scale-1M-v2.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods minhash exact simhash --name scale-1M-v2",
    ),
    "scale-1M-ngram": Source(
        "benchmarks/results/archive/scale-1M-ngram.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods ngram --name scale-1M-ngram",
    ),
    "scale-1M-wminhash": Source(
        "benchmarks/results/archive/scale-1M-wminhash-keyed.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods wminhash --name scale-1M-wminhash-keyed",
    ),
    "scale-1M-rerank": Source(
        "benchmarks/results/archive/scale-1M-rerank-final.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods rerank --name scale-1M-rerank-final",
    ),
    "scale-10M": Source(
        "benchmarks/results/archive/scale-10M-pread.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/10M --methods minhash --name scale-10M-pread",
    ),
    "scale-10M-exact-simhash": Source(
        "benchmarks/results/archive/scale-10M-exact-simhash.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/10M --methods exact simhash --name scale-10M-exact-simhash",
    ),
    "neural-20k": Source(
        "benchmarks/results/archive/neural_dedup.json",
        "python benchmarks/neural_dedup.py --docs 20000 --only minhash retsim-news biencoder-news rerank-verifier",
    ),
    "minhash-signatures": Source(
        "benchmarks/results/archive/minhash_signatures.json",
        "cd bench && python bench_minhash_signatures.py --docs 5000 --repeat 3",
    ),
    "embedders": Source(
        "benchmarks/results/archive/embedders-shipped.json",
        "python benchmarks/embedders.py --docs 2000 --encoders retsim biencoder --model biencoder-news --name embedders-shipped",
    ),
    "ray-1M": Source(
        "benchmarks/results/archive/ray-1M-final-quiet.json",
        "python benchmarks/ray_engine.py --corpus /tmp/neardup-scale/1M --configs local ray1 ray2 --name ray-1M-final-quiet",
    ),
    "ray-1M-2": Source(
        "benchmarks/results/archive/ray-1M-final-quiet2.json",
        "python benchmarks/ray_engine.py --corpus /tmp/neardup-scale/1M --configs local ray1 ray2 --name ray-1M-final-quiet2",
    ),
    "index-10M": Source(
        "benchmarks/results/archive/index_10M_bulk_shipped.json",
        "python benchmarks/index.py --corpus /tmp/neardup-scale/10M --docs 10000000 --add-docs 100000 --bulk --out benchmarks/results/archive/index_10M_bulk_shipped.json",
    ),
    "report-1M": Source("benchmarks/results/archive/report_1m.json", "cd bench && python bench_report.py --docs 1000000"),
    "calibrate-labels": Source(
        "experiments/calibrate_labels/results/calibrate_labels.json",
        "python experiments/calibrate_labels/calibrate_labels.py --methods minhash ngram",
    ),
    "calibrate-labels-adversarial": Source(
        "experiments/calibrate_labels/results/calibrate_labels_adversarial.json",
        "python experiments/calibrate_labels/calibrate_labels.py --methods minhash ngram --sets reuters-adversarial --out experiments/calibrate_labels/results/calibrate_labels_adversarial.json",
    ),
    "noisy-profile": Source(
        "experiments/noisy_profile/results/profile_accuracy.json",
        "python -m experiments.noisy_profile.profile_accuracy",
    ),
    "noise-signal-test": Source(
        "experiments/noisy_profile/results/signal-test.json",
        "python -m experiments.noisy_profile.signal --split test",
    ),
    "noisy-profile-cost-100k": Source(
        "experiments/noisy_profile/results/cost-100k.json",
        "python -m experiments.noisy_profile.cost --corpus /tmp/neardup-scale/100k --methods minhash",
    ),
    "noisy-profile-cost-20k": Source(
        "experiments/noisy_profile/results/cost-20k.json",
        "python -m experiments.noisy_profile.cost --corpus /tmp/neardup-scale/20k",
    ),
    "demo-accuracy": Source(
        "experiments/demo_accuracy/results/demo_accuracy.json",
        "python -m experiments.demo_accuracy.run",
    ),
    # --- the test suite, timed in fresh clones (scripts/time_make_test.py) ---
    **{name: Source(f"benchmarks/results/tests/{file}", _MAKE_TEST_CMD) for name, file in (
        ("make-test-1", "make-test-466b326.txt"), ("make-test-2", "make-test-60c2829.txt"),
        ("make-test-3", "make-test-cd69171.txt"), ("make-test-fast-1", "make-test-fast-3028850.txt"),
        ("make-test-fast-2", "make-test-fast-620d0a1.txt"), ("make-test-4", "make-test-95aa10b.txt"),
        ("make-test-5", "make-test-a4ea8eb.txt"), ("make-test-fast-3", "make-test-fast-8600e7b.txt"),
        ("make-test-6", "make-test-6f3ad3f.txt"), ("make-test-7", "make-test-aa994bd.txt"),
        ("make-test-8", "make-test-0eaa130.txt"), ("make-test-9", "make-test-da2e8ef.txt"), ("make-test-fast-4", "make-test-fast-fe2d973.txt"), ("make-test-10", "make-test-4598186.txt"), ("make-test-11", "make-test-14b279e.txt"), ("make-test-12", "make-test-6f457be.txt"), ("make-test-13", "make-test-365e215.txt"), ("make-test-14", "make-test-c36309f.txt"), ("make-test-15", "make-test-8e757f1.txt"), ("make-test-16", "make-test-cbead4d.txt"), ("make-test-fast-5", "make-test-fast-cbead4d.txt"), ("make-test-fast-6", "make-test-fast-488a967.txt"), ("make-test-fast-7", "make-test-fast-488a967-2.txt"), ("make-test-17", "make-test-d940b32.txt"), ("make-test-18", "make-test-e390dc9.txt"), ("make-test-fast-8", "make-test-fast-e390dc9.txt"), ("make-test-19", "make-test-90c2a48.txt"), ("make-test-fast-9", "make-test-fast-412bfa9.txt"))},
    # --- rerank's cost per document (docs/rerank-cost.md) ---
    # A rerank_cost.py compare file: results -> data -> cpu_s -> label -> [seconds].
    "rerank-before-after": Source(
        "benchmarks/results/rerank/s50-compare.json",
        "python benchmarks/rerank_cost.py compare --warmup --repeats 2 --data reuters --data scale:/tmp/neardup-scale/20k --env-variant 'before:PYTHONPATH=CHECKOUT_OF_ca3e8e1' --name s50-compare",
    ),
    "rerank-compare-1M": Source(
        "benchmarks/results/rerank/s50-compare-1M.json",
        "python benchmarks/rerank_cost.py compare --data scale:/tmp/neardup-scale/1M --name s50-compare-1M  (at 07952ae)",
    ),
    "rerank-compare": Source(
        "benchmarks/results/rerank/s52-compare.json",
        "python benchmarks/rerank_cost.py compare --warmup --repeats 2 --data reuters --data scale:/tmp/neardup-scale/20k --env-variant 'before:PYTHONPATH=CHECKOUT_OF_b64a08d' --clusters-dir DIR --name s52-compare",
    ),
    "rerank-by-size": Source(
        "benchmarks/results/rerank/s55-compare-sizes.json",
        "python benchmarks/rerank_cost.py compare --warmup --repeats 2 --data scale:/tmp/neardup-scale/2k --data scale:/tmp/neardup-scale/5k --data scale:/tmp/neardup-scale/10k --data scale:/tmp/neardup-scale/20k --name s55-compare-sizes",
    ),
    # A rerank_cost.py profile file: results -> data -> sections_cpu_s.
    "rerank-profile": Source(
        "benchmarks/results/rerank/s52-profile-reuters.json",
        "python benchmarks/rerank_cost.py profile --data reuters --name s52-profile-reuters",
    ),
    "rerank-every-candidate": Source(
        "benchmarks/results/rerank/final-compare.json",
        "python benchmarks/rerank_cost.py compare --warmup --data reuters --data scale:/tmp/neardup-scale/20k --data scale:/tmp/neardup-scale/100k --rerank-variant 'all:low_partners=null' --name final-compare",
    ),
    "rerank-every-candidate-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_validation_screen.json",
        "python -m experiments.reuters_templates.reuters_templates --sets validation --variant 'default:' --variant 'all:low_partners=null' --suffix screen",
    ),
    "rerank-every-candidate-language-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_language_validation_screen.json",
        "python -m experiments.reuters_templates.reuters_templates --sets language_validation --variant 'default:' --variant 'all:low_partners=null' --suffix screen",
    ),
    "rerank-accept-20k": Source(
        "benchmarks/results/rerank/accept-estimate-0.8-scale20k.json",
        "python benchmarks/rerank_cost.py compare --data scale:/tmp/neardup-scale/20k --rerank-param accept_estimate=0.8 --name accept-estimate-0.8-scale20k",
    ),
    "rerank-accept-100k": Source(
        "benchmarks/results/rerank/accept-estimate-0.8-scale100k.json",
        "python benchmarks/rerank_cost.py compare --data scale:/tmp/neardup-scale/100k --rerank-param accept_estimate=0.8 --name accept-estimate-0.8-scale100k",
    ),
    "rerank-accept-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_validation_accept.json",
        "python -m experiments.reuters_templates.reuters_templates --sets validation --variant 'default:' --variant 'accept0.8:accept_estimate=0.8' --suffix accept",
    ),
    "rerank-accept-language-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_language_validation_accept.json",
        "python -m experiments.reuters_templates.reuters_templates --sets language_validation --variant 'default:' --variant 'accept0.8:accept_estimate=0.8' --suffix accept",
    ),
    "rerank-fast-reuters": Source(
        "benchmarks/results/rerank/screen-compare-reuters-warm.json",
        "python benchmarks/rerank_cost.py compare --warmup --data reuters --rerank-variant 'all:low_partners=null' --rerank-variant 'fast:model=verifier-fast' --rerank-variant 'fast-all:model=verifier-fast;low_partners=null' --clusters-dir DIR --name screen-compare-reuters-warm",
    ),
    "rerank-fast-scale": Source(
        "benchmarks/results/rerank/screen-compare.json",
        "python benchmarks/rerank_cost.py compare --data reuters --data scale:/tmp/neardup-scale/20k --rerank-variant 'all:low_partners=null' --rerank-variant 'fast:model=verifier-fast' --rerank-variant 'fast-all:model=verifier-fast;low_partners=null' --clusters-dir DIR --name screen-compare",
    ),
    "rerank-verifier-ablation": Source(
        "experiments/verifier_cost/results/ablation.json",
        "python -m experiments.verifier_cost.ablate --save-models /tmp/vc-models --name ablation",
    ),
    "rerank-verifier-fast-ship": Source(
        "experiments/verifier_cost/results/ship.json",
        "python -m experiments.verifier_cost.ablate --variants 'no align_partial, align_ratio@1000' --seed 0 --ship neardup/models/verifier-fast --name ship",
    ),
    # A directory of `neardup eval --json` outputs named SET-THRESHOLD.json.
    "rerank-candidate-threshold": Source(
        "benchmarks/results/rerank/candidate-threshold-eval",
        "sh benchmarks/results/rerank/candidate-threshold-eval/command.sh (neardup eval data/SET/validation.jsonl.gz --method rerank --date-field date --param 'candidate_params={\"threshold\": T}' --json)",
    ),
    "rerank-components-100k": Source(
        "benchmarks/results/rerank/scale-100k-rerank-components.json",
        "python -m benchmarks one scale --corpus /tmp/neardup-scale/100k --methods rerank (at commit 41fcaca, when the scale benchmark clustered rerank by connected components: the row's command ends --cluster components)",
    ),
    # --- spans, decontamination, storage, neural speed, static embeddings, real OCR and the
    # benchmark log ---
    "spans-100k": Source("benchmarks/results/spans/100k/results.json", _SPANS_CMD.format(n="100k", extra="")),
    "spans-100k-spans": Source("benchmarks/results/spans/100k/neardup_spans_report.json",
                               _SPANS_CMD.format(n="100k", extra="")),
    "spans-100k-substrings": Source("benchmarks/results/spans/100k/neardup_substrings_report.json",
                                    _SPANS_CMD.format(n="100k", extra="")),
    "spans-100k-substrings-chunked": Source("benchmarks/results/spans/100k/neardup_substrings_chunked_report.json",
                                            _SPANS_CMD.format(n="100k", extra="")),
    "spans-1M": Source("benchmarks/results/spans/1M/results.json",
                       _SPANS_CMD.format(n="1M", extra=" --skip-peers --skip-chunked")),
    "spans-1M-spans": Source("benchmarks/results/spans/1M/neardup_spans_report.json",
                             _SPANS_CMD.format(n="1M", extra=" --skip-peers --skip-chunked")),
    "spans-1M-substrings": Source("benchmarks/results/spans/1M/neardup_substrings_report.json",
                                  _SPANS_CMD.format(n="1M", extra=" --skip-peers --skip-chunked")),
    "spans-engines": Source("benchmarks/results/spans/engines-reuters-workers-read.txt",
                            "the loop in the file's header: neardup spans and substrings with --engine local "
                            "and --engine ray under /usr/bin/time"),
    "decontaminate-100k": Source("benchmarks/results/decontaminate/100000-10000.json",
                                 _DECON_CMD.format(docs=100000, extra="")),
    "decontaminate-1M": Source("benchmarks/results/decontaminate/1000000-10000-neardup-reader-fix.json",
                               _DECON_CMD.format(docs=1000000, extra=" --tools neardup")),
    "decontaminate-1M-report": Source("benchmarks/results/decontaminate/1000000-10000-neardup-reader-fix-report.json",
                                      _DECON_CMD.format(docs=1000000, extra=" --tools neardup")),
    "decontaminate-1M-rss": Source("benchmarks/results/decontaminate/1000000-10000-neardup-reader-fix-rss.txt",
                                   "ps sampling the run's neardup process once a minute (the file's header)"),
    "decontaminate-trace-before": Source(
        "benchmarks/results/decontaminate/trace-200000-before.json",
        "python -m benchmarks.decontaminate_trace --docs 200000 --every 10 --label before (at 5733573)"),
    "decontaminate-trace-after": Source(
        "benchmarks/results/decontaminate/trace-200000-after.json",
        "python -m benchmarks.decontaminate_trace --docs 200000 --every 10 --label after"),
    "storage": Source("benchmarks/results/storage/storage.json", "HF_HUB_OFFLINE=1 python benchmarks/bench_storage.py"),
    **{f"parquet-out-{size}": Source(
        f"benchmarks/results/io/parquet-out-{size}.json",
        "python -m benchmarks one before_after --before CHECKOUT_OF_2377e15 --input "
        f"'/tmp/neardup-scale/{size}/part-*.parquet' --warmup '/tmp/neardup-scale/2k/*.parquet' "
        "--repeats 2 --extra --out OUT.parquet") for size in ("100k", "1M")},
    "neural-retsim": Source("benchmarks/results/neural/neural_speed_retsim.json",
                            "python benchmarks/neural_speed.py retsim --docs 200 --repeat 2"),
    "neural-biencoder": Source("benchmarks/results/neural/neural_speed_biencoder.json",
                               "python benchmarks/neural_speed.py biencoder --docs 150 --repeat 1 --tokens 32,64,128"
                               + _STUDENTS),
    "neural-biencoder-accuracy": Source(
        "benchmarks/results/neural/neural_speed_biencoder-accuracy.json",
        "python benchmarks/neural_speed.py biencoder-accuracy --tokens 32,64,128 --sets reuters-news,indep-noisocr"
        + _STUDENTS),
    "neural-static": Source("benchmarks/results/neural/neural_speed_static.json",
                            "python benchmarks/neural_speed.py static --docs 3000 --repeat 2"),
    "static-peers": Source("benchmarks/results/neural/peers_static_peers.json",
                           "python benchmarks/peers_static.py peers --sets indep-noisocr,reuters-news"),
    "static-rerank": Source("benchmarks/results/neural/peers_static_rerank.json",
                            "python benchmarks/peers_static.py rerank --sets indep-noisocr"),
    "static-rerank-candidates": Source(
        "benchmarks/results/neural/peers_static_rerank_candidates.json",
        "python benchmarks/peers_static.py rerank --candidates-only --sets reuters-news,indep-nlpaug,multi-latin"),
    "templates": Source("experiments/reuters_templates/results/reuters_templates.json",
                        "python -m experiments.reuters_templates.reuters_templates"),
    "templates-8fc84d2c": Source(
        "experiments/reuters_templates/results/reuters_templates_8fc84d2c.json",
        "python -m experiments.reuters_templates.reuters_templates at 8fc84d2c (the file as that commit "
        "holds it: git show 8fc84d2c:experiments/reuters_templates/results/reuters_templates.json)"),
    "templates-40b919e": Source("experiments/reuters_templates/results/mixing_clusters_40b919e.json",
                                _TEMPLATES_MIXING_CMD + " at 40b919e"),
    "templates-name-test": Source("experiments/reuters_templates/results/mixing_clusters_name_test.json",
                                  _TEMPLATES_MIXING_CMD + " at 390fe46"),
    "templates-opening-names": Source("experiments/reuters_templates/results/mixing_clusters_opening_names.json",
                                      _TEMPLATES_MIXING_CMD),
    "spine-minhash-10M": Source("benchmarks/results/spine/minhash-10M.json",
                                _SPINE_CMD.format(m="minhash", extra="")),
    "spine-rerank-20k": Source("benchmarks/results/spine/rerank-20k-guard-off.json",
                               _SPINE_CMD.format(m="rerank", extra=" --extra --param template_guard=false")),
    "spine-rerank-100k": Source("benchmarks/results/spine/rerank-100k-guard-off.json",
                                _SPINE_CMD.format(m="rerank", extra=" --extra --param template_guard=false")),
    "spine-code-lines": Source("benchmarks/results/spine/code-lines.json",
                               "python scripts/code_lines.py 5cf0f87 HEAD --out benchmarks/results/spine/code-lines.json"),
    "ocr-validation": Source("experiments/ocr_languages/results/validation.json",
                             "python -m experiments.ocr_languages.per_language --split validation"),
    "ocr-test": Source("experiments/ocr_languages/results/test.json",
                       "python -m experiments.ocr_languages.per_language --split test --entries rerank minhash "
                       "ngram \"minhash --profile noisy\" \"ngram --profile noisy\" retsim static"),
    "ocr-es-bg-validation": Source("experiments/ocr_languages/results/validation-es-bg.json",
                                   "python -m experiments.ocr_languages.per_language --set data/multi-ocr-es-bg "
                                   "--split validation --tag=-es-bg --entries rerank minhash ngram "
                                   "\"minhash --profile noisy\" \"ngram --profile noisy\" retsim static"),
    "ocr-es-bg-test": Source("experiments/ocr_languages/results/test-es-bg.json",
                             "python -m experiments.ocr_languages.per_language --set data/multi-ocr-es-bg "
                             "--split test --tag=-es-bg --entries rerank minhash ngram "
                             "\"minhash --profile noisy\" \"ngram --profile noisy\" retsim static"),
}
