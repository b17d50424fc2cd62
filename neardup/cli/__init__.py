"""The ``neardup`` command line: one group, one module per command.

Command modules are imported only when their command runs (or its help is shown), so
``neardup --help`` and ``neardup --version`` load neither numba, scipy nor the methods.
"""

from __future__ import annotations

import importlib
import warnings

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
    warnings.showwarning = _show_warning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Our own warnings (about the user's input) as one line, without a source location."""
    if issubclass(category, UserWarning) and "neardup" in filename:
        click.echo(f"warning: {message}", err=True)
    else:
        click.echo(warnings.formatwarning(message, category, filename, lineno, line), err=True,
                   nl=False)
