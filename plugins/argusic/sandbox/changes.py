"""The agent's changes to the project in an install-and-run attempt, as a git-style patch (issue #14:
code similarity between attempts of one group, beside the score variance).

A repair attempt's patch is collected inside its container (``git diff --cached base``); an
install-and-run attempt has none, and the project folder may hold anything the agent left (a
virtualenv, ``node_modules``, build output), so the changes are computed here, on the host, after
the container is gone, against the pinned commit read from **our** repository (the mirror or the
attempt's single-commit copy; git never runs in the agent's folder, whose ``.git`` is the agent's):

- every file tracked at the commit (regular blobs; links and submodules are left out) that is
  missing from the project folder (deleted) or whose bytes differ (changed);
- every regular file the commit does not track (added), except in folders no agent writes code in
  (``SKIPPED_DIRS``, ``*.egg-info``; in such a folder the commit tracks, only its tracked files count)
  and paths the commit's top-level ``.gitignore`` ignores
  (pathspec's gitwildmatch, the rules git applies);
- text (UTF-8) files as unified diffs with ``diff --git a/<p> b/<p>`` headers (difflib, 3 lines of
  context); other files as ``Binary files … differ``.

The project folder is hostile: nothing is followed (the walk opens every folder with O_NOFOLLOW
relative to its parent), only regular files with one link are read, each file at most
``MAX_FILE_BYTES`` (larger ones are named, not diffed), at most ``MAX_EXAMINED`` entries looked at,
``MAX_CHANGED_FILES`` files and ``MAX_PATCH_BYTES`` of patch. The commit's blobs are the project's too:
each is sized (``ls-tree -l``) before it is read, and one over ``MAX_FILE_BYTES`` is named, not read;
the ``.gitignore`` is read only up to ``MAX_IGNORE_BYTES`` and ``MAX_IGNORE_PATTERNS`` patterns (a
pattern longer than ``MAX_PATTERN_CHARS`` or with more than ``MAX_PATTERN_WILDCARDS`` wildcards is
dropped: regular-expression backtracking), and the whole collection stops at ``DEADLINE_SECONDS``.
Each bound that bites is recorded. The patch goes through the attempt's
redactions (a per-run key never lands) and is written to ``<out>/changes.patch`` (a harness-written
file of that name is removed first: the name is ours). What was refused is returned to be logged;
the changes are a hint's input, never the score's.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import logging
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from argusic.sandbox.landing import StreamRedactor

log = logging.getLogger(__name__)

CHANGES_FILE = "changes.patch"
MAX_FILE_BYTES = 1024**2
MAX_PATCH_BYTES = 8 * 1024**2  # the grader's cap for a repair patch
MAX_CHANGED_FILES = 200
MAX_EXAMINED = 100_000
MAX_DEPTH = 32
MAX_IGNORE_BYTES = 64 * 1024
MAX_IGNORE_PATTERNS = 1000
MAX_PATTERN_CHARS = 256
MAX_PATTERN_WILDCARDS = 4  # runs of `*`, and `?` and `[`: backtracking grows as a power of these
DEADLINE_SECONDS = 120.0
CONTEXT_LINES = 3
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "node_modules", "__pycache__", ".tox",
        ".nox", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".eggs", "build", "dist",
        "site-packages", ".cache", ".npm", ".cargo", "target",
    }
)  # fmt: skip
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)


class ChangesError(RuntimeError):
    """The pinned commit could not be read from our repository (our tooling's problem)."""


@dataclass
class ChangesReport:
    patch: bytes = b""
    files: list[str] = field(default_factory=list)  # changed, added or deleted, in patch order
    refused: list[str] = field(default_factory=list)  # one sentence each, for the log
    examined: int = 0


class _Deadline:
    """When the collection must stop (time.monotonic)."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0


def _git_env() -> dict[str, str]:
    """No configuration but ours: git reads no system or global file and never prompts."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "HOME": os.devnull,
    }


def _git(repo: Path, *args: str, data: bytes | None = None, timeout: float = 300) -> bytes:
    env = _git_env()
    done = subprocess.run(
        ["git", f"--git-dir={repo}", *args], input=data, env=env, capture_output=True,
        timeout=max(1.0, timeout),
    )  # fmt: skip
    if done.returncode != 0:
        detail = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise ChangesError(f"git {args[0]} in {repo}: {detail[:300]}")
    return done.stdout


def _git_dir(repo: Path) -> Path:
    """A bare repository is its own git dir; a work tree's is its .git."""
    return repo / ".git" if (repo / ".git").is_dir() else repo


def tracked_blobs(repo: Path, commit: str, timeout: float = 300) -> dict[str, tuple[str, int]]:
    """Path → (blob sha, size in bytes) of every regular file tracked at `commit` (links and
    submodules left out): sized before anything is read."""
    out = _git(_git_dir(repo), "ls-tree", "-r", "-l", "-z", "--full-tree", commit, timeout=timeout)
    files: dict[str, tuple[str, int]] = {}
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, sha, size = meta.decode().split()
        if kind == "blob" and mode in ("100644", "100755"):
            files[path.decode("utf-8", errors="surrogateescape")] = (sha, int(size))
    return files


def tracked_files(repo: Path, commit: str) -> dict[str, str]:
    """Path → blob sha of every regular file tracked at `commit` (links and submodules left out)."""
    return {path: sha for path, (sha, _size) in tracked_blobs(repo, commit).items()}


def _blob(repo: Path, sha: str, timeout: float = 300) -> bytes:
    """A blob whose size was checked first (tracked_blobs): never one over the caps."""
    return _git(_git_dir(repo), "cat-file", "blob", sha, timeout=timeout)


_WILDCARDS = re.compile(r"\*+|\?|\[")


def ignore_rules(text: bytes, refused: list[str]) -> pathspec.PathSpec:
    """The .gitignore's rules, bounded (module docstring); what was dropped is added to `refused`."""
    if len(text) > MAX_IGNORE_BYTES:
        refused.append(f".gitignore is {len(text)} bytes: only its first {MAX_IGNORE_BYTES} read")
        text = text[:MAX_IGNORE_BYTES]
    lines = text.decode("utf-8", errors="replace").splitlines()
    kept: list[str] = []
    dropped = 0
    for line in lines:
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        if len(pattern) > MAX_PATTERN_CHARS or len(_WILDCARDS.findall(pattern)) > MAX_PATTERN_WILDCARDS:
            dropped += 1
            continue
        if len(kept) >= MAX_IGNORE_PATTERNS:
            refused.append(f".gitignore holds more than {MAX_IGNORE_PATTERNS} patterns: the rest not applied")
            break
        kept.append(line)
    if dropped:
        refused.append(
            f".gitignore: {dropped} pattern(s) longer than {MAX_PATTERN_CHARS} characters or with more "
            f"than {MAX_PATTERN_WILDCARDS} wildcards not applied"
        )
    return pathspec.PathSpec.from_lines("gitwildmatch", kept)


@contextlib.contextmanager
def _blob_stream(repo: Path, sha: str):
    """A blob's bytes as a stream (its head read, the rest never): the git process ends with it."""
    proc = subprocess.Popen(
        ["git", f"--git-dir={_git_dir(repo)}", "cat-file", "blob", sha],
        env=_git_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        yield proc.stdout
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _read_regular(dir_fd: int, name: str, limit: int) -> bytes | str:
    """The bytes of a regular file with one link, or why it is not read."""
    try:
        fd = os.open(name, _OPEN_FILE, dir_fd=dir_fd)
    except OSError as err:
        return "is a link: not followed" if err.errno == errno.ELOOP else f"cannot be opened ({err.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file"
        if info.st_nlink != 1:
            return f"has {info.st_nlink} hard links"
        if info.st_size > limit:
            return f"is over {limit} bytes: named, not diffed"
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 16):
            total += len(chunk)
            if total > limit:
                return f"grew over {limit} bytes while it was read"
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _skipped(folder: str) -> bool:
    return folder in SKIPPED_DIRS or folder.endswith(".egg-info")


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass
class _Walk:
    tracked: dict[str, str]
    tracked_dirs: set[str]
    ignore: object | None
    report: ChangesReport
    deadline: _Deadline
    changed: dict[str, bytes] = field(default_factory=dict)  # rel path -> bytes now (changed or added)
    seen: set[str] = field(default_factory=set)  # every regular file looked at
    stopped: bool = False

    def ignored(self, rel: str) -> bool:
        return self.ignore is not None and self.ignore.match_file(rel)

    def visit(self, dir_fd: int, name: str, rel: str) -> None:
        sha = self.tracked.get(rel)
        # a new file is a change unless ignored, or in a folder of installs and builds (a tracked
        # `build/` is walked for its tracked files only: `pip install .` writes build/lib there)
        if sha is None and (self.ignored(rel) or any(_skipped(part) for part in rel.split("/")[:-1])):
            return
        self.seen.add(rel)
        read = _read_regular(dir_fd, name, MAX_FILE_BYTES)
        if isinstance(read, str):
            self.report.refused.append(f"{rel} {read}")
        elif sha is None or _git_blob_sha(read) != sha:
            if len(self.changed) >= MAX_CHANGED_FILES:
                self.report.refused.append(f"more than {MAX_CHANGED_FILES} files changed: {rel} left out")
            else:
                self.changed[rel] = read


def _walk(dir_fd: int, folder: tuple[str, ...], depth: int, walk: _Walk) -> None:
    with os.scandir(dir_fd) as entries:
        names = sorted(e.name for e in entries)
    for name in names:
        if walk.stopped:
            return
        if walk.deadline.expired():
            walk.report.refused.append(
                f"the collection passed its {walk.deadline.seconds:g} s deadline: stopped there"
            )
            walk.stopped = True
            return
        walk.report.examined += 1
        if walk.report.examined > MAX_EXAMINED:
            if not walk.stopped:
                walk.report.refused.append(
                    f"more than {MAX_EXAMINED} entries in the project folder: stopped there"
                )
            walk.stopped = True
            return
        rel = "/".join((*folder, name))
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            ours = rel in walk.tracked_dirs
            skipped = _skipped(name) or walk.ignored(rel + "/")
            if (skipped and not ours) or depth + 1 >= MAX_DEPTH:
                continue
            try:
                sub = os.open(name, _OPEN_DIR, dir_fd=dir_fd)
            except OSError:
                continue  # replaced by a link since the stat: not entered
            try:
                _walk(sub, (*folder, name), depth + 1, walk)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            walk.visit(dir_fd, name, rel)
        # links, FIFOs, sockets, devices: never followed or read


def _diff(path: str, before: bytes | None, after: bytes | None) -> bytes:
    zero = "0" * 40
    a_sha = zero if before is None else _git_blob_sha(before)
    b_sha = zero if after is None else _git_blob_sha(after)
    head = f"diff --git a/{path} b/{path}\n"
    if before is None:
        head += f"new file mode 100644\nindex {a_sha}..{b_sha}\n"
    elif after is None:
        head += f"deleted file mode 100644\nindex {a_sha}..{b_sha}\n"
    else:
        head += f"index {a_sha}..{b_sha} 100644\n"
    try:
        a = (before or b"").decode("utf-8").splitlines(keepends=True)
        b = (after or b"").decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        left = "/dev/null" if before is None else f"a/{path}"
        right = "/dev/null" if after is None else f"b/{path}"
        return (head + f"Binary files {left} and {right} differ\n").encode()
    lines = difflib.unified_diff(
        a,
        b,
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile="/dev/null" if after is None else f"b/{path}",
        n=CONTEXT_LINES,
    )
    body = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return (head + body).encode("utf-8")


def collect_changes(
    repo: Path, commit: str, project: Path, deadline_seconds: float = DEADLINE_SECONDS
) -> ChangesReport:
    """The project folder's changes against `commit` of our repository `repo` (module docstring).
    Raises ChangesError when the commit cannot be read (subprocess.TimeoutExpired past the
    deadline); never on what the project folder holds."""
    deadline = _Deadline(deadline_seconds)
    blobs = tracked_blobs(repo, commit, timeout=deadline.left())
    tracked = {path: sha for path, (sha, _size) in blobs.items()}
    tracked_dirs = {"/".join(p.split("/")[:i]) for p in tracked for i in range(1, p.count("/") + 1)}
    report = ChangesReport()
    ignore = None
    if ".gitignore" in blobs:
        sha, size = blobs[".gitignore"]
        if size > MAX_IGNORE_BYTES:  # read no more of it than is used
            report.refused.append(f".gitignore is {size} bytes: only its first {MAX_IGNORE_BYTES} read")
            with _blob_stream(repo, sha) as head:
                text = head.read(MAX_IGNORE_BYTES)
        else:
            text = _blob(repo, sha, timeout=deadline.left())
        ignore = ignore_rules(text, report.refused)
    try:
        root = os.open(project, _OPEN_DIR)
    except OSError as err:
        report.refused.append(f"the project folder cannot be opened without following links ({err.strerror})")
        return report
    walk = _Walk(tracked, tracked_dirs, ignore, report, deadline)
    try:
        _walk(root, (), 0, walk)
    finally:
        os.close(root)
    # deleted: tracked and not seen, only when the walk looked everywhere
    deleted = [] if walk.stopped else [p for p in tracked if p not in walk.seen]
    parts: list[bytes] = []
    size = 0
    for path in sorted(set(walk.changed) | set(deleted)):
        if deadline.expired():
            report.refused.append(
                f"the collection passed its {deadline.seconds:g} s deadline: {path} and the rest left out"
            )
            break
        before = None
        if path in blobs:
            sha, blob_size = blobs[path]
            if blob_size > MAX_FILE_BYTES:  # sized before it is read: never held whole
                what = "deleted" if path not in walk.changed else "changed"
                report.refused.append(
                    f"{path} ({what}): its committed blob is {blob_size} bytes, over {MAX_FILE_BYTES}: "
                    "named, not diffed"
                )
                continue
            before = _blob(repo, sha, timeout=deadline.left())
        part = _diff(path, before, walk.changed.get(path))
        if size + len(part) > MAX_PATCH_BYTES:
            report.refused.append(
                f"the patch would pass {MAX_PATCH_BYTES} bytes: {path} and the rest left out"
            )
            break
        parts.append(part)
        size += len(part)
        report.files.append(path)
    report.patch = b"".join(parts)
    return report


def land_changes(
    attempt_id: str,
    repo: Path,
    commit: str,
    project: Path,
    out_dir: Path,
    redactions: Sequence[tuple[bytes, bytes]] = (),
) -> ChangesReport | None:
    """Write ``<out_dir>/changes.patch`` (empty: no change) after removing a harness-written one;
    None (logged) when the changes could not be collected. Never raises: the changes are a hint's
    input, and the attempt's measurement stands without them."""
    target = Path(out_dir) / CHANGES_FILE
    with contextlib.suppress(FileNotFoundError):
        if target.is_symlink() or target.exists():
            log.warning(
                "%s: out/%s written by the harness removed: the name is ours", attempt_id, CHANGES_FILE
            )
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
    try:
        report = collect_changes(repo, commit, project)
    except (ChangesError, OSError, subprocess.TimeoutExpired) as err:
        log.warning("%s: changes not collected: %s", attempt_id, err)
        return None
    redactor = StreamRedactor(redactions)
    data = redactor.feed(report.patch) + redactor.flush()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    report.patch = data
    for problem in report.refused[:20]:
        log.warning("%s: changes: %s", attempt_id, problem)
    return report
