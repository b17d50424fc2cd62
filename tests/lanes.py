"""Leave out, unimported, the test files that ``-m`` deselects as a whole.

pytest imports every test file before ``-m`` deselects its tests, and each xdist worker
collects every file: under ``make test-fast`` each worker imported torch, transformers
and sentence-transformers for the neural and training lanes it then deselected, seconds
of CPU per worker. A file whose module-level ``pytestmark`` makes the ``-m`` expression
false whatever other marks its tests add is not collected at all. Every test in it would
have been deselected, so which tests run is unchanged. Without ``-m``, or with an
expression this cannot evaluate, every file is collected as before.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

_KEYWORDS = {"and", "or", "not"}


def module_marks(path: Path) -> set[str]:
    """Marker names in the module-level ``pytestmark`` (``pytest.mark.NAME`` or
    ``pytest.mark.NAME(...)``, alone or in a list)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            for sub in ast.walk(node.value):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute)
                        and sub.value.attr == "mark"):
                    names.add(sub.attr)
    return names


def deselected_whole(expression: str, marks: set[str]) -> bool | None:
    """Whether every test carrying ``marks`` (and any others) fails ``expression``;
    None when the expression is not plain marker names with and, or, not and brackets."""
    if not re.fullmatch(r"[\w\s()]*", expression):
        return None
    names = set(re.findall(r"[A-Za-z_]\w*", expression)) - _KEYWORDS
    if not names or any(n in {"True", "False", "None"} for n in names):
        return None
    try:
        code = compile(expression, "<-m>", "eval")
    except SyntaxError:
        return None
    others = sorted(names - marks)
    for extra in itertools.chain.from_iterable(
            itertools.combinations(others, k) for k in range(len(others) + 1)):
        present = marks | set(extra)
        if eval(code, {"__builtins__": {}}, {n: n in present for n in names}):  # noqa: S307
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    expression = config.getoption("markexpr", default="") or ""
    if not expression.strip() or collection_path.suffix != ".py" \
            or not collection_path.name.startswith("test_"):
        return None
    return True if deselected_whole(expression, module_marks(collection_path)) else None
