"""Noisy text: what `--profile noisy` and `--profile auto` change, at what cost, and each
method on real OCR by language (docs/choosing-a-method.md)."""

from __future__ import annotations

from doc_tables.formatting import Renderer, fixed, half_up, table, whole
from doc_tables.results import SET_HEADERS, SETS, load_json


def _noisy_profile() -> tuple[str, list[str]]:
    data = load_json("noisy-profile")
    ari = {(r["method"], r["setting"], r["set"]): r["ari"] for r in data["rows"]}  # type: ignore[index]
    signal = {r["text"].removesuffix(" test"): r
              for r in load_json("noise-signal-test")["rows"]}  # type: ignore[index]
    rows = []
    for method in dict.fromkeys(r["method"] for r in data["rows"]):  # type: ignore[index]
        for setting, name in (("default", f"`{method} --profile clean`"),
                              ("noisy", f"`{method} --profile noisy`"),
                              ("auto", f"`{method}` (default: `--profile auto`)")):
            if any((method, setting, s) in ari for s in SETS):
                rows.append([name, *(fixed(ari.get((method, setting, s))) for s in SETS)])
    rows.append(["auto chooses noisy (broken tokens / stuck punctuation)",
                 *(f"{'yes' if signal[s]['flagged'] else 'no'} "
                   f"({100 * signal[s]['broken_token_share']:.2f}% / "
                   f"{100 * signal[s]['stuck_punctuation_share']:.2f}%)" for s in SETS)])
    return (table(["setting", *SET_HEADERS], ["l", *"r" * len(SETS)], rows),
            ["noisy-profile", "noise-signal-test"])


def _noisy_profile_cost() -> tuple[str, list[str]]:
    sources = ["noisy-profile-cost-100k", "noisy-profile-cost-20k"]
    rows = [[f"`{r['method']}{' --profile noisy' if r['setting'] == 'noisy' else ''}`",
             whole(r["docs"]), fixed(r["cpu_s"], 1), fixed(r["cpu_ms_per_doc"], 2),
             fixed(r.get("candidate_pairs_per_doc"), 1),
             fixed(r["corpus_stage"]["verified_edges"] / r["docs"], 1)
             if (r.get("corpus_stage") or {}).get("verified_edges") is not None else "",
             whole(r["peak_rss_mb"]), fixed(r.get("ari_vs_truth"))]
            for name in sources for r in load_json(name)["rows"]]  # type: ignore[index]
    header = ["setting", "documents", "CPU (s)", "CPU per doc (ms)", "candidate pairs per doc",
              "verified pairs per doc", "peak RSS (MB)", "ARI vs the corpus's clusters"]
    return table(header, ["l", *"r" * 7], rows), sources


_OCR_LANGUAGES = ("pl", "nl", "de", "cs", "fr", "en")


def _ocr(source: str, languages: tuple[str, ...] = _OCR_LANGUAGES) -> tuple[str, list[str]]:
    rows = [[method, half_up(r["ari"], 3), *(half_up(r["ari_by_language"][lang], 3) for lang in languages)]
            for method, r in load_json(source).items()  # type: ignore[union-attr]
            if isinstance(r, dict) and "ari_by_language" in r]
    return table(["method", "all", *languages], ["l", *"r" * (1 + len(languages))], rows), [source]


TABLES: dict[str, Renderer] = {
    "noisy-profile": _noisy_profile,
    "noisy-profile-cost": _noisy_profile_cost,
    "ocr-validation": lambda: _ocr("ocr-validation"),
    "ocr-test": lambda: _ocr("ocr-test"),
    "ocr-es-bg-validation": lambda: _ocr("ocr-es-bg-validation", ("es", "bg")),
    "ocr-es-bg-test": lambda: _ocr("ocr-es-bg-test", ("es", "bg")),
}
