"""What the noise signs cost on the CLI's sample: SAMPLE_DOCS Reuters-21578 bodies.

    python -m experiments.noisy_profile.signal_cost   # results/signal-cost.json

Best of five wall-clock timings of each sign (tokenising included), of both together
(``noise_shares``, what ``neardup dedup`` runs once per run) and of the stuck sign's
scan alone, on the first 2,000 non-empty bodies.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from neardup.io.reuters import find_reuters_dir, reuters_records
from neardup.text.noise_signal import (SAMPLE_DOCS, _stuck_words, broken_token_share,
                                       noise_shares, stuck_punctuation_share)

OUT = Path(__file__).resolve().parent / "results" / "signal-cost.json"


def _best_seconds(fn, texts: list[str], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - start)
    return round(best, 4)


def main() -> None:
    reuters = find_reuters_dir()
    if reuters is None:
        raise SystemExit("Reuters-21578 not found (../shared/data/reuters21578)")
    bodies = [record.get("body") or "" for path in sorted(reuters.glob("reut2-*.sgm"))[:3]
              for _, _, record in reuters_records(path)]
    texts = [b for b in bodies if b][:SAMPLE_DOCS]
    out = {"docs": len(texts), "chars": sum(map(len, texts)),
           "seconds_broken_tokens": _best_seconds(broken_token_share, texts),
           "seconds_stuck_punctuation": _best_seconds(stuck_punctuation_share, texts),
           "seconds_both": _best_seconds(noise_shares, texts),
           # The stuck sign's own scan, without joining and tokenising.
           "seconds_stuck_scan_only": _best_seconds(_stuck_words, "\n".join(texts))}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
