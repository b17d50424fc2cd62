"""The two rules side by side, from measure.py's and pair_recall.py's result files.

    python -m experiments.chain_rule.summarize   # prints a Markdown table; writes results/summary.md
"""

from __future__ import annotations

import json

from experiments.chain_rule.measure import HERE

RULES = ("two-chain", "one-chain")


def _rows(name: str) -> dict[tuple, dict]:
    data = json.loads((HERE / "results" / name).read_text())
    return {(r["corpus"], r["setting"], r["max_df"]): r for r in data["rows"]}


def main() -> None:
    ari = {rule: _rows(f"{rule}.json") for rule in RULES}
    pairs = {rule: _rows(f"pairs-{rule}.json") for rule in RULES}
    lines = ["| corpus | setting | max_df | ARI two-chain | ARI one-chain | pairs at threshold "
             "| missed two-chain | missed one-chain | chained candidates two-chain | one-chain |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    totals = dict.fromkeys(("missed two-chain", "missed one-chain", "cand two-chain",
                            "cand one-chain", "ari lower", "ari higher"), 0)
    for key in ari["one-chain"]:
        a0, a1 = ari["two-chain"][key]["ari"], ari["one-chain"][key]["ari"]
        p0, p1 = pairs["two-chain"][key], pairs["one-chain"][key]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {a0:.4f} | {a1:.4f} | {p1['all']} | "
                     f"{p0['missed']} | {p1['missed']} | {p0['chained_candidates']} | "
                     f"{p1['chained_candidates']} |")
        totals["missed two-chain"] += p0["missed"]
        totals["missed one-chain"] += p1["missed"]
        totals["cand two-chain"] += p0["chained_candidates"]
        totals["cand one-chain"] += p1["chained_candidates"]
        totals["ari lower"] += a1 < a0 - 5e-5
        totals["ari higher"] += a1 > a0 + 5e-5
    lines.append("")
    lines.append("Totals: " + ", ".join(f"{k} {v}" for k, v in totals.items())
                 + " (ARI lower/higher: cells differing by more than 0.00005)")
    text = "\n".join(lines) + "\n"
    (HERE / "results" / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
