#!/bin/bash
# ARI of rerank at defaults on every validation split, with accept_estimate none/0.6/0.7/0.8
cd /work/main
out=/tmp/s48/ae
mkdir -p $out
for set in reuters-news reuters-adversarial indep-nlpaug indep-augly indep-noisocr indep-confusables multi-latin multi-cyrillic multi-greek multi-cjk; do
  for ae in null 0.6 0.7 0.8; do
    f=$out/$set-$ae.json
    [ -s $f ] && continue
    df="--date-field date"; case $set in multi-*) df="";; esac
    /usr/bin/time -f "%U %S" -o $out/$set-$ae.time env HF_HUB_OFFLINE=1 .venv/bin/python -m neardup eval data/$set/validation.jsonl.gz --method rerank $df --param accept_estimate=$ae --json > $f.tmp 2> $out/$set-$ae.err && mv $f.tmp $f
  done
done
echo finished > $out/DONE
