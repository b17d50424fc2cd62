"""The ``neardup`` command line: one group, one module per command."""

from __future__ import annotations

import warnings

import click

from neardup.cli.augment import augment_command
from neardup.cli.dedup import dedup_command
from neardup.cli.evaluate import eval_command, tune_command
from neardup.cli.explain import explain_command
from neardup.cli.leakage import leakage_command
from neardup.cli.report import report_command
from neardup.cli.train import train_command

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


main.add_command(dedup_command)
main.add_command(augment_command)
main.add_command(eval_command)
main.add_command(tune_command)
main.add_command(leakage_command)
main.add_command(train_command)
main.add_command(report_command)
main.add_command(explain_command)

from neardup.cli.index import index_command  # noqa: E402
from neardup.cli.serve import serve_command  # noqa: E402

main.add_command(index_command)
main.add_command(serve_command)
