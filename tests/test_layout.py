"""The package's layout rules, read from the source with :mod:`ast`: no import cycle between
neardup's modules, and no private name (``_name``) of one module used by another.

Every ``from neardup... import`` and ``import neardup...`` counts, at module level or inside
a function (a function-level import only delays a cycle, it does not remove it); imports
under ``if TYPE_CHECKING:`` do not, since they never run. Importing a package means
importing its ``__init__``. A private name is used across modules when it is imported
(``from neardup.x import _name``) or read off an imported module (``x._name``); tests may
still do both.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "neardup"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


class _Imports(ast.NodeVisitor):
    """The ``(target module, imported name or None, line)`` of each import that runs."""

    def __init__(self, module: str, is_package: bool):
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, str | None, int]] = []

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == "neardup":
                self.found.append((alias.name, None, node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] != "neardup":
            return
        for alias in node.names:
            self.found.append((target, alias.name, node.lineno))


@cache
def _tree(module: str) -> ast.Module:
    # Each test reads every module: parsing the package once saves most of their time.
    path = MODULES[module]
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@cache
def _imports(module: str) -> list[tuple[str, str | None, int]]:
    visitor = _Imports(module, MODULES[module].name == "__init__.py")
    visitor.visit(_tree(module))
    return visitor.found


def _private_uses(module: str) -> list[str]:
    """``"module:line: target._name"`` for each private name ``module`` takes from another."""
    found = []
    aliases: dict[str, str] = {}
    for target, name, line in _imports(module):
        if name is None:
            continue
        if f"{target}.{name}" in MODULES:
            aliases[name] = f"{target}.{name}"
        elif name.startswith("_") and not name.startswith("__") and target != module:
            found.append(f"{module}:{line}: {target}.{name}")
    tree = _tree(module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "neardup" and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.attr.startswith("_") and not node.attr.startswith("__")
                and aliases.get(node.value.id, module) != module):
            found.append(f"{module}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the neardup modules it imports (``from pkg import submodule`` is an
    import of the submodule, and of the package's ``__init__``)."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        edges = graph.setdefault(module, set())
        for target, name, _ in _imports(module):
            if name is not None and f"{target}.{name}" in MODULES:
                edges.add(f"{target}.{name}")
            if target in MODULES and target != module:
                edges.add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_modules_found():
    assert "neardup.graph.cluster" in MODULES
    assert "neardup.engine.local" in MODULES
    graph = _graph()
    assert "neardup.graph.labels" in graph["neardup.graph.cluster"]


def test_no_import_cycles():
    cycles = _cycles(_graph())
    assert cycles == [], "import cycles between neardup modules: " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def test_no_private_names_across_modules():
    found = [use for module in MODULES for use in _private_uses(module)]
    assert found == [], "private names used outside their module: " + ", ".join(found)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_cycle_finder(graph, expected):
    assert _cycles(graph) == expected
