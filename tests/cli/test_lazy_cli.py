"""The command group imports command modules lazily; its help must still be right."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
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


def test_the_program_clusters_with_igraph_without_importing_matplotlib(tmp_path):
    """``neardup`` as a program hides matplotlib, which python-igraph imports at its own
    import when installed: a Leiden run imports igraph and no matplotlib. A program that
    imports neardup keeps its matplotlib (``main`` itself hides nothing)."""
    import importlib.util
    import json

    if importlib.util.find_spec("igraph") is None:
        pytest.skip("python-igraph is not installed")
    path = tmp_path / "docs.jsonl"
    story = "oil prices rose sharply in london on tuesday as traders weighed the supply outlook "
    texts = [story * 3 + end for end in ("today", "again today", "today too", "once more")]
    texts += ["a dog ran in the park", "x y"]
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    code = (
        "import sys\n"
        "from neardup.cli import run\n"
        f"sys.argv = ['neardup', 'dedup', {str(path)!r}, '--cluster', 'leiden', '-q',\n"
        f"            '--clusters-out', {str(tmp_path / 'c.parquet')!r}]\n"
        "try:\n"
        "    run()\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "assert 'igraph' in sys.modules\n"
        "assert sys.modules.get('matplotlib') is None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (tmp_path / "c.parquet").exists()
    assert CliRunner().invoke(main, ["--help"]).exit_code == 0
    assert "matplotlib" not in sys.modules or sys.modules["matplotlib"] is not None
