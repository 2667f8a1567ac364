"""New lint errors of a patch relative to the gold state (seed 001, "beyond pass/fail").

pyflakes (PyCQA) checks the non-test Python files either patch touches, once in the agent's state and
once in the gold state; the figure is how many of the agent's messages the gold state does not have
(compared as (file, message) pairs, without line numbers, which move with any edit). pyflakes only
parses: nothing of the item's code runs, so this is done on the host. Type checking is not done: a
type checker needs the project's dependencies, which the grader image does not install.

Hostile input: a file is read without following links and only up to MAX_LINT_FILE_BYTES (a larger
one, like one nested past the parser's limits, counts as one error: it cannot be checked).
"""

from __future__ import annotations

import ast
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from pyflakes import checker

MAX_LINT_FILE_BYTES = 2 * 1024 * 1024


def _read(path: Path) -> bytes | None:
    """The file's bytes; None when it is absent (deleted by the patch), b"" for what is not a regular
    file; raises ValueError when it is too large."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:  # a link (ELOOP) or unreadable: nothing to check
        return b""
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b""
        if info.st_size > MAX_LINT_FILE_BYTES:
            raise ValueError(f"over {MAX_LINT_FILE_BYTES} bytes")
        return handle.read(MAX_LINT_FILE_BYTES + 1)


def file_messages(tree: Path, relative: str) -> list[str]:
    """pyflakes' messages for one file of a state, without line numbers."""
    try:
        data = _read(tree / relative)
    except ValueError as err:
        return [f"not checked: {err}"]
    if not data:
        return []
    try:
        parsed = ast.parse(data, filename=relative)
    except SyntaxError as err:
        return [f"syntax error: {err.msg}"]
    except (RecursionError, MemoryError, ValueError):
        return ["not checked: the parser gave up (nested too deeply, or null bytes)"]
    try:
        found = checker.Checker(parsed, filename=relative)
    except RecursionError:
        return ["not checked: nested too deeply for pyflakes"]
    return sorted(message.message % message.message_args for message in found.messages)


def messages(tree: Path, paths: Iterable[str]) -> Counter:
    """(file, message) pairs of the Python files among `paths`, counted."""
    found: Counter = Counter()
    for relative in sorted(set(paths)):
        if relative.endswith(".py"):
            found.update((relative, message) for message in file_messages(tree, relative))
    return found


def new_errors(agent_tree: Path, gold_tree: Path, paths: Iterable[str], keep: Callable[[str], bool]) -> int:
    """Messages in the agent's state that the gold state does not have, over the files `keep` accepts
    among `paths` (the files either patch touches)."""
    checked = [p for p in set(paths) if keep(p)]
    return sum((messages(agent_tree, checked) - messages(gold_tree, checked)).values())
