"""The looser variant of the template guard's name test (decision 0029), patched into
rerank in this process only (a separate process per variant: rerank's evaluation cache
holds the guard's mask).

Usage::

    python -m experiments.reuters_templates.name_test_loose sets     # validation ARI
    python -m experiments.reuters_templates.name_test_loose reuters  # mixing clusters
"""
import functools
import json
import sys

import neardup.methods.rerank as rr
from neardup.methods import template_names as tn
KW = dict(max_chars=1000, min_length_ratio=0.6, max_gap=8)
rr.names_disagree = functools.partial(tn.names_disagree, **KW)
rr.names_length_pairs = functools.partial(tn.names_length_pairs, max_chars=1000, min_length_ratio=0.6)
mode = sys.argv[1]
if mode == "sets":
    from experiments.reuters_templates.reuters_templates import labelled_sets
    rows = labelled_sets("validation")
    json.dump({"variant": KW, "rows": rows}, open("experiments/reuters_templates/results/"
                   "reuters_templates_sets_validation_name_test_loose.json", "w"), indent=1)
else:
    sys.argv = ["x", "experiments/reuters_templates/results/mixing_clusters_name_test_loose"]
    from experiments.reuters_templates.mixing_clusters import main
    main()
