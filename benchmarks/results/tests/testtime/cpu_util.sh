#!/bin/sh
# usage: cpu_util.sh CMD... ; prints wall, busy CPU seconds, utilization over the machine's cores
read -r _ u n s i w irq sirq st _ < /proc/stat
t0=$(date +%s.%N)
"$@"
rc=$?
read -r _ u2 n2 s2 i2 w2 irq2 sirq2 st2 _ < /proc/stat
t1=$(date +%s.%N)
python3 -c "
busy=(($u2+$n2+$s2+$irq2+$sirq2)-($u+$n+$s+$irq+$sirq))/100; idle=(($i2+$w2)-($i+$w))/100; wall=$t1-$t0
print(f'wall {wall:.1f} s, busy {busy:.1f} CPU s, idle {idle:.1f} CPU s, utilization {busy/(busy+idle):.3f}')"
exit $rc
