#!/bin/bash
# usage: cpu_of.sh CMD... ; prints wall and machine-wide busy CPU seconds
read -r _ u n s i w q sq st _ < /proc/stat; b0=$((u+n+s+q+sq)); t0=$(date +%s.%N)
"$@"; rc=$?
read -r _ u n s i w q sq st _ < /proc/stat; b1=$((u+n+s+q+sq)); t1=$(date +%s.%N)
echo "wall $(echo "$t1-$t0"|bc) s; machine busy CPU $(echo "($b1-$b0)/100"|bc) s; rc $rc" >&2
