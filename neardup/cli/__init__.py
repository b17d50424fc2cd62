"""The ``neardup`` command line: one group, one module per command.

Command modules are imported only when their command runs (or its help is shown), so
``neardup --help`` and ``neardup --version`` load neither numba, scipy nor the methods.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import click

__all__ = ["main"]

#: name -> (module, attribute, the command's short help untruncated; a test checks it
#: against the command itself).
COMMANDS = {
    "dedup": ("neardup.cli.dedup", "dedup_command",
              "Find near-duplicates in INPUT files and cluster them."),
    "augment": ("neardup.cli.augment", "augment_command",
                "Build a labelled near-duplicate benchmark from clean, dated stories in INPUT."),
    "eval": ("neardup.cli.evaluate", "eval_command",
             "Run a method on LABELED data and score its clusters against the ground truth."),
    "tune": ("neardup.cli.evaluate", "tune_command",
             "Sweep a method's threshold on the validation split of LABELED data; keep the best "
             "ARI."),
    "decontaminate": ("neardup.cli.decontaminate", "decontaminate_command",
                      "Remove training documents that contain an evaluation item."),
    "leakage": ("neardup.cli.leakage", "leakage_command",
                "Find test documents that have exact or near-duplicates in the training corpus."),
    "train": ("neardup.cli.train", "train_command",
              "Fine-tune a de-duplication model on labeled clusters (CPU or GPU)."),
    "report": ("neardup.cli.report", "report_command",
               "Write an HTML report of a neardup dedup run."),
    "explain": ("neardup.cli.explain", "explain_command",
                "Explain why documents ID_A and ID_B of INPUT are (not) near-duplicates."),
    "calibrate": ("neardup.cli.calibrate", "calibrate_command",
                  "Fit a method's threshold to pairs of INPUT that you label (y/n/skip)."),
    "index": ("neardup.cli.index", "index_command",
              "A persistent near-duplicate index: add documents over time, query new ones."),
    "spans": ("neardup.cli.spans", "spans_command",
              "Remove repeated lines, paragraphs or sentence windows across INPUT files."),
    "substrings": ("neardup.cli.spans", "substrings_command",
                   "Remove exact substrings of --min-tokens or more tokens repeated across "
                   "INPUT files."),
    "serve": ("neardup.cli.serve", "serve_command",
              "Serve the index in DIRECTORY over HTTP: POST /query, POST /add, GET /stats, GET "
              "/health."),
}  # fmt: skip


class _LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute, _ = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # As click.Group does it, without importing the commands.
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in COMMANDS:
                summary = click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)
            else:
                summary = self.commands[name].get_short_help_str(limit)
            rows.append((name, summary))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="neardup")
def main() -> None:
    """neardup: find and remove near-duplicate documents in large, noisy text corpora.

    Run `neardup COMMAND --help` for the options of each command.
    """
    _shown.clear()
    warnings.showwarning = _show_warning


def run() -> None:
    """The ``neardup`` program (its console script and ``python -m neardup``): :func:`main`
    in a process of its own."""
    # The program draws nothing, and python-igraph (Leiden, Louvain) imports matplotlib
    # and pyplot at its own import when they are installed: half a second or more of a
    # run (python-igraph issue 762). Hidden here, for this process only; a program that
    # imports neardup as a library keeps its matplotlib.
    sys.modules.setdefault("matplotlib", None)
    main()


#: Warnings already printed by this invocation (each is printed once, whichever read of
#: the input raised it).
_shown: set[tuple[type, str]] = set()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Every warning as one line, ``warning: MESSAGE``, printed once per invocation:
    never with a source location or source line (the user cannot act on them)."""
    from neardup.cli.errors import cli_text

    text = cli_text(str(message)).strip()
    key = (category, text)
    if key in _shown:
        return
    _shown.add(key)
    click.echo(f"warning: {text}", err=True)


@contextmanager
def warnings_shown(quiet: bool) -> Iterator[None]:
    """Within the block, warnings are printed as :func:`_show_warning` does (one clean
    line each, once), or not at all when ``quiet`` (``-q``); so are the log messages of
    the ``neardup`` logger."""
    import logging

    logger = logging.getLogger("neardup")
    disabled = logger.disabled
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        else:
            # "always" for the warnings about the user's input: the registry's
            # once-per-location would hide one in a second invocation in one process;
            # _show_warning prints each message once itself. Other categories keep
            # Python's filters (deprecations of libraries stay hidden).
            warnings.simplefilter("always", UserWarning)
            warnings.simplefilter("always", UnicodeWarning)
        warnings.showwarning = _show_warning
        logger.disabled = quiet or disabled
        try:
            yield
        finally:
            logger.disabled = disabled
