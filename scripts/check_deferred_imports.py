"""Every import inside a function must say why it is deferred (issue 24).

The package imports at the top of each module; an import inside a function is allowed only to defer a
heavy library (Airflow, dbt, GX, docker...) or a module that pulls one in, and it carries its reason
as a comment `# deferred: <reason>` on the import's first line or in the comment lines right above it.
Prints each offending import as `path:line: module` and exits 1 when there is one.

Usage: python scripts/check_deferred_imports.py [PACKAGE_DIR]   (default plugins/argusic)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MARK = "deferred:"
# folders of data, not of the package: vendored files and the demo forge's repositories
NOT_THE_PACKAGE = {"vendor", "demo_projects", "demo_history"}


def _imported(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.ImportFrom):
        return "." * node.level + (node.module or "")
    return ", ".join(alias.name for alias in node.names)


def _explained(lines: list[str], lineno: int) -> bool:
    """The import at `lineno` (1-based) has the mark in its own line's comment or in the block of
    comment lines right above it."""
    if MARK in lines[lineno - 1].partition("#")[2]:
        return True
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        if MARK in lines[index]:
            return True
        index -= 1
    return False


def _statement_lists(node: ast.AST):
    """Every list of statements under `node` (bodies, else and finally blocks, handlers)."""
    for child in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(child, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def unexplained_imports(package: Path) -> list[str]:
    """`path:line: module` for each function-local import without a `# deferred:` reason. Imports
    that directly follow one another share the reason written above the first of them."""
    found: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        if NOT_THE_PACKAGE & set(path.parts):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines), filename=str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for block in _statement_lists(function):
                explained = False
                for node in block:
                    if not isinstance(node, ast.Import | ast.ImportFrom):
                        explained = False
                        continue
                    explained = explained or _explained(lines, node.lineno)
                    if not explained:
                        found.add(f"{path}:{node.lineno}: {_imported(node)}")
    return sorted(found, key=lambda entry: (entry.split(":")[0], int(entry.split(":")[1])))


def main(argv: list[str]) -> int:
    package = Path(argv[1]) if len(argv) > 1 else Path("plugins/argusic")
    if not package.is_dir():
        print(f"check_deferred_imports: no package folder at {package}", file=sys.stderr)
        return 2
    found = unexplained_imports(package)
    for entry in found:
        print(entry)
    if found:
        print(
            f"{len(found)} import(s) inside functions without a '# {MARK} <reason>' comment: move them"
            " to the top of the module, or say why the import must wait",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
