"""``neardup explain``: why two documents are, or are not, near-duplicates (in the terminal)."""

from __future__ import annotations

import json

from pathlib import Path
from typing import Any

import click

from neardup.cli.options import reader_config_from_options, reader_options
from neardup.methods import METHODS

_STYLES = {"delete": "bold red strike", "insert": "bold green", "replace_a": "red strike",
           "replace_b": "bold yellow"}  # fmt: skip


def _aligned_text(segments: list[tuple[str, str, str]]):
    from rich.text import Text

    text = Text()
    for op, a, b in segments:
        if op == "equal":
            text.append(b)
        elif op == "delete":
            text.append(a, style=_STYLES["delete"])
        elif op == "insert":
            text.append(b, style=_STYLES["insert"])
        else:
            text.append(a, style=_STYLES["replace_a"])
            text.append(b, style=_STYLES["replace_b"])
    return text


def _score_text(row: dict[str, Any]) -> str:
    score = row["score"]
    if score is None:
        return "-"
    if row["method"] == "simhash":
        return f"{int(score)}"
    return f"{score:.3f}"


def _verdict(row: dict[str, Any]) -> str:
    if row["duplicate"] is None:
        return "[dim]n/a[/dim]"
    return "[bold green]duplicate[/bold green]" if row["duplicate"] else "[red]not linked[/red]"


def render_explanation(console: Any, ids: tuple[str, str], docs: dict, result: dict) -> None:
    """Print :func:`neardup.report.explain_pair`'s result with rich."""
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    id_a, id_b = ids
    console.rule(f"[bold]neardup explain[/bold] {escape(id_a)} vs {escape(id_b)}")
    for doc_id in ids:
        doc = docs[doc_id]
        console.print(f"[bold]{escape(doc_id)}[/bold]: {escape(str(doc['source']))}, record "
                      f"{doc['row']}, {len(doc['text']):,} characters"
                      + (f", dated {doc['date']}" if doc["date"] is not None else ""))
    empty = [doc_id for doc_id, flag in zip(ids, result.get("empty", ())) if flag]
    if empty:
        which = (f"both {escape(id_a)} and {escape(id_b)} are" if len(empty) == 2
                 else f"{escape(empty[0])} is")
        console.print(
            f"[bold yellow]Nothing to compare:[/bold yellow] {which} empty after "
            "normalization (no word left once invisible characters, punctuation and spaces "
            "are removed), so no method scores this pair and a run never links it: such "
            "documents get status=empty and stay on their own."
        )
    console.print(Panel(_aligned_text(result["alignment"]),
                        title=f"normalized text of {escape(id_b)} aligned against {escape(id_a)}",
                        subtitle="[green]inserted[/green] [red strike]deleted[/red strike] "
                                 "[red strike]substituted[/red strike]→[yellow]by[/yellow]"))
    sh = result["shingles"]
    console.print(
        f"[bold]Shared word {sh['n']}-grams:[/bold] {sh['shared']:,} of {sh['union']:,} "
        f"distinct ({sh['a']:,} in {escape(id_a)}, {sh['b']:,} in {escape(id_b)})"
    )
    for label, key in (("shared", "examples"), (f"only in {id_a}", "only_a"),
                       (f"only in {id_b}", "only_b")):  # fmt: skip
        if sh[key]:
            console.print(f"  {escape(label)}: " + ", ".join(f"“{escape(g)}”" for g in sh[key]))

    table = Table(title="Each method against its threshold", title_justify="left")
    for column, justify in (("method", "left"), ("measure", "left"), ("score", "right"),
                            ("threshold", "right"), ("verdict", "left"), ("note", "left")):
        table.add_column(column, justify=justify)
    for row in result["scores"]:
        threshold = "" if row["threshold"] is None else f"{row['rule']} {row['threshold']}"
        name = f"[bold]{row['method']}[/bold] ◀" if row.get("selected") else row["method"]
        table.add_row(name, row["measure"], _score_text(row), threshold, _verdict(row),
                      escape(row["note"]))
    console.print(table)

    f = result["features"]
    console.print(
        f"[bold]Pair type:[/bold] {result['pair_type']}  [dim](identical={f['identical']}, "
        f"Jaccard {f['jaccard']}, containment {f['containment']}, Jaccard with digits "
        f"masked {f['masked_jaccard']}; rules in neardup.methods.pair_types)[/dim]"
    )
    dates, gap, window = result["dates"], result["gap_hours"], result["window"]
    if gap is None:
        console.print(f"[bold]Dates:[/bold] {dates[0] or '?'} / {dates[1] or '?'}: gap unknown "
                      "(a missing date never keeps a pair apart)")
    else:
        console.print(f"[bold]Dates:[/bold] {dates[0]} / {dates[1]}: {gap:,.1f} hours apart")
    if window["hours"] is None:
        console.print("[bold]Time window:[/bold] none given (--time-window HOURS)")
    elif window["outside"]:
        console.print(f"[bold]Time window:[/bold] [red]outside {window['hours']:g} h[/red]: "
                      "the run keeps this pair apart (reported, not merged)")
    else:
        console.print(f"[bold]Time window:[/bold] inside {window['hours']:g} h")


@click.command("explain")
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True, path_type=Path))
@click.argument("id_a")
@click.argument("id_b")
@click.option("--method", type=click.Choice(list(METHODS)), default=None,
              help="Single out one method; an embedding method (retsim, biencoder, static) is "
                   "scored only when named here (it loads its model; retsim and biencoder "
                   "need the neural extra). rerank, which the default --method auto runs on "
                   "small inputs, is always scored.")
@click.option("--threshold", type=float, default=None,
              help="Threshold of --method instead of its default (simhash: bits).")
@click.option("--time-window", "time_window_hours",
              type=click.FloatRange(min=0.0, min_open=True), default=None, metavar="HOURS",
              help="The run's --time-window: say whether the two dates are further apart "
                   "(needs --date-field, or Reuters SGML).")
@click.option("--ngram", type=click.IntRange(min=1), default=3, show_default=True,
              help="Words per shingle in the shared-shingle listing.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the explanation as one JSON object (ids, normalized texts, "
                   "alignment, shingles, each method's row, pair type and features, dates, "
                   "window), for scripts, instead of the tables.")
@reader_options
def explain_command(input_path: Path, id_a: str, id_b: str, **opts: Any) -> None:
    """Explain why documents ID_A and ID_B of INPUT are (not) near-duplicates.

    Reads only those two documents (the input is streamed and reading stops once both
    are found) and prints: their normalized texts aligned word by word, their shared
    word shingles, each lexical method's score against its default threshold (exact,
    ngram Jaccard and containment, minhash estimate and LSH bands, simhash Hamming
    distance, spotsigs), the pair type (exact / expanded / corrected / template /
    near), their dates and the time window.

    Ids are those of --id-field; without it, documents are numbered "0", "1", ... in
    input order, as neardup dedup numbers them.

    \b
    Example:
      neardup explain news.jsonl --id-field url https://a/1 https://b/7 --method minhash
    """
    from rich.console import Console

    from neardup.report import explain_pair, find_documents

    if opts["threshold"] is not None and opts["method"] is None:
        raise click.UsageError("--threshold applies to --method; name the method.")
    params: dict[str, Any] = {}
    if opts["threshold"] is not None:
        value = opts["threshold"]
        if opts["method"] == "simhash":
            if value != int(value):
                raise click.UsageError(f"--threshold for simhash is a Hamming distance in bits "
                                       f"(an integer); got {value:g}.")
            value = int(value)
        params["threshold"] = value
    from neardup.cli._checks import command_errors

    with command_errors():
        reader = reader_config_from_options(opts)
        docs = find_documents([input_path], reader, [id_a, id_b])
        result = explain_pair(
            docs[id_a]["text"], docs[id_b]["text"],
            date_a=docs[id_a]["date"], date_b=docs[id_b]["date"],
            method=opts["method"], method_params=params,
            time_window_hours=opts["time_window_hours"], ngram=opts["ngram"],
        )  # fmt: skip
    if opts["as_json"]:
        click.echo(json.dumps({"ids": [id_a, id_b], **result}, ensure_ascii=False,
                              default=_json_value))
        return
    render_explanation(Console(), (id_a, id_b), docs, result)


def _json_value(value: Any) -> Any:
    """numpy scalars as Python numbers; anything else JSON lacks as its text."""
    return value.item() if hasattr(value, "item") else str(value)
