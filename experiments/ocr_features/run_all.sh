#!/bin/sh
# Every step of experiments/ocr_features, from the worktree root, in order (validation
# splits only; no test split is opened). Each rerank/per_language harness writes into its
# own experiment's results/ folder; the files are moved here.
set -e
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1
PY=${PY:-python}
MODELS=${MODELS:-/tmp/ocrfeat-models}

# 1. diagnosis of the shipped verifier's misses on multi-ocr validation
$PY -m experiments.ocr_features.diagnose --examples 8                      # results/diagnose-validation.json

# 2. pair features (train pairs + validation candidates; every LEXICAL_FEATURE), plain and diacritic-folded
$PY -m experiments.ocr_features.train_ocr_features features --cache /tmp/ocrfeat-cache
$PY -m experiments.ocr_features.train_ocr_features features --fold-diacritics --fold-cache /tmp/ocrfeat-cache-fold

# 3. fits: baseline, ocr, fold-nospace, seeds 0-4                          # results/fit-s<seed>.json
for s in 0 1 2 3 4; do $PY -m experiments.ocr_features.train_ocr_features fit --seed $s --out $MODELS; done

# 4. rerank end to end on every validation split (and the language-balanced ones)
V=""; for s in 0 1 2; do for v in baseline ocr fold-nospace; do V="$V --variant $v-s$s:model=$MODELS/$v-s$s"; done; done
$PY -m experiments.reuters_templates.reuters_templates --sets validation $V --suffix ocr_features
V=""; for s in 3 4; do for v in baseline ocr fold-nospace; do V="$V --variant $v-s$s:model=$MODELS/$v-s$s"; done; done
$PY -m experiments.reuters_templates.reuters_templates --sets validation $V --suffix ocr_features_s34
V=""; for s in 0 1 2 3 4; do for v in baseline ocr fold-nospace; do V="$V --variant $v-s$s:model=$MODELS/$v-s$s"; done; done
$PY -m experiments.reuters_templates.reuters_templates --sets language_validation $V --suffix ocr_features
mv experiments/reuters_templates/results/reuters_templates_sets_*validation_ocr_features*.json experiments/ocr_features/results/

# 5. multi-ocr validation per language (per_language), and rerank's verifier misses per model
set --
for s in 0 1 2 3 4; do for v in baseline ocr fold-nospace; do
  set -- "$@" --variant "rerank $v-s$s" rerank "{\"model\": \"$MODELS/$v-s$s\"}"
done; done
$PY -m experiments.ocr_languages.per_language --split validation --entries --tag=-ocr-features "$@"
for s in 0 1 2 3 4; do for v in baseline ocr fold-nospace; do
  $PY -m experiments.ocr_languages.per_language --split validation --diagnose --tag=-ocr-features-$v-s$s \
      --variant x rerank "{\"model\": \"$MODELS/$v-s$s\"}" > /dev/null
done; done
mv experiments/ocr_languages/results/validation-ocr-features.json experiments/ocr_languages/results/rerank-diagnosis-validation-ocr-features-*.json experiments/ocr_features/results/

# 6. CPU cost of the features, and the tables
$PY -m experiments.ocr_features.feature_cost                              # results/feature_cost.json
$PY -m experiments.ocr_features.tables
