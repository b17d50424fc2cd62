"""The command group imports command modules lazily; its help must still be right."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

import neardup
from neardup.cli import COMMANDS, main


def test_short_help_matches_each_command():
    ctx = click.Context(main)
    for name, (_, _, short) in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(limit=10**6) == short, name


def test_group_help_is_the_eager_groups_help():
    lazy = CliRunner().invoke(main, ["--help"])
    assert lazy.exit_code == 0
    ctx = click.Context(main)
    eager = click.Group(main.name, callback=main.callback, params=main.params, help=main.help,
                        context_settings=main.context_settings)
    for name in COMMANDS:
        eager.add_command(main.get_command(ctx, name), name)
    assert CliRunner().invoke(eager, ["--help"]).output == lazy.output


def test_help_and_package_import_load_no_heavy_module():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "import neardup\n"
        "from neardup.cli import main\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0\n"
        "heavy = {'numba', 'scipy', 'pandas', 'torch', 'sklearn', 'igraph', 'faiss',\n"
        "         'onnxruntime', 'sentence_transformers'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_package_attributes():
    assert neardup.MinHash.__name__ == "MinHash"
    assert "dedup" in dir(neardup) and callable(neardup.dedup)
    from neardup import ClusterConfig, MinHashLSH, Pairs  # noqa: F401
