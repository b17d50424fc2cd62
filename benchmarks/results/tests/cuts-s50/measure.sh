#!/bin/bash
# The per-file timings of docs/decisions/0046: each file in its own pytest process, serially,
# with one numba and one OpenMP thread as an xdist worker runs them; the seconds summed over
# every setup, call and teardown pytest reports (--durations=0 -vv).
#   usage (from the checkout):  benchmarks/results/tests/cuts-s50/measure.sh TAG FILE...
# "before" ran at the base (0887151) in the branch's worktree before its file was edited
# (numba cache warm: copied from the main checkout with the sources' times), "after" at the branch.
cd "$(git rev-parse --show-toplevel)"
py=${PYTHON:-/work/main/.venv/bin/python}
tag=$1; shift
for f in "$@"; do
  n=$(echo $f | tr '/' '_' | sed 's/\.py$//')
  out=benchmarks/results/tests/cuts-s50/$tag-$n.txt
  NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PYTHONPATH=. /usr/bin/time -f "TIME wall=%e user=%U sys=%S" \
    $py -m pytest -q -p no:cacheprovider -p no:randomly "$f" --durations=0 -vv > $out 2>&1
  sum=$(grep -E "^[0-9.]+s (call|setup|teardown) " $out | awk '{s+=$1} END {printf "%.1f", s}')
  echo "$tag $f summed=${sum}s $(grep -E 'passed|failed' $out | tail -1) $(grep TIME $out) load=$(cut -d' ' -f1-3 /proc/loadavg)" \
    | tee -a benchmarks/results/tests/cuts-s50/summary-log.txt
done
