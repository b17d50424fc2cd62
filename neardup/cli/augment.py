"""``neardup augment``: build a labelled near-duplicate benchmark from clean stories."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import click


NO_REUTERS = (
    "no INPUT given and the Reuters-21578 collection was not found (looked in "
    "$NEARDUP_REUTERS_DIR if set, else ../shared/data/reuters21578 beside the repository). "
    "Pass INPUT files, or set NEARDUP_REUTERS_DIR to the directory holding reut2-*.sgm."
)
SPLIT_PLACEHOLDER = "{split}"
#: The story reader's wording -> the command line's.
_WORDS = (("prepare_stories: record", "story"),
          ("must have a str 'text' field", "must have text in its --text-field field"),
          ("must be a mapping", "must be a record with fields"),
          ("prepare_stories: ", ""))
#: Parameters of make_benchmark -> the flags that set them.
_FLAGS = {
    "profile": "--profile", "seed": "--seed", "splits": "--splits",
    "mean_cluster_size": "--mean-cluster-size", "max_cluster_size": "--max-cluster-size",
    "hard_negative_share": "--hard-negative-share", "target_jaccard": "--target-jaccard",
    "noise_scale": "--noise-scale", "rate": "--rate", "min_words": "--min-words",
    "limit": "--limit",
}

# (row label, stats key) of the printed table, in order.
_ROWS = (
    ("documents", "docs"),
    ("clusters", "clusters"),
    ("singleton clusters", "singletons"),
    ("reproduced clusters", "reproduced_clusters"),
    ("cluster size: mean", "cluster_size_mean"),
    ("cluster size: median", "cluster_size_median"),
    ("cluster size: max", "cluster_size_max"),
    ("positive pairs", "positive_pairs"),
    ("negative pairs", "negative_pairs"),
    ("Jaccard: positive pairs", "jaccard_positive_mean"),
    ("hard-negative pairs", "hard_negative_pairs"),
    ("Jaccard: hard-negative pairs", "jaccard_hard_negative_mean"),
    ("Jaccard: random negative pairs", "jaccard_random_negative_mean"),
    ("days", "days"),
    ("source stories", "sources"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value.is_integer() and value >= 1:  # a median of sizes
            return f"{value:,.0f}"
        return f"{value:.3f}" if value < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def stats_rows(stats: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Flatten :func:`~neardup.datasets.benchmark.benchmark_stats` output into a table:
    (column names, rows of [label, value per split...])."""
    columns = list(stats)
    rows = [[label, *(_cell(stats[c].get(key)) for c in columns)] for label, key in _ROWS]
    by_kind = sorted(
        {k for c in columns for k in stats[c].get("jaccard_hard_negative_by_kind", {})}
    )
    for kind in by_kind:
        values = (stats[c]["jaccard_hard_negative_by_kind"].get(kind) for c in columns)
        rows.append([f"Jaccard: {kind}", *map(_cell, values)])
    kinds = sorted({k for c in columns for k in stats[c].get("kinds", {})})
    for kind in kinds:
        rows.append([f"docs: {kind}", *(_cell(stats[c]["kinds"].get(kind, 0)) for c in columns)])
    return columns, rows


def _print_stats(stats: dict[str, dict[str, Any]], info: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    columns, rows = stats_rows(stats)
    table = Table(
        title=f"neardup augment --profile {info['profile']} --seed {info['seed']}",
        caption="Jaccard: mean word-3-gram Jaccard after neardup's normalization",
    )
    table.add_column("statistic")
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    notes = [
        f"stories: {info['stories_used']:,} used of {info['stories_in']:,} "
        f"({info['skipped']['short']:,} too short, {info['skipped']['empty']:,} empty, "
        f"{info['skipped']['undated']:,} undated among dated)",
        f"real duplicates: {info['duplicate_groups']:,} groups; template families: "
        f"{info['families']:,}",
        f"noise scale: {info['noise_scale']:.4g}",
    ]
    calibration = info.get("calibration")
    if calibration and calibration.get("estimate") is not None:
        notes[-1] += (
            f" (calibrated on {calibration['split']}: estimated positive-pair Jaccard "
            f"{calibration['estimate']:.3f} for target {calibration['target']:.3f})"
        )
    for name, split in info["splits"].items():
        notes.append(
            f"{name}: days {', '.join(split['days'])}; {split['other_day_stories']} "
            "stories of other days kept with their family"
        )
    for note in notes:
        console.print(f"[dim]{note}[/dim]")


def _stories(inputs: tuple[Path, ...], opts: dict[str, Any], console: Any) -> list[dict]:
    """Read INPUT (or Reuters-21578) into the story fields make_benchmark reads."""
    from neardup.io import ReaderConfig, detect_format, find_reuters_dir, iter_records

    paths = list(inputs)
    if not paths:
        root = find_reuters_dir()
        if root is None:
            raise click.ClickException(NO_REUTERS)
        paths = sorted(root.glob("reut2-*.sgm"))
        console.print(f"[dim]no INPUT given: reading Reuters-21578 from {root}[/dim]")
    fields = {"id": opts["id_field"], "text": opts["text_field"], "date": opts["date_field"],
              "topics": opts["topics_field"]}  # fmt: skip
    seen: set[str] = set()  # fields some record has: a field the user named must be one
    first_fields: list[str] | None = None
    stories: list[dict] = []
    limit = opts["limit"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for path in paths:
            if limit is not None and len(stories) >= limit:
                break
            # Reuters stories keep headline, dateline and body apart (see prepare_stories).
            parts = ("title", "dateline", "body") if detect_format(path) == "reuters" else ()
            config = ReaderConfig(limit=None if limit is None else limit - len(stories))
            for record in iter_records([path], config):
                if first_fields is None:
                    first_fields = [str(k) for k in record]
                seen.update(key for key in fields.values() if key in record)
                story = {name: record.get(key) for name, key in fields.items()}
                story.update((part, record.get(part)) for part in parts)
                stories.append(story)
    for warning in caught:
        console.print(f"[dim]warning: {warning.message}[/dim]")
    if stories:
        _check_named_fields(fields, seen, first_fields or [], len(stories))
    return stories


def _check_named_fields(fields: dict[str, str], seen: set[str], first_fields: list[str],
                        count: int) -> None:
    """A field no record has is an error when the user named it (the text field always:
    without it there is no story)."""
    from neardup.cli._checks import given
    from neardup.errors import InputError

    for name, option in (("text", "text_field"), ("id", "id_field"), ("date", "date_field"),
                         ("topics", "topics_field")):
        key = fields[name]
        if key in seen or (name != "text" and not given(option)):
            continue
        shown = ", ".join(repr(k) for k in first_fields[:20]) or "no fields"
        flag = "--" + option.replace("_", "-")
        raise InputError(
            f"{flag} {key!r}: none of the {count:,} records read has it (the first record has "
            f"{shown}). Set {flag} to the field that holds the story's {name}"
            + (", or leave it out." if name != "text" else ".")
        )


def _split_paths(out: Path, splits: str) -> list[tuple[str | None, Path]]:
    """The files --out names: one, or one per split built when it holds '{split}'."""
    from neardup.datasets.stories import parse_splits

    name = str(out)
    if SPLIT_PLACEHOLDER not in name:
        return [(None, out)]
    return [(split, Path(name.replace(SPLIT_PLACEHOLDER, split)))
            for split, size in parse_splits(splits) if size != 0]


def _write(records: list[dict], paths: list[tuple[str | None, Path]], outputs) -> list[tuple[Path, int]]:
    """Write the records to their temporary files (one per split with '{split}')."""
    named = {split for split, _ in paths}
    if None not in named:  # one file per split: every record must have its file
        unplaced = sorted({r["split"] for r in records} - named)
        if unplaced:
            raise click.ClickException(
                f"records of split {unplaced[0]!r} have no file: --out names one per split "
                f"of --splits ({', '.join(sorted(named))}).")
    written = []
    for index, (split, path) in enumerate(paths):
        chosen = records if split is None else (r for r in records if r["split"] == split)
        written.append((path, outputs.write_records(_out_flag(index, paths), chosen)))
    return written


def _out_flag(index: int, paths: list) -> str:
    """The name an output goes by in messages: --out, or --out (split NAME)."""
    split = paths[index][0]
    return "--out" if split is None else f"--out ({split} split)"


@click.command("augment")
@click.argument("inputs", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--profile",
    type=click.Choice(["news", "adversarial"]),
    default="news",
    show_default=True,
    help="news: NEWS-COPY-like newspaper reprints (headline dropped or kept, dateline "
    "and byline changes, missing lead, abridgement, dropped and inserted "
    "sentences, OCR noise). adversarial: W4NT3D-like, the clean story plus "
    "copies with sentence/word/character edits, typos, homoglyphs, invisible "
    "characters, case changes and padding.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seeds every random choice; the same INPUT and seed give byte-identical output.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path),
    required=True,
    help="Output records: .jsonl, .jsonl.gz, .parquet, .csv or .tsv. A name containing "
    "'{split}' (e.g. 'data/generated/{split}.jsonl.gz') writes one file per split. Every output "
    "(with --stats) is checked before any reading and written as a set.",
)
@click.option(
    "--splits",
    default="validation=4000,test=4000",
    show_default=True,
    help="Splits to build, NAME=SIZE joined by commas; names train, validation, "
    "test. SIZE: a target number of documents (int), a fraction of the "
    "stories (e.g. 0.1) or 'rest'. Each split takes whole days of stories "
    "(full-day samples); splits share no source story, duplicate group or "
    "template family.",
)
@click.option(
    "--mean-cluster-size",
    type=float,
    default=6.0,
    show_default=True,
    help="Mean documents per cluster, singletons included (long-tailed sizes).",
)
@click.option(
    "--max-cluster-size", type=int, default=200, show_default=True, help="Largest cluster."
)
@click.option(
    "--hard-negative-share",
    type=float,
    default=0.2,
    show_default=True,
    help="Share of clusters given one labelled hard negative: an updated story "
    "(about half its sentences replaced), a same-day story on the same topic, "
    "or one sharing a quoted sentence. Real template stories come on top.",
)
@click.option(
    "--target-jaccard",
    type=float,
    default=None,
    help="Calibrate the noise so that the mean word-3-gram Jaccard of positive "
    "pairs in the test split is about this (default: 0.30, NEWS-COPY's, for "
    "news; off for adversarial). 0 turns calibration off.",
)
@click.option(
    "--noise-scale",
    type=float,
    default=None,
    help="Fixed multiplier of the drawn noise rates instead of calibrating "
    "(news: OCR severity, log-uniform in [0.005, 0.08]; adversarial: edit "
    "rate, uniform in [0.05, 0.25]).",
)
@click.option(
    "--rate",
    type=float,
    default=None,
    help="One fixed noise rate for every copy (news: OCR severity; adversarial: "
    "word- and character-level edit rate, W4NT3D uses up to 0.25); turns "
    "calibration off.",
)
@click.option(
    "--min-words", type=int, default=20, show_default=True, help="Skip stories with fewer words."
)
@click.option(
    "--text-field",
    default="text",
    show_default=True,
    help="Field holding the story text (JSONL, Parquet, CSV/TSV).",
)
@click.option(
    "--id-field",
    default="id",
    show_default=True,
    help="Field holding a unique story id (missing: the row number).",
)
@click.option(
    "--date-field",
    default="date",
    show_default=True,
    help="Field holding an ISO 8601 date. Stories without one are skipped when "
    "others have one; if none has, stories form pseudo-days of 250 in input "
    "order.",
)
@click.option(
    "--topics-field",
    default="topics",
    show_default=True,
    help="Field holding a list of topic labels, used to pick same-topic hard negatives (optional).",
)
@click.option("--limit", type=click.IntRange(min=0), default=None,
              help="Read at most this many stories.")
@click.option(
    "--stats",
    "stats_out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the statistics, the run description and the parameters as JSON.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show progress bars (default: when stderr is a terminal).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def augment_command(inputs: tuple[Path, ...], **opts: Any) -> None:
    """Build a labelled near-duplicate benchmark from clean, dated stories in INPUT.

    INPUT: JSONL (.jsonl, .jsonl.gz), Parquet, CSV/TSV, a directory of .txt files, or
    Reuters-21578 SGML (.sgm). Without INPUT, reads Reuters-21578 (see
    NEARDUP_REUTERS_DIR). Output records carry id, split, cluster (ground truth), kind,
    date, source, negative_of (hard negatives), noise and text. Prints the statistics.

    \b
    Example (the project's standard benchmark, see data/README.md):
      neardup augment --seed 1987 --splits train=8000,validation=4000,test=4000 \\
          --out data/reuters-news/{split}.jsonl.gz \\
          --stats data/reuters-news/stats.json
    """
    from rich.console import Console

    from neardup.cli._checks import command_errors, output_set
    from neardup.datasets.benchmark import benchmark_stats, make_benchmark

    console = Console(stderr=True, quiet=opts["quiet"])
    target: Any = "auto"
    if opts["target_jaccard"] is not None:
        target = opts["target_jaccard"] or None
    progress = False if opts["quiet"] else opts["progress"]
    params = {
        "profile": opts["profile"],
        "seed": opts["seed"],
        "splits": opts["splits"],
        "mean_cluster_size": opts["mean_cluster_size"],
        "max_cluster_size": opts["max_cluster_size"],
        "hard_negative_share": opts["hard_negative_share"],
        "target_jaccard": target,
        "noise_scale": opts["noise_scale"],
        "rate": opts["rate"],
        "min_words": opts["min_words"],
    }
    with command_errors(_FLAGS, catch=(TypeError,), words=_WORDS):
        # Every output checked before any reading: format from the extension, directory
        # writable, not an input nor another output; written as a set at the end.
        paths = _split_paths(opts["out"], opts["splits"])
        specs = [(_out_flag(k, paths), path, None) for k, (_, path) in enumerate(paths)]
        specs.append(("--stats", opts["stats_out"], ("json",)))
        outputs = output_set(inputs, specs)
        with outputs:
            stories = _stories(inputs, opts, console)
            records, info = make_benchmark(stories, progress=progress, return_info=True,
                                            **params)
            if not records:
                raise click.ClickException(
                    f"no documents generated: {info['stories_used']} of {info['stories_in']} "
                    f"stories are usable ({info['skipped']['short']} shorter than --min-words "
                    f"{opts['min_words']}, {info['skipped']['empty']} empty)."
                )
            written = _write(records, paths, outputs)
            stats = benchmark_stats(records)
            if opts["stats_out"] is not None:
                inputs_desc = [p.name for p in inputs] or ["reuters21578/reut2-*.sgm"]
                report = {"stats": stats, "info": info, "params": params, "inputs": inputs_desc}
                outputs.write_text("--stats", json.dumps(report, indent=2) + "\n")
            outputs.commit()
    if not opts["quiet"]:
        _print_stats(stats, info, Console())
        for path, count in written:
            console.print(f"[dim]wrote {count:,} records to {path}[/dim]")
