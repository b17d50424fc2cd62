"""No docstring in neardup quotes an accuracy (ARI) or speed figure: such figures drift
as the code changes, so docstrings link to the docs page whose tables are generated from
raw results (docs/choosing-a-method.md, docs/scale.md, docs/decisions/) instead.
Reads the source with :mod:`ast`; imports nothing from neardup."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "neardup"

FIGURES = {
    "ARI figure": re.compile(r"\bARI\b[^.;:()\n]{0,25}?\d+\.\d+|\d+\.\d+\s*(?:test |validation |held-out )?ARI\b"),
    "speed ratio": re.compile(r"\d+(?:\.\d+)?\s?x (?:faster|slower)", re.IGNORECASE),
    "time per item": re.compile(r"\d+(?:\.\d+)?\s?(?:ms|us|µs)\b"),
    "throughput": re.compile(r"\bdocs/s\b|\d[\d,.]*\s?(?:docs|documents|pairs|texts) (?:a|per) (?:CPU[- ])?second"),
}

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def figures_in(text: str) -> list[str]:
    """The kind and text of each figure ``text`` quotes."""
    return [f"{kind}: {m.group(0)!r}" for kind, pattern in FIGURES.items() for m in pattern.finditer(text)]


def _docstrings(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, _DOCUMENTED):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "name", "<module>"), node.body[0].lineno, doc


@pytest.mark.parametrize("text", [
    "the verifier scores ARI 0.976 over MinHash candidates",
    "which lifted n-gram overlap from 75.0 to 81.1 ARI on NEWS-COPY",
    "made the kernel ~2.4x faster", "costs ~0.6 ms a pair", "about 1,400 pairs per CPU-second",
    "runs at 40,000 docs/s",
])
def test_the_patterns_find_figures(text):
    assert figures_in(text), text


@pytest.mark.parametrize("text", [
    "reports validation ARI after every epoch", "see docs/scale-out.md",
    "(cosine agreement > 0.98; see the model cards for validation ARI)",
    "W4NT3D: up to 25% word and character edits",
])
def test_the_patterns_leave_prose_alone(text):
    assert not figures_in(text), text


def test_no_docstring_quotes_an_accuracy_or_speed_figure():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line} ({name}) {figure}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for name, line, doc in _docstrings(path)
             for figure in figures_in(doc)]
    assert not found, "figures drift; link the docs page instead:\n" + "\n".join(found)
