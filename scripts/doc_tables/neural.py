"""The neural encoders: their speed and accuracy (docs/neural-speed.md) and static embeddings
against their peer and as rerank candidates (docs/static-embeddings.md)."""

from __future__ import annotations

from doc_tables.formatting import Renderer, half_up, percent, table
from doc_tables.results import load_json
from doc_tables.sources import SOURCES


_RETSIM_ROWS = (("unisim", "unisim 1.0.1 `TextSim.embed` (batch 128)"),
                ("neardup float32", "neardup RETSim float32 (batch 16, I/O binding)"),
                ("neardup int8", "neardup RETSim int8 (dense weights)"),
                ("neardup int8 + attention int8",
                 "int8 + attention products int8 (`MatMulConstBOnly=False`; not offered)"))


def _neural_retsim() -> tuple[str, list[str]]:
    rows_in = load_json("neural-retsim")["rows"]  # type: ignore[index]
    rows = []
    for key, label in _RETSIM_ROWS:
        r = rows_in[key]
        # unisim is the reference the cosines are taken against: 1 by definition, not a measurement.
        mean, low = ("1", "1") if key == "unisim" else (f"{r['cosine_to_unisim_mean']:.4f}",
                                                        f"{r['cosine_to_unisim_min']:.4f}")
        rows.append([label, half_up(r["docs_per_cpu_second"], 1), f"{r['speedup_vs_unisim']:.2f}x", mean, low])
    header = ["encoder", "docs / CPU s", "vs unisim", "cosine to unisim: mean", "min"]
    return table(header, ["l", *"r" * 4], rows), ["neural-retsim"]


_BIENCODER_ROWS = (("before: biencoder-news, 128 tokens (base commit's default)", 128,
                    "before: biencoder-news, 128 tokens (default)"),
                   ("biencoder-news, 64 tokens", 64, "biencoder-news, 64 tokens"),
                   ("biencoder-news, 32 tokens", 32, "biencoder-news, 32 tokens"),
                   ("all-MiniLM-L6-v2 (torch), 256 tokens", None, "all-MiniLM-L6-v2 (torch, float32), 256 tokens"),
                   ("student-2L-64, 64 tokens", ("student-2L-64", 64),
                    "student: all-MiniLM-L6-v2 cut to layers 3, 5, fine-tuned at 64 tokens (not shipped)"),
                   ("student-3L-64, 64 tokens", ("student-3L-64", 64),
                    "student: all-MiniLM-L6-v2 cut to layers 1, 3, 5, fine-tuned at 64 tokens (not shipped)"),
                   ("student-3L-128, 128 tokens", ("student-3L-128", 128),
                    "student: all-MiniLM-L6-v2 cut to layers 1, 3, 5, fine-tuned at 128 tokens (not shipped)"))


def _neural_biencoder() -> tuple[str, list[str]]:
    speed = load_json("neural-biencoder")["rows"]  # type: ignore[index]
    ari = {(r["set"], r.get("model", "biencoder-news"), r["max_tokens"]): r["ari"]
           for r in load_json("neural-biencoder-accuracy")["rows"]}  # type: ignore[index]
    rows = []
    for key, tokens, label in _BIENCODER_ROWS:
        # tokens: biencoder-news's limit, or (another model's name, its limit); None: no ARI.
        model, limit = tokens if isinstance(tokens, tuple) else ("biencoder-news", tokens)
        rows.append([label, half_up(speed[key]["docs_per_cpu_second"], 1),
                     *("" if tokens is None else half_up(ari[s, model, limit], 3)
                       for s in ("reuters-news", "indep-noisocr"))])
    static = load_json("neural-static")
    static_key = "static-minilm, normalized text (the method's default)"
    static_ari = {r["set"]: r["validation_ari"] for r in load_json("static-peers")["rows"]  # type: ignore[index]
                  if r["tool"] == "neardup static"}
    rows.append([f"`--method static` embedding (static-minilm, normalized text; {static['docs']:,} stories, "  # type: ignore[index]
                 "`neural_speed.py static --docs 3000 --repeat 2`; validation ARI from `peers_static.py peers`)",
                 half_up(static["rows"][static_key]["docs_per_cpu_second"]),  # type: ignore[index]
                 *(half_up(static_ari[s], 3) for s in ("reuters-news", "indep-noisocr"))])
    header = ["encoder", "docs / CPU s", "reuters-news validation ARI", "indep-noisocr validation ARI"]
    return table(header, ["l", "r", "r", "r"], rows), [
        "neural-biencoder", "neural-biencoder-accuracy", "neural-static", "static-peers"]


def _neural_summary() -> tuple[str, list[str]]:
    retsim = load_json("neural-retsim")["rows"]  # type: ignore[index]
    bienc = load_json("neural-biencoder")["rows"]  # type: ignore[index]
    static = load_json("neural-static")["rows"]  # type: ignore[index]
    peers = {(r["tool"], r["set"]): r["test_ari"] for r in load_json("static-peers")["rows"]}  # type: ignore[index]

    def per_cpu(value: float) -> str:
        return half_up(value, 1) if value < 100 else half_up(value)

    int8 = retsim["neardup int8"]
    rows = [
        ["RETSim: unisim / ours float32 / ours int8",
         " / ".join(per_cpu(retsim[k]["docs_per_cpu_second"]) for k in ("unisim", "neardup float32", "neardup int8"))
         + f" ({int8['speedup_vs_unisim']:.2f}x unisim)", f"`{SOURCES['neural-retsim'].command}`"],
        ["bi-encoder at 128 / 64 / 32 tokens",
         " / ".join(per_cpu(bienc[k]["docs_per_cpu_second"]) for k, _, _ in _BIENCODER_ROWS[:3]),
         f"`{SOURCES['neural-biencoder'].command}`"],
        ["static (model2vec)", per_cpu(static["static-minilm, normalized text (the method's default)"]
                                       ["docs_per_cpu_second"]), f"`{SOURCES['neural-static'].command}`"],
        ["static vs semhash, same model, test ARI on reuters-news / indep-noisocr",
         " / ".join(f"{half_up(peers['neardup static', s], 3)} vs {half_up(peers['semhash', s], 3)}"
                    for s in ("reuters-news", "indep-noisocr")), f"`{SOURCES['static-peers'].command}`"],
    ]
    return table(["what", "figure", "command"], ["l", "l", "l"], rows), [
        "neural-retsim", "neural-biencoder", "neural-static", "static-peers"]


_STATIC_TOOLS = {"semhash": "semhash 0.5.0 `self_deduplicate`", "neardup static": "neardup `--method static`"}
_STATIC_CANDIDATES = {"minhash (char-5, Jaccard 0.1; default)": "MinHash, char 5-grams, Jaccard 0.1 (default)",
                      "static (static-minilm, cosine 0.8, k 20)": "static-minilm, cosine 0.8, k 20"}


def _static_peers() -> tuple[str, list[str]]:
    rows = [[f"{r['set']} ({r['docs']:,})", _STATIC_TOOLS[r["tool"]], f"{r['threshold']:.2f}",
             half_up(r["validation_ari"], 3), half_up(r["test_ari"], 3), half_up(r["docs_per_cpu_second"]),
             f"{half_up(r['peak_rss_mb'])} MB"]
            for r in load_json("static-peers")["rows"]]  # type: ignore[index]
    header = ["set (test docs)", "tool", "threshold", "validation ARI", "test ARI", "docs / CPU s", "peak RSS"]
    return table(header, ["l", "l", *"r" * 5], rows), ["static-peers"]


def _static_rerank() -> tuple[str, list[str]]:
    rows = [[_STATIC_CANDIDATES[r["candidates"]], half_up(r["candidate_pairs_per_doc"], 1),
             percent(r["true_pairs_among_candidates"], 1).replace(".0%", "%"), f"{r['candidate_cpu_seconds']:.2f}",
             half_up(r["validation_ari"], 3), half_up(r["test_ari"], 3)]
            for r in load_json("static-rerank")["rows"]]  # type: ignore[index]
    header = ["candidates", "pairs per doc", "true pairs among them", "candidate CPU s (1,179 docs)",
              "validation ARI", "test ARI"]
    return table(header, ["l", *"r" * 5], rows), ["static-rerank"]


def _static_candidates() -> tuple[str, list[str]]:
    short = {"minhash (char-5, Jaccard 0.1; default)": "MinHash (default)",
             "static (static-minilm, cosine 0.8, k 20)": "static, cosine 0.8, k 20"}
    rows = [[r["set"], short[r["candidates"]], half_up(r["candidate_pairs_per_doc"], 1),
             percent(r["true_pairs_among_candidates"], 1)]
            for r in load_json("static-rerank-candidates")["rows"]]  # type: ignore[index]
    return table(["set", "candidates", "pairs per doc", "true pairs among them"], ["l", "l", "r", "r"], rows), [
        "static-rerank-candidates"]


TABLES: dict[str, Renderer] = {
    "neural-retsim": _neural_retsim,
    "neural-biencoder": _neural_biencoder,
    "neural-summary": _neural_summary,
    "static-peers": _static_peers,
    "static-rerank": _static_rerank,
    "static-rerank-candidates": _static_candidates,
}
