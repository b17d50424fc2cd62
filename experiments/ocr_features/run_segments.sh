#!/bin/sh
# The segment-coverage round of experiments/ocr_features (validation splits only; no test
# split is opened), from the worktree root. Needs run_all.sh's feature cache
# (/tmp/ocrfeat-cache) and baseline refits ($MODELS/baseline-s*); the baselines' rerank
# numbers are run_all.sh's (results/*_ocr_features*.json).
set -e
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1
PY=${PY:-python}
MODELS=${MODELS:-/tmp/ocrfeat-models}

for S in 4 6; do
  if [ $S = 4 ]; then W=""; CACHE=/tmp/segfeat-cache; LABEL=segments; SUFFIX=segment_features
  else W="-m experiments.ocr_features.with_segments $S"; CACHE=/tmp/segfeat6-cache; LABEL=segments6; SUFFIX=segment6_features; fi
  run() { if [ -n "$W" ]; then $PY -m experiments.ocr_features.with_segments $S "$@"; else $PY -m "$@"; fi; }
  # 1. seg_* features of the cached pairs (train pairs, validation candidates), checked against the cache
  run experiments.ocr_features.train_segment_features features --cache $CACHE
  # 2. fits, seeds 0-4                                          # results/fit-$LABEL-s<seed>.json
  for s in 0 1 2 3 4; do run experiments.ocr_features.train_segment_features fit --cache $CACHE --label $LABEL --seed $s --out $MODELS; done
  # 3. rerank end to end, every validation split and the language-balanced ones
  V=""; for s in 0 1 2 3 4; do V="$V --variant $LABEL-s$s:model=$MODELS/$LABEL-s$s"; done
  run experiments.reuters_templates.reuters_templates --sets validation $V --suffix $SUFFIX
  run experiments.reuters_templates.reuters_templates --sets language_validation $V --suffix $SUFFIX
  mv experiments/reuters_templates/results/reuters_templates_sets_*validation_$SUFFIX.json experiments/ocr_features/results/
  # 4. multi-ocr validation per language, and rerank's verifier misses per model
  set --
  for s in 0 1 2 3 4; do set -- "$@" --variant "rerank $LABEL-s$s" rerank "{\"model\": \"$MODELS/$LABEL-s$s\"}"; done
  run experiments.ocr_languages.per_language --split validation --entries --tag=-$(echo $SUFFIX | tr _ -) "$@"
  for s in 0 1 2 3 4; do
    run experiments.ocr_languages.per_language --split validation --diagnose --tag=-ocr-features-$LABEL-s$s \
        --variant x rerank "{\"model\": \"$MODELS/$LABEL-s$s\"}" > /dev/null
  done
  mv experiments/ocr_languages/results/validation-$(echo $SUFFIX | tr _ -).json \
     experiments/ocr_languages/results/rerank-diagnosis-validation-ocr-features-$LABEL-s*.json experiments/ocr_features/results/
done

# 5. cost, the pair-level diagnosis, the tables
$PY -m experiments.ocr_features.segment_cost                  # results/segment_cost.json
$PY -m experiments.ocr_features.segment_diagnosis             # results/segment_diagnosis.json
$PY -m experiments.ocr_features.segment_tables
