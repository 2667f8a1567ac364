"""Which files of a repository are *test files* (issue 13, seed 001).

The rule decides two things: how a merged PR's diff is split into the test patch (test files) and the
gold patch (the rest), and which paths of an agent's patch the grader drops before applying it (an agent
must not pass by editing the tests). A path (POSIX, relative to the repository root) is a test file when
any of these holds:

1. the seed's rule: a folder component is ``__tests__``; or the file name contains ``.test.`` or
   ``.spec.``; or a folder component is a snapshot or fixture folder (``__snapshots__``, ``snapshots``,
   ``__fixtures__``, ``fixtures``) or the name ends in ``.snap``;
2. the issue's Python names: ``test_*.py`` or ``*_test.py``;
3. Python's test plumbing: ``conftest.py`` anywhere (it changes how every test runs);
4. test folders: a folder component is ``tests`` or ``test`` (helpers and data beside the tests belong
   to them; splitting them from the tests would leave a test patch that cannot run alone);
5. the manifest's ``test_paths`` globs (``fnmatch`` on the whole path, ``**`` allowed).

Matching is case-sensitive, as git paths are. Paths are never resolved against a file system here.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

TEST_FOLDERS = frozenset({"__tests__", "tests", "test"})
SNAPSHOT_FIXTURE_FOLDERS = frozenset({"__snapshots__", "snapshots", "__fixtures__", "fixtures"})
_PYTHON_TEST_NAME = re.compile(r"^(test_.*\.py|.*_test\.py)$")


def is_test_path(path: str, extra_globs: Sequence[str] = ()) -> bool:
    """True when `path` is a test file by the rule in this module's docstring."""
    pure = PurePosixPath(path)
    folders, name = pure.parts[:-1], pure.name
    if any(part in TEST_FOLDERS or part in SNAPSHOT_FIXTURE_FOLDERS for part in folders):
        return True
    if ".test." in name or ".spec." in name or name.endswith(".snap"):
        return True
    if _PYTHON_TEST_NAME.match(name) or name == "conftest.py":
        return True
    return any(fnmatch.fnmatchcase(path, glob) for glob in extra_globs)


def split_paths(paths: Iterable[str], extra_globs: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(test paths, other paths), each sorted."""
    tests, others = [], []
    for path in paths:
        (tests if is_test_path(path, extra_globs) else others).append(path)
    return sorted(tests), sorted(others)
