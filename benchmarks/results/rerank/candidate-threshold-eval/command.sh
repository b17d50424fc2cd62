cd /work/wt-rerankcost
for set in indep-nlpaug indep-augly indep-noisocr indep-confusables reuters-news; do
 for t in 0.1 0.15 0.2; do
  HF_HUB_OFFLINE=1 /work/main/.venv/bin/python -m neardup eval data/$set/validation.jsonl.gz --method rerank --date-field date --param "candidate_params={\"threshold\": $t}" --json > /tmp/rc/eval/$set-$t.json 2>/tmp/rc/eval/$set-$t.err
  echo $set $t $(python3 -c "import json;d=json.load(open('/tmp/rc/eval/$set-$t.json'));print(d.get('ari', d))" 2>&1 | head -c 300)
 done
done
