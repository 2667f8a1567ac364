"""The spec track's checker (seed 001): every new name the item's tests use is in its spec.

A spec-track item gives the agent an interface spec (``spec_section.md``) because its tests use names
the base does not have: a new module, function, class, method, keyword argument or command-line flag.
An agent that fixes the behaviour under other names fails those tests, so the spec must name every one.
This module finds them with Python's ``ast`` and says which the spec leaves out, each with file:line.

What counts as a use, in the test files the item's test patch touches (read in the state base + test
patch, so a helper the patch adds is seen too):

* ``import pkg.mod`` / ``from pkg.mod import name``: the module and the name (``module``, ``name``);
* an attribute read on one of the project's modules or classes, through any alias
  (``pkg.new_function``, ``Class.new_method``, ``obj.new_attr`` for ``obj = Class(...)``) (``name``);
* a keyword argument of a call to one of the project's functions or classes (``keyword``);
* a string literal that is a command-line flag (``--flag`` or ``--flag=...``) (``cli_flag``).

"Project" is every module of the base's non-test Python files (a ``src/`` folder is a layout, not a
package). Standard-library and third-party imports are not the project's and are never reported.
A use is *new* when the base does not have it: the module file is absent, the name is not bound at
the module's top level (definitions, assignments, imports, ``__all__``, submodules), the class has no
such member (class body, ``self.x = ...`` in its methods, members of project base classes), the
function has no such parameter (and no ``**kwargs``), or the flag appears nowhere in the base's code.
Where the base cannot tell (a ``from x import *``, a class with a non-project base), nothing is
reported: the checker reports what is surely missing, it does not guess.

A new use is *named* when the text (the interface spec; the problem statement for a basic-track item,
which has none) contains it: a name or keyword as a whole identifier (its last dotted part), a module
as its dotted name or its file path (``pkg/mod.py``), a flag as written.
"""

from __future__ import annotations

import ast
import builtins
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from argusic.repair import paths as test_paths
from argusic.repair import testrun
from argusic.repair.items import Item, ItemError, repository_of

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_FILES = 5000
FLAG = re.compile(r"^(--[A-Za-z][A-Za-z0-9_-]*)(=.*)?$", re.S)
_BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True)
class Use:
    """One new name the tests use: kind (module, name, keyword, cli_flag), its dotted name, where."""

    kind: str
    name: str
    file: str
    line: int

    def describe(self) -> str:
        what = {"module": "module", "name": "name", "keyword": "keyword argument", "cli_flag": "CLI flag"}
        return f"{self.file}:{self.line}: {what.get(self.kind, self.kind)} {self.name}"


@dataclass
class SpecReport:
    """What the checker found on one item: every new use, and those the text does not name."""

    item_id: str
    track: str
    checked_against: str  # "interface_spec" or "problem_statement"
    new_uses: list[Use] = field(default_factory=list)
    missing: list[Use] = field(default_factory=list)
    problem: str | None = None  # the check could not be made (base not exported...)

    @property
    def ok(self) -> bool:
        return self.problem is None and not self.missing

    def problems(self) -> list[str]:
        """One line per missing name (first use; others counted), for the validation record."""
        if self.problem:
            return [f"spec check not made: {self.problem}"]
        where = "spec" if self.checked_against == "interface_spec" else "statement (basic track: no spec)"
        return [f"not in the {where}: {use.describe()}" for use in self.missing]

    def to_dict(self) -> dict:
        def rows(uses: list[Use]) -> list[dict]:
            return [{"kind": u.kind, "name": u.name, "file": u.file, "line": u.line} for u in uses]

        return {
            "item_id": self.item_id,
            "track": self.track,
            "checked_against": self.checked_against,
            "new_uses": rows(self.new_uses),
            "missing": rows(self.missing),
            "problem": self.problem,
            "ok": self.ok,
        }


# ---------------------------------------------------------------------------------------------------
# The base's project: modules and what they bind


def _parse(path: Path) -> ast.Module | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
        return None


def module_name(relative: str) -> str | None:
    """The dotted module of a .py path (``src/`` dropped, ``__init__`` is its package)."""
    parts = list(PurePosixPath(relative).parts)
    if not parts or not parts[-1].endswith(".py"):
        return None
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    parts[-1] = parts[-1][: -len(".py")]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def python_files(tree: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(tree.rglob("*.py")):
        relative = path.relative_to(tree).as_posix()
        if any(part.startswith(".") for part in PurePosixPath(relative).parts):
            continue
        out.append(relative)
        if len(out) >= MAX_FILES:
            break
    return out


@dataclass
class ClassInfo:
    members: set[str]
    bases: list[str]  # dotted names as resolved in the class's module ("" when not resolvable)
    init_params: set[str] | None  # None: no own __init__
    init_open: bool  # own __init__ takes **kwargs


@dataclass
class ModuleInfo:
    names: set[str]
    star: bool  # has ``from x import *``: any name may be bound
    functions: dict[str, tuple[set[str], bool]]  # name -> (parameters, takes **kwargs)
    classes: dict[str, ClassInfo]
    aliases: dict[str, str]  # name bound by an import -> dotted target


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], bool]:
    a = fn.args
    names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    return names, a.kwarg is not None


def _import_aliases(body: Iterable[ast.stmt], package: str, is_package: bool) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node.module, node.level, package, is_package)
            if source is None:
                continue
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
    return aliases


def _absolute(module: str | None, level: int, current: str, is_package: bool) -> str | None:
    """The absolute module of an import in module `current` (relative imports resolved)."""
    if level == 0:
        return module
    parts = current.split(".") if current else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    if module:
        parts.append(module)
    return ".".join(parts) or None


def module_info(tree: ast.Module, name: str, is_package: bool) -> ModuleInfo:
    info = ModuleInfo(set(), False, {}, {}, _import_aliases(tree.body, name, is_package))
    info.names |= set(info.aliases)
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            info.names.add(node.name)
            info.functions[node.name] = _params(node)
        elif isinstance(node, ast.ClassDef):
            info.names.add(node.name)
            info.classes[node.name] = _class_info(node, info.aliases, name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        info.names.add(sub.id)
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                info.names |= {
                    e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)
                    and isinstance(e.value, str)
                }  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            info.star = True
    return info


def _top_level(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Top-level statements, looking inside if/try/with blocks (conditional definitions)."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With | ast.TryStar):
            for block in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, block, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                yield from _top_level(handler.body)


def _class_info(node: ast.ClassDef, aliases: dict[str, str], module: str) -> ClassInfo:
    members: set[str] = set()
    init: tuple[set[str], bool] | None = None
    for item in _top_level(node.body):
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            members.add(item.name)
            if item.name == "__init__":
                init = _params(item)
            for sub in ast.walk(item):  # self.x = ... in any method
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    members.add(sub.attr)
        elif isinstance(item, ast.ClassDef):
            members.add(item.name)
        elif isinstance(item, ast.Assign | ast.AnnAssign):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    members.add(target.id)
                    if target.id == "__slots__":
                        members |= {
                            e.value for e in getattr(item.value, "elts", []) if isinstance(e, ast.Constant)
                            and isinstance(e.value, str)
                        }  # fmt: skip
    bases = []
    for base in node.bases:
        dotted = _dotted(base)
        if dotted is None:
            bases.append("")
            continue
        head, _, rest = dotted.partition(".")
        if head in aliases:
            bases.append(aliases[head] + (f".{rest}" if rest else ""))
        elif head in _BUILTIN_NAMES and not rest:
            bases.append(f"builtins.{head}")
        else:
            bases.append(f"{module}.{dotted}")
    init_params, init_open = init if init is not None else (None, False)
    return ClassInfo(members, bases, init_params, init_open)


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class Project:
    """The base's modules (non-test Python files) and what each binds."""

    def __init__(self, tree: Path, test_roots: Iterable[str] = ()) -> None:
        self.tree = tree
        self.files: dict[str, str] = {}  # module -> relative path
        roots = list(test_roots)
        for relative in python_files(tree):
            if test_paths.is_test_path(relative) or any(
                relative == r or relative.startswith(r.rstrip("/") + "/") for r in roots
            ):
                continue
            name = module_name(relative)
            if name and name not in self.files:
                self.files[name] = relative
        self.tops = {m.split(".")[0] for m in self.files}
        self._infos: dict[str, ModuleInfo | None] = {}
        self.source_text = ""  # the base's code, for flags
        chunks = []
        for relative in self.files.values():
            try:
                chunks.append((tree / relative).read_text(errors="replace")[:MAX_FILE_BYTES])
            except OSError:
                continue
        self.source_text = "\n".join(chunks)

    def is_project(self, dotted: str) -> bool:
        return dotted.split(".")[0] in self.tops

    def is_module(self, dotted: str) -> bool:
        return dotted in self.files

    def info(self, module: str) -> ModuleInfo | None:
        if module not in self._infos:
            relative = self.files.get(module)
            parsed = _parse(self.tree / relative) if relative else None
            self._infos[module] = (
                module_info(parsed, module, relative.endswith("__init__.py")) if parsed and relative else None
            )
        return self._infos[module]

    def resolve(self, dotted: str, depth: int = 0) -> tuple[str, object] | None:
        """What a dotted project name is in the base: ("module", name), ("class", ClassInfo),
        ("function", (params, open)), ("other", None), ("unknown", None) when the base cannot tell,
        or None when the base does not have it."""
        if depth > 8:
            return ("unknown", None)
        if self.is_module(dotted):
            return ("module", dotted)
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if not self.is_module(module):
                continue
            rest = parts[cut:]
            return self._member_of_module(module, rest, depth)
        return None

    def _member_of_module(self, module: str, rest: list[str], depth: int) -> tuple[str, object] | None:
        info = self.info(module)
        if info is None:
            return ("unknown", None)
        head, tail = rest[0], rest[1:]
        if head in info.aliases and head not in info.classes and head not in info.functions:
            target = info.aliases[head]
            if not self.is_project(target):
                return ("unknown", None)
            found = self.resolve(".".join([target, *tail]), depth + 1)
            return found
        if f"{module}.{head}" in self.files and head not in info.names:
            return self.resolve(".".join([f"{module}.{head}", *tail]), depth + 1)
        if head not in info.names:
            return ("unknown", None) if info.star else None
        if head in info.classes:
            return self._member_of_class(info.classes[head], tail, depth)
        if tail:
            return ("unknown", None)  # an attribute of a function or a value: not followed
        if head in info.functions:
            return ("function", info.functions[head])
        return ("other", None)

    def _member_of_class(self, cls: ClassInfo, tail: list[str], depth: int) -> tuple[str, object] | None:
        if not tail:
            return ("class", cls)
        name = tail[0]
        if name in cls.members or name.startswith("__"):
            return ("unknown", None) if tail[1:] else ("other", None)
        for base in cls.bases:
            if base.startswith("builtins.") and isinstance(getattr(builtins, base[9:], None), type):
                if hasattr(getattr(builtins, base[9:]), name):  # ValueError's args, and the like
                    return ("unknown", None) if tail[1:] else ("other", None)
                continue
            if not base or not self.is_project(base):
                return ("unknown", None)
            found = self.resolve(base, depth + 1)
            if found is None or found[0] != "class":
                return ("unknown", None)
            member = self._member_of_class(found[1], tail, depth + 1)  # type: ignore[arg-type]
            if member is not None:
                return member
        return None

    def call_params(self, dotted: str) -> tuple[set[str], bool] | None:
        """The parameters a call of `dotted` accepts in the base, (names, open); None when unknown."""
        found = self.resolve(dotted)
        if found is None:
            return None
        kind, value = found
        if kind == "function":
            return value  # type: ignore[return-value]
        if kind == "class":
            cls: ClassInfo = value  # type: ignore[assignment]
            if cls.init_params is not None:
                return (cls.init_params, cls.init_open)
            if all(b.startswith("builtins.") for b in cls.bases):
                return (set(), False)  # object's or a builtin exception's __init__: no keywords
        return None


# ---------------------------------------------------------------------------------------------------
# The tests' uses


class _Uses(ast.NodeVisitor):
    def __init__(self, project: Project, helpers: dict[str, dict[str, str]], file: str, module: str) -> None:
        self.project = project
        self.helpers = helpers  # test-side module -> its import aliases (tests/__init__.py and the like)
        self.file = file
        self.module = module
        self.is_package = file.endswith("__init__.py")
        self.scopes: list[dict[str, str]] = [{}]  # name -> ("mod:"|"obj:"|"inst:") + dotted
        self.uses: list[Use] = []
        self.classes: list[str] = []
        self.graded: set[str] | None = None  # test ids whose bodies count; None: every test's
        self.test_ids: set[str] = set()  # every test function's id met (to see if `graded` matches)
        self.skipped = False

    # bindings
    def bind(self, name: str, value: str) -> None:
        self.scopes[-1][name] = value

    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _target(self, dotted: str) -> str | None:
        """A dotted name as the project sees it, following a test helper's re-export once."""
        if self.project.is_project(dotted):
            return dotted
        module, _, name = dotted.rpartition(".")
        alias = self.helpers.get(module, {}).get(name)
        if alias and self.project.is_project(alias):
            return alias
        return None

    def use(self, kind: str, name: str, node: ast.AST) -> None:
        last = name.rsplit(".", 1)[-1]
        if kind == "name" and last.startswith("__") and last.endswith("__"):
            return  # __name__, __module__, __doc__...: every module and class has them
        self.uses.append(Use(kind, name, self.file, getattr(node, "lineno", 0)))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            target = self._target(alias.name)
            if target is None:
                continue
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                if not self.project.is_module(".".join(parts[:i])):
                    self.use("module", ".".join(parts[:i]), node)
                    break
            if alias.asname:
                self.bind(alias.asname, "mod:" + target)
            else:
                self.bind(parts[0], "mod:" + parts[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = _absolute(node.module, node.level, self.module, self.is_package)
        if source is None:
            return
        for alias in node.names:
            if alias.name == "*":
                continue
            full = f"{source}.{alias.name}"
            target = self._target(full)
            if target is None:
                continue
            if self.project.is_project(source) and not self.project.is_module(source):
                parts = source.split(".")
                for i in range(1, len(parts) + 1):
                    if not self.project.is_module(".".join(parts[:i])):
                        self.use("module", ".".join(parts[:i]), node)
                        break
                self.bind(alias.asname or alias.name, "obj:" + target)
                self.use("name", target, node)
                continue
            found = self.project.resolve(target)
            if found is None:
                self.use("name", target, node)
                self.bind(alias.asname or alias.name, "obj:" + target)
            else:
                self.bind(alias.asname or alias.name, ("mod:" if found[0] == "module" else "obj:") + target)

    def _scoped(self, node: ast.AST) -> None:
        self.scopes.append({})
        self.generic_visit(node)
        self.scopes.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self._scoped(node)
        self.classes.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name.startswith("test") and len(self.scopes) == 1 + len(self.classes):
            owner = ".".join([self.module, *self.classes])
            test_id = f"{owner}::{node.name}"
            self.test_ids.add(test_id)
            if self.graded is not None and test_id not in self.graded:
                self.skipped = True
                return  # a test the item does not grade (another topic's, set aside): not its business
        self._scoped(node)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _scoped

    def _expr_target(self, node: ast.expr) -> str | None:
        """The binding an expression stands for: a project module/object/instance, else None."""
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            base = self._expr_target(node.value)
            if base is None:
                return None
            kind, dotted = base.split(":", 1)
            if kind == "inst":
                return None  # an attribute of an instance: its type is not followed
            return "obj:" + f"{dotted}.{node.attr}"
        if isinstance(node, ast.Call):
            callee = self._expr_target(node.func)
            if callee and callee.startswith("obj:"):
                dotted = callee[4:]
                found = self.project.resolve(dotted)
                if found is not None and found[0] == "class":
                    return "inst:" + dotted
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        value = self._expr_target(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if value is not None and value.startswith("inst:"):
                    self.bind(target.id, value)
                elif target.id in self.scopes[-1]:
                    del self.scopes[-1][target.id]

    def visit_Attribute(self, node: ast.Attribute) -> None:
        base = self._expr_target(node.value)
        if base is not None:
            kind, dotted = base.split(":", 1)
            full = f"{dotted}.{node.attr}"
            if kind in ("mod", "obj") and self.project.is_project(dotted):
                base_found = self.project.resolve(dotted)
                # an attribute of a name the base lacks is new too; of one it cannot tell, skipped
                if base_found is None or (
                    base_found[0] in ("module", "class") and self.project.resolve(full) is None
                ):
                    self.use("name", full, node)
            elif kind == "inst":
                found = self.project.resolve(dotted)
                if found is not None and found[0] == "class" and self.project.resolve(full) is None:
                    self.use("name", full, node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        callee = self._expr_target(node.func)
        if callee and callee.startswith("obj:") and self.project.is_project(callee[4:]):
            dotted = callee[4:]
            keywords = [k.arg for k in node.keywords if k.arg]
            if keywords:
                known = self.project.resolve(dotted)
                params = self.project.call_params(dotted) if known is not None else (set(), False)
                if params is not None:
                    names, open_ = params
                    for word in keywords:
                        if known is None or (word not in names and not open_):
                            self.use("keyword", f"{dotted}({word}=)", node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) <= 200:
            match = FLAG.match(node.value)
            if match and not re.search(
                rf"(?<![\w-]){re.escape(match.group(1))}(?![\w-])", self.project.source_text
            ):
                self.use("cli_flag", match.group(1), node)


def test_uses(
    project: Project, tree: Path, test_files: Iterable[str], graded: Iterable[str] | None = None
) -> list[Use]:
    """Every new use (module, name, keyword, flag) in the test files, one per (kind, name): its first.
    `graded`: the item's fail-to-pass and pass-to-pass test ids; the bodies of the other test functions
    (another topic's tests in a split item, tests set aside) are left out, unless no test id of the files
    matches one of them (ids of another form: then every test counts, to be safe)."""
    keep = {re.sub(r"\[.*\]$", "", t) for t in graded} if graded is not None else None
    helpers: dict[str, dict[str, str]] = {}
    for relative in python_files(tree):
        if relative.endswith("__init__.py") or relative.endswith("conftest.py"):
            name = module_name(relative)
            parsed = _parse(tree / relative)
            if name and parsed and name not in project.files:
                helpers[name] = _import_aliases(parsed.body, name, relative.endswith("__init__.py"))
    parsed_files = []
    for relative in sorted(set(test_files)):
        parsed = _parse(tree / relative) if relative.endswith(".py") else None
        if parsed is not None:
            parsed_files.append((relative, parsed))

    def visit(only: set[str] | None) -> tuple[list[Use], set[str]]:
        uses, ids = [], set()
        for relative, parsed in parsed_files:
            visitor = _Uses(project, helpers, relative, module_name(relative) or "")
            visitor.graded = only
            visitor.visit(parsed)
            uses += visitor.uses
            ids |= visitor.test_ids
        return uses, ids

    uses, ids = visit(keep)
    if keep and not (ids & keep):  # the ids are of another form: every test counts
        uses, _ = visit(None)
    seen: dict[tuple[str, str], Use] = {}
    for use in uses:
        seen.setdefault((use.kind, use.name), use)
    return sorted(seen.values(), key=lambda u: (u.file, u.line, u.kind, u.name))


# ---------------------------------------------------------------------------------------------------
# Named in the text?


def named(use: Use, text: str) -> bool:
    def word(w: str) -> bool:
        return re.search(rf"(?<![A-Za-z0-9_]){re.escape(w)}(?![A-Za-z0-9_])", text) is not None

    if use.kind == "cli_flag":
        return re.search(rf"(?<![\w-]){re.escape(use.name)}(?![\w-])", text) is not None
    if use.kind == "module":
        path = use.name.replace(".", "/")
        return word(use.name) or any(p in text for p in (f"{path}.py", f"{path}/"))
    if use.kind == "keyword":
        return word(use.name.rsplit("(", 1)[1].rstrip("=)"))
    return word(use.name.rsplit(".", 1)[-1])


def check_trees(
    base: Path, with_tests: Path, test_files: Iterable[str], text: str, graded: Iterable[str] | None = None
) -> tuple[list[Use], list[Use]]:
    """(new uses, those `text` does not name) of the test files, base and base + test patch given;
    `graded` as in ``test_uses``."""
    files = list(test_files)
    uses = test_uses(Project(base, files), with_tests, files, graded)
    return uses, [u for u in uses if not named(u, text)]


def check_item(item: Item, git_dir: Path | None = None) -> SpecReport:
    """The check on a built item: its base exported, the test patch applied, against its spec (or, on
    the basic track, its statement)."""
    spec = item.interface_spec is not None
    report = SpecReport(item.item_id, item.track, "interface_spec" if spec else "problem_statement")
    work = testrun.real_temp_dir("argusic-spec-check-")
    try:
        try:
            git_dir = git_dir or repository_of(item)
            testrun.export_base(git_dir, item.base, work / "base")
            testrun.materialise(
                git_dir,
                item.base,
                [("test_patch", item.test_patch.encode(errors="surrogateescape"), ())],
                work / "with_tests",
            )
        except (testrun.StateError, ItemError) as err:
            report.problem = str(err)[:500]
            return report
        text = item.interface_spec if spec else item.problem_statement
        report.new_uses, report.missing = check_trees(
            work / "base",
            work / "with_tests",
            item.test_files,
            text,
            [*item.fail_to_pass, *item.pass_to_pass],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report
