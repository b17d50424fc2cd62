"""The noise signs on clean text and on the labelled sets' validation splits.

    python -m experiments.noisy_profile.signal                 # results/signal.json
    python -m experiments.noisy_profile.signal --split test    # results/signal-test.json (read once)

:func:`neardup.text.noise_signal.noise_shares` (broken tokens, stuck punctuation) of
the first :data:`~neardup.text.noise_signal.SAMPLE_DOCS` documents of: clean
Reuters-21578 bodies (../shared/data/reuters21578; skipped when absent), clean chunks of
the Debian man-page translations the multi-* sets were made from (/usr/share/man/<lang>,
as ``neardup.datasets.independent`` cuts them), multi-ocr's clean sources per language
(``neardup.datasets.ocr.source_documents``: the text before it was typeset and read back
by Tesseract), the licence texts and package copyright files under /usr/share (English
prose full of addresses, e-mails and abbreviations), and Faker's prose in Greek
(multi-greek's source) and six other languages; then each labelled set's validation
split (shuffled with a fixed seed: the splits are shuffled already, this only keeps the
sample away from one page's copies), multi-ocr also per language. The cut-offs
:data:`~neardup.text.noise_signal.BROKEN_TOKEN_SHARE` and
:data:`~neardup.text.noise_signal.STUCK_PUNCTUATION_SHARE` are chosen from these
figures; ``--split test`` only reports where the hint fires on the test splits, after
the choice. ``flagged_before``: the broken-token sign alone (the hint before decision
0030).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from experiments.method_comparison.compare_transfer import ROOT, SETS
from neardup.datasets.independent import faker_documents, man_documents
from neardup.datasets.ocr import OCR_LANGUAGES, source_documents
from neardup.io.reuters import find_reuters_dir, reuters_records
from neardup.text.noise_signal import (BROKEN_TOKEN_SHARE, SAMPLE_DOCS,
                                       STUCK_PUNCTUATION_SHARE, noise_shares)

RESULTS = Path(__file__).resolve().parent / "results"
MAN = Path("/usr/share/man")
MAN_LANGUAGES = ("de", "fr", "pl", "cs", "es", "nl", "ru", "ja", "zh_CN")
FAKER_LOCALES = ("en_US", "de_DE", "fr_FR", "pl_PL", "nl_NL", "cs_CZ", "ru_RU")


def _faker_prose(locale: str, docs: int) -> list[str]:
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(0)
    return ["\n".join(fake.paragraph(nb_sentences=8) for _ in range(2)) for _ in range(docs)]


def _files(paths: list[Path]) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths if p.is_file()]


def clean_samples(rng: random.Random) -> dict[str, list[str]]:
    samples = {}
    reuters = find_reuters_dir()
    if reuters is not None:
        bodies = [record.get("body") or "" for path in sorted(reuters.glob("reut2-*.sgm"))[:3]
                  for _, _, record in reuters_records(path)]
        samples["reuters-21578 bodies"] = [b for b in bodies if b][:SAMPLE_DOCS]
    for language in MAN_LANGUAGES:
        docs, _ = man_documents(language, MAN)
        rng.shuffle(docs)
        if docs:
            samples[f"man pages {language}"] = [d["text"] for d in docs[:SAMPLE_DOCS]]
    for language in OCR_LANGUAGES:
        docs = source_documents(language, MAN)
        rng.shuffle(docs)
        if docs:
            samples[f"multi-ocr sources {language}"] = [d["text"] for d in docs[:SAMPLE_DOCS]]
    samples["licences /usr/share/common-licenses"] = _files(
        sorted(Path("/usr/share/common-licenses").glob("*")))
    samples["copyright files /usr/share/doc"] = _files(
        sorted(Path("/usr/share/doc").glob("*/copyright"))[:SAMPLE_DOCS])
    samples["faker el_GR"] = [d["text"] for d in faker_documents(400, 0)][:SAMPLE_DOCS]
    for locale in FAKER_LOCALES:
        samples[f"faker {locale}"] = _faker_prose(locale, 500)
    return {name: texts for name, texts in samples.items() if texts}


def labelled_samples(split: str, rng: random.Random) -> dict[str, list[str]]:
    samples = {}
    for name in [name for name, _ in SETS] + ["multi-ocr"]:
        with gzip.open(ROOT / "data" / name / f"{split}.jsonl.gz", "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        rng.shuffle(rows)
        samples[f"{name} {split}"] = [r["text"] for r in rows[:SAMPLE_DOCS]]
        if name == "multi-ocr":
            for language in OCR_LANGUAGES:
                samples[f"multi-ocr {split} {language}"] = [
                    r["text"] for r in rows if r["lang"] == language][:SAMPLE_DOCS]
    return samples


def _row(name: str, kind: str, texts: list[str]) -> dict:
    shares = noise_shares(texts)
    return {"text": name, "kind": kind, "docs": len(texts),
            "broken_token_share": shares.broken_tokens,
            "stuck_punctuation_share": shares.stuck_punctuation,
            "flagged_before": shares.broken_tokens > BROKEN_TOKEN_SHARE,
            "flagged": shares.noisy()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("validation", "test"), default="validation")
    split = parser.parse_args().split
    rng = random.Random(0)
    rows = []
    if split == "validation":
        rows += [_row(name, "clean", texts) for name, texts in clean_samples(rng).items()]
    rows += [_row(name, "noisy", texts) for name, texts in labelled_samples(split, rng).items()]
    for row in rows:
        print(json.dumps(row))
    clean = [r["stuck_punctuation_share"] for r in rows if r["kind"] == "clean"]
    summary = {"broken_token_threshold": BROKEN_TOKEN_SHARE,
               "stuck_punctuation_threshold": STUCK_PUNCTUATION_SHARE}
    if clean:
        summary["clean_max_stuck_punctuation_share"] = max(clean)
        summary["clean_max_broken_token_share"] = max(
            r["broken_token_share"] for r in rows if r["kind"] == "clean")
    out = RESULTS / ("signal.json" if split == "validation" else f"signal-{split}.json")
    out.write_text(json.dumps({**summary, "rows": rows}, indent=1) + "\n")
    print(json.dumps(summary))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
