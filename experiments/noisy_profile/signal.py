"""The noise signal on clean text and on the labelled sets' validation splits.

    python -m experiments.noisy_profile.signal

:func:`neardup.text.noise_signal.broken_token_share` of the first
:data:`~neardup.text.noise_signal.SAMPLE_DOCS` documents of: clean Reuters-21578 bodies
(../shared/data/reuters21578; skipped when absent), clean chunks of the Debian man-page
translations the multi-* sets were made from (/usr/share/man/<lang>, as
``neardup.datasets.independent`` cuts them), Faker's Greek (multi-greek's source), and
each labelled set's validation split (shuffled with a fixed seed: the splits are
shuffled already, this only keeps the sample away from one page's copies). The
threshold :data:`~neardup.text.noise_signal.BROKEN_TOKEN_SHARE` is chosen from these
figures; test splits are not read.

Writes experiments/noisy_profile/results/signal.json.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from experiments.method_comparison.compare_transfer import ROOT, SETS
from neardup.datasets.independent import _faker_documents, _man_documents
from neardup.io.reuters import find_reuters_dir, reuters_records
from neardup.text.noise_signal import BROKEN_TOKEN_SHARE, SAMPLE_DOCS, broken_token_share

OUT = Path(__file__).resolve().parent / "results" / "signal.json"
MAN_LANGUAGES = ("de", "fr", "pl", "cs", "es", "nl", "ru", "ja", "zh_CN")


def clean_samples(rng: random.Random) -> dict[str, list[str]]:
    samples = {}
    reuters = find_reuters_dir()
    if reuters is not None:
        bodies = [record.get("body") or "" for path in sorted(reuters.glob("reut2-*.sgm"))[:3]
                  for _, _, record in reuters_records(path)]
        samples["reuters-21578 bodies"] = [b for b in bodies if b][:SAMPLE_DOCS]
    for language in MAN_LANGUAGES:
        docs, _ = _man_documents(language, Path("/usr/share/man"))
        rng.shuffle(docs)
        if docs:
            samples[f"man pages {language}"] = [d["text"] for d in docs[:SAMPLE_DOCS]]
    samples["faker el_GR"] = [d["text"] for d in _faker_documents(400, 0)][:SAMPLE_DOCS]
    return samples


def main() -> None:
    rng = random.Random(0)
    rows = []
    for name, texts in clean_samples(rng).items():
        rows.append({"text": name, "kind": "clean", "docs": len(texts),
                     "broken_token_share": broken_token_share(texts)})
    for name, _ in SETS:
        with gzip.open(ROOT / "data" / name / "validation.jsonl.gz", "rt") as f:
            texts = [json.loads(line)["text"] for line in f]
        rng.shuffle(texts)
        rows.append({"text": f"{name} validation", "kind": "noisy",
                     "docs": len(texts[:SAMPLE_DOCS]),
                     "broken_token_share": broken_token_share(texts[:SAMPLE_DOCS])})
    for row in rows:
        row["flagged"] = row["broken_token_share"] > BROKEN_TOKEN_SHARE
        print(json.dumps(row))
    OUT.write_text(json.dumps({"threshold": BROKEN_TOKEN_SHARE, "rows": rows}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
