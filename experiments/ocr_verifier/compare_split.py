"""Are two builds of a multi-ocr split the same? ``python -m experiments.ocr_verifier.compare_split A B``
(jsonl.gz files): ids, clusters, noise notes and texts, record by record."""

import gzip
import json
import sys


def read(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main() -> None:
    a, b = read(sys.argv[1]), read(sys.argv[2])
    fields = ["id", "split", "cluster", "kind", "lang", "source", "noise", "text"]
    diff = {k: sum(x.get(k) != y.get(k) for x, y in zip(a, b)) for k in fields}
    print(json.dumps({"records": [len(a), len(b)], "records_differing_by_field": diff,
                      "identical": len(a) == len(b) and a == b}))


if __name__ == "__main__":
    main()
