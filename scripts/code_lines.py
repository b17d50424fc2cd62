"""Lines of code of the modules issue 36 names, at one or more git revisions.

A line counts when it holds code: blank lines, comment lines and the lines of docstrings
(a string that is the first statement of a module, class or function) do not. Files are
read from git (``git show REV:PATH``), so any commit can be counted without checking it
out.

    python scripts/code_lines.py 5cf0f87 HEAD --out benchmarks/results/spine/code-lines.json
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The groups issue 36 asks to count, as path prefixes under neardup/; "run spec and
#: parameter schema" is the front doors' shared configuration, counted apart.
GROUPS = {
    "engine": ("neardup/engine/",),
    "index": ("neardup/index/",),
    "pipeline": ("neardup/pipeline.py",),
    "api": ("neardup/api.py",),
    "cli": ("neardup/cli/",),
    "run spec and parameter schema": ("neardup/params.py", "neardup/_params.py", "neardup/plan.py"),
}

_NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENCODING, tokenize.ENDMARKER}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers covered by docstrings in ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def code_lines(source: str) -> int:
    """Lines of ``source`` that hold a token of code outside a docstring."""
    skip = docstring_lines(ast.parse(source))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _NOT_CODE:
            continue
        lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in skip)
    return len(lines)


def count(rev: str) -> dict:
    """Code lines per group and per file at ``rev``."""
    files = [f for f in _git("ls-tree", "-r", "--name-only", rev, "neardup").split() if f.endswith(".py")]
    commit = _git("rev-parse", "--short", rev).strip()
    groups = {}
    for group, prefixes in GROUPS.items():
        per_file = {f: code_lines(_git("show", f"{rev}:{f}")) for f in files if f.startswith(prefixes)}
        groups[group] = {"lines": sum(per_file.values()), "files": per_file}
    return {"rev": rev, "commit": commit, "groups": groups,
            "total": sum(g["lines"] for g in groups.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revs", nargs="+", help="git revisions, e.g. 5cf0f87 HEAD")
    parser.add_argument("--out", type=Path, help="write the counts as JSON here")
    args = parser.parse_args(argv)
    results = [count(rev) for rev in args.revs]
    for r in results:
        print(r["commit"], ", ".join(f"{g} {v['lines']:,}" for g, v in r["groups"].items()),
              f"total {r['total']:,}")
    if args.out:
        args.out.write_text(json.dumps({"command": "python scripts/code_lines.py " + " ".join(args.revs),
                                        "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
