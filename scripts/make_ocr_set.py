"""Build data/multi-ocr/: copies typeset, scanned and read back by Tesseract (real OCR).

    python scripts/make_ocr_set.py [--seed 2024] [--stories 50] [--splits validation test]
    python scripts/make_ocr_set.py --seed 2024 --stories 30 --splits train --train-stories 40 --out DIR
    python scripts/make_ocr_set.py --seed 2024 --stories 30 --languages es bg --out data/multi-ocr-es-bg

``train`` (for training a verifier) takes whole pages that validation and test leave, from
random streams of its own: give it the ``--seed`` and ``--stories`` validation and test were
built with (data/multi-ocr: 2024 and 30) so that it avoids their pages.

Needs the ``tesseract`` program with the pol, nld, deu, ces, fra and eng data, Debian's
translated man pages (manpages-pl, -nl, -de, -cs, -fr and their -dev packages) and
Reuters-21578 (see data/README.md). The default languages are data/multi-ocr's six, in its
order; es (manpages-es, tesseract-ocr-spa) and bg (the installed Bulgarian gettext
catalogs, tesseract-ocr-bul) are built only with ``--languages``. OCR output is cached (``--cache``, default
~/.cache/neardup/ocr), so a rebuild costs only the rendering. See
:mod:`neardup.datasets.ocr`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# This checkout's neardup and the sibling builder script, whatever the working directory.
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from make_independent_sets import _summary  # noqa: E402

from neardup.datasets.independent import write_set  # noqa: E402
from neardup.datasets.ocr import (  # noqa: E402
    DEFAULT_OCR_LANGUAGES,
    OCR_LANGUAGES,
    OcrEngine,
    make_ocr_set,
)
from neardup.progress import progress_bar  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--stories", type=int, default=50, help="source chunks per language per split")
    parser.add_argument("--languages", nargs="*", default=list(DEFAULT_OCR_LANGUAGES),
                        choices=list(OCR_LANGUAGES),
                        help="default: data/multi-ocr's six (es and bg only when given)")
    parser.add_argument("--splits", nargs="*", default=["validation", "test"],
                        help="validation, test and/or train")
    parser.add_argument("--train-stories", type=int, default=None,
                        help="source chunks per language for train (default --stories)")
    parser.add_argument("--cache", type=Path, default=None, help="OCR output cache directory")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "multi-ocr")
    args = parser.parse_args()
    start = time.perf_counter()
    engine = OcrEngine(cache_dir=args.cache)
    with progress_bar("OCR", unit="copies") as advance:
        records, info = make_ocr_set(languages=args.languages, seed=args.seed,
                                     stories_per_language=args.stories, splits=args.splits,
                                     train_stories_per_language=args.train_stories,
                                     engine=engine, progress=lambda done, total: advance(1))
    info["command"] = (f"python scripts/make_ocr_set.py --seed {args.seed} --stories {args.stories}"
                       f" --languages {' '.join(args.languages)} --splits {' '.join(args.splits)}"
                       + (f" --train-stories {args.train_stories}" if args.train_stories else ""))
    info["stats"] = _summary(records)
    sizes = write_set(records, args.out, info)
    print(f"multi-ocr: {len(records)} docs, {sizes} bytes, {engine.calls} OCR runs "
          f"({engine.cached} cached), {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
