"""The documentation: every results table matches its raw result file, the generator
refuses what it cannot back, the CLI reference covers every command, and (slow lane) the
site builds with ``mkdocs build --strict``, so a broken link or reference fails."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


docs_tables = _load("docs_tables", ROOT / "scripts" / "docs_tables.py")
# Loading the entry point put scripts/ on sys.path: its table modules import by name.
formatting = importlib.import_module("doc_tables.formatting")
cli_reference = _load("cli_reference", ROOT / "docs" / "_hooks" / "cli_reference.py")


def test_every_table_matches_its_raw_results():
    assert docs_tables.main(["--check"]) == 0


def test_check_names_a_stale_table_and_rewrite_repairs_it(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "README.md"
    doc.write_text("intro\n<!-- BEGIN table:peers-100k -->\n| stale |\n<!-- END table:peers-100k -->\nend\n")
    monkeypatch.setattr(docs_tables, "documents", lambda: [doc])
    assert docs_tables.main(["--check"]) == 1
    assert "README.md" in capsys.readouterr().err
    assert doc.read_text().count("| stale |") == 1  # --check changes nothing
    assert docs_tables.main([]) == 0
    text = doc.read_text()
    assert "| stale |" not in text and "| datasketch |" in text
    assert text.startswith("intro\n") and text.endswith("end\n")
    assert docs_tables.main(["--check"]) == 0


def test_unknown_table_and_missing_result_file_are_refused(monkeypatch):
    with pytest.raises(SystemExit, match="no renderer for table 'no-such-table'"):
        docs_tables.regenerate("<!-- BEGIN table:no-such-table -->\n<!-- END table:no-such-table -->")
    missing = docs_tables.Source("bench/results/does-not-exist.json", "true")
    monkeypatch.setitem(docs_tables.SOURCES, "minhash-signatures", missing)
    with pytest.raises(SystemExit, match="does-not-exist.json"):
        docs_tables.render("minhash-signatures")


def test_missing_text_result_file_is_refused(monkeypatch):
    missing = docs_tables.Source("benchmarks/results/spans/does-not-exist.txt", "true")
    monkeypatch.setitem(docs_tables.SOURCES, "spans-engines", missing)
    with pytest.raises(SystemExit, match="does-not-exist.txt"):
        docs_tables.render("spans-engines")


def test_figures_round_half_up_as_the_pages_did():
    # format() rounds the binary value: f"{14.25:.1f}" is "14.2", f"{36.25:.1f}" is "36.2".
    assert formatting.half_up(14.25, 1) == "14.3"
    assert formatting.half_up(4033.5) == "4,034"
    assert formatting.percent(0.3625, 1) == "36.3%"
    assert formatting.half_up(0.1234, 3) == "0.123"


def test_a_command_shared_by_several_files_is_named_once():
    text = docs_tables.render("spans-1M")
    assert text.count("--skip-peers --skip-chunked") == 1
    assert text.count("benchmarks/results/spans/1M/") == 3


def test_every_table_cites_its_raw_results_and_command():
    for name in docs_tables.RENDERERS:
        text = docs_tables.render(name)
        assert "Raw results: `" in text and "Rewritten by: `" in text, name


def test_cli_reference_covers_every_command_and_option():
    from neardup.cli import COMMANDS, main

    text = cli_reference.reference()
    for name in COMMANDS:
        assert f"## `neardup {name}`" in text, name
    dedup = main.get_command(None, "dedup")
    for param in dedup.params:
        if param.param_type_name == "option" and not param.hidden:
            assert f"`{param.opts[0]}" in text, param.opts


@pytest.mark.slow
def test_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("the docs extra is not installed (pip install -e '.[docs]')")
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    run = subprocess.run(mkdocs, cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    site = tmp_path / "site"
    assert (site / "cli" / "index.html").read_text(encoding="utf-8").count("neardup dedup") > 1
    assert "neardup.dedup" in (site / "api" / "index.html").read_text(encoding="utf-8")
    shutil.rmtree(site)


code_lines = _load("code_lines", ROOT / "scripts" / "code_lines.py")


def test_code_lines_count_code_only():
    source = '''"""Module docstring,
over two lines."""

import os  # a trailing comment keeps its line


# a comment line
def f(x):
    """Docstring."""
    y = (x +
         1)
    return "not a docstring"
'''
    # import, def, the two lines of the bracketed expression, return
    assert code_lines.code_lines(source) == 5
    assert code_lines.docstring_lines(code_lines.ast.parse(source)) == {1, 2, 9}
