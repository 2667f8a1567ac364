"""Every import inside a function must say why it is deferred (issue 24).

The package imports at the top of each module; an import inside a function is allowed only to defer a
heavy library (Airflow, dbt, GX, docker...) or a module that pulls one in, and it carries its reason as
a comment `# deferred: <reason>` on the import's first line or on the line right above it. Prints each
offending import as `path:line: module` and exits 1 when there is one.

Usage: python scripts/check_deferred_imports.py [PACKAGE_DIR]   (default plugins/argusic)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MARK = "deferred:"


def _imported(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.ImportFrom):
        return "." * node.level + (node.module or "")
    return ", ".join(alias.name for alias in node.names)


def unexplained_imports(package: Path) -> list[str]:
    """`path:line: module` for each function-local import without a `# deferred:` reason."""
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        if "vendor" in path.parts:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines), filename=str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                own = lines[node.lineno - 1]
                above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
                if MARK in own.partition("#")[2] or (above.startswith("#") and MARK in above):
                    continue
                found.append(f"{path}:{node.lineno}: {_imported(node)}")
    # nested functions are walked twice (once for the outer function): report each import once
    return sorted(set(found), key=lambda entry: (entry.split(":")[0], int(entry.split(":")[1])))


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
