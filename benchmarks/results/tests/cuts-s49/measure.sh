#!/bin/bash
# The per-file timings of docs/decisions/0044: each file in its own pytest process, serially,
# with one numba and one OpenMP thread as an xdist worker runs them; the seconds summed over
# every setup, call and teardown pytest reports (--durations=0 -vv).
#   usage (from the checkout):  benchmarks/results/tests/cuts-s49/measure.sh TAG FILE...
# "before" ran with the base's test files (480753a) in the same checkout (git stash of the
# branch's test changes; the numba cache warm in both), "after" at the branch.
cd "$(git rev-parse --show-toplevel)"
tag=$1; shift
for f in "$@"; do
  n=$(echo $f | tr '/' '_' | sed 's/\.py$//')
  out=benchmarks/results/tests/cuts-s49/$tag-$n.txt
  NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 /usr/bin/time -f "TIME wall=%e user=%U sys=%S" \
    .venv/bin/python -m pytest -q -p no:cacheprovider "$f" --durations=0 -vv > $out 2>&1
  sum=$(grep -E "^[0-9.]+s (call|setup|teardown) " $out | awk '{s+=$1} END {printf "%.1f", s}')
  echo "$tag $f summed=${sum}s $(grep -E 'passed' $out | tail -1) $(grep TIME $out)" \
    | tee -a benchmarks/results/tests/cuts-s49/summary-log.txt
done
