"""Landing /out: copy what an attempt left in its output area into a folder the orchestrator owns,
trusting nothing in it.

The output area is written by a hostile project or agent. Once its container is gone, every entry
is looked at without following links (``lstat``, then ``open`` with ``O_NOFOLLOW | O_NONBLOCK`` and
``fstat`` on the open file, which must be the same inode): only directories and regular files with a
single link are taken, each under a size cap, under a total cap and a cap on the number of entries.
A symbolic link, hard link, FIFO, socket or device, or anything over a cap, is never read: it is
named in a refusal (``log.txt is a symbolic link``) that makes the attempt invalid. Everything else
is copied in 1 MiB chunks (bounded memory whatever the size), with the values to redact (the
attempt's model key) replaced on the way, also across chunk boundaries. Everything downstream (the
run record, the collectors, the evidence store) reads only the landed copies.

``land_matching`` lands, by the same machinery, the files of the project folder that match a task's
artifact globs (``argusic.core.tasks``) into ``out/artifacts/``: hints' input, never the agent's
evidence, so what it refuses is named and counted but does not make the attempt invalid.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from argusic.core.settings import orchestrator_config

CHUNK = 1 << 20
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SHOWN_REFUSALS = 3  # the invalid reason names this many entries, then counts the rest
ARTIFACTS_FOLDER = "artifacts"  # under the attempt's out/: the project's files matching the task's globs
# Entries of the project folder looked at while matching artifact globs (a checkout with a huge
# node_modules must not keep the orchestrator walking): past it, the search stops with a refusal.
MAX_EXAMINED_ENTRIES = 100_000
MAX_GLOBS = 64
MAX_GLOB_CHARS = 512


@dataclass(frozen=True)
class LandingLimits:
    max_file_bytes: int
    max_total_bytes: int
    max_entries: int
    max_depth: int = 16

    @classmethod
    def from_config(cls) -> LandingLimits:
        config = orchestrator_config()
        return cls(config.landing_max_file_bytes, config.landing_max_total_bytes, config.landing_max_entries)

    @classmethod
    def artifacts_from_config(cls) -> LandingLimits:
        """The caps of landed artifacts (orchestrator.toml [landing] artifacts_*); `max_entries`
        there is the number of files landed."""
        config = orchestrator_config()
        return cls(
            config.landing_artifacts_max_file_bytes,
            config.landing_artifacts_max_total_bytes,
            config.landing_artifacts_max_files,
        )


@dataclass
class LandingReport:
    files: list[str] = field(default_factory=list)  # landed, relative paths
    bytes: int = 0
    entries: int = 0
    refused: list[str] = field(default_factory=list)  # one sentence per entry not landed, naming it
    redacted: int = 0  # occurrences of a redacted value replaced
    # sha256 of each landed file's bytes as they were in the output folder, before any redaction:
    # what the harness's seal is compared with (argusic.attempts.sealing)
    raw_sha256: dict[str, str] = field(default_factory=dict)

    @property
    def refusal(self) -> str | None:
        """The attempt's invalid reason when anything was refused, else None."""
        if not self.refused:
            return None
        shown = "; ".join(self.refused[:_SHOWN_REFUSALS])
        more = len(self.refused) - _SHOWN_REFUSALS
        return f"evidence refused: {shown}" + (f" (and {more} more)" if more > 0 else "")


class StreamRedactor:
    """Replace byte strings in a stream fed in chunks, exactly as one ``re.sub`` over the whole
    stream would (leftmost match, longest value first), including occurrences cut by a chunk edge:
    a match is only taken when it starts far enough from the end of what has arrived to be whole,
    and the rest is held back (at most len(longest value) - 1 bytes) until more comes."""

    def __init__(self, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        self.replacements = {value: replacement for value, replacement in pairs if value}
        values = sorted(self.replacements, key=len, reverse=True)
        self.pattern = re.compile(b"|".join(re.escape(v) for v in values)) if values else None
        self.keep = max((len(v) for v in values), default=1) - 1
        self.carry = b""
        self.count = 0

    def _replace(self, buf: bytes, final: bool) -> bytes:
        assert self.pattern is not None
        cut = len(buf) if final else len(buf) - self.keep
        out, done = [], 0
        for match in self.pattern.finditer(buf):
            if match.start() >= cut:
                break
            out += [buf[done : match.start()], self.replacements[match.group()]]
            done = match.end()
            self.count += 1
        emit_to = max(cut, done)
        out.append(buf[done:emit_to])
        self.carry = buf[emit_to:]
        return b"".join(out)

    def feed(self, chunk: bytes) -> bytes:
        if self.pattern is None:
            return chunk
        return self._replace(self.carry + chunk, final=False)

    def flush(self) -> bytes:
        if self.pattern is None or not self.carry:
            return b""
        return self._replace(self.carry, final=True)


def _shown(rel: str) -> str:
    """A path as a refusal names it: printable as is, otherwise escaped; never very long."""
    text = rel if rel.isprintable() else ascii(rel)
    return text if len(text) <= 200 else text[:197] + "..."


def _mib(n: int) -> str:
    return f"{n / 1024**2:.0f} MiB" if n >= 1024**2 else f"{n} bytes"


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return f"special file (mode {stat.filemode(mode)})"


def land_outputs(
    source: Path,
    dest: Path,
    limits: LandingLimits | None = None,
    redactions: Sequence[tuple[bytes, bytes]] = (),
) -> LandingReport:
    """Copy the regular files and folders of `source` into `dest` (created, must be new or empty),
    refusing everything else by name. Never raises on what it finds; the report says what happened."""
    limits = limits or LandingLimits.from_config()
    report = LandingReport()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        root = os.open(source, _OPEN_DIR)
    except OSError as err:
        report.refused.append(f"the output folder cannot be opened ({err.strerror})")
        return report
    try:
        _land_dir(root, dest, "", 0, limits, report, redactions)
    finally:
        os.close(root)
    return report


def _land_dir(
    dir_fd: int,
    dest: Path,
    prefix: str,
    depth: int,
    limits: LandingLimits,
    report: LandingReport,
    redactions: Sequence[tuple[bytes, bytes]],
) -> None:
    names: list[str] = []
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            report.entries += 1
            if report.entries > limits.max_entries:
                report.refused.append(f"more than {limits.max_entries} entries in the output folder")
                return
            names.append(entry.name)
    for name in sorted(names):
        rel = prefix + name
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as err:
            report.refused.append(f"{_shown(rel)} cannot be examined ({err.strerror})")
            continue
        if stat.S_ISDIR(st.st_mode):
            if depth + 1 >= limits.max_depth:
                report.refused.append(f"{_shown(rel)} is nested more than {limits.max_depth} folders deep")
                continue
            try:
                sub = os.open(name, _OPEN_DIR, dir_fd=dir_fd)
            except OSError as err:
                report.refused.append(f"{_shown(rel)} cannot be opened ({err.strerror})")
                continue
            try:
                if (os.fstat(sub).st_dev, os.fstat(sub).st_ino) != (st.st_dev, st.st_ino):
                    report.refused.append(f"{_shown(rel)} changed while it was being landed")
                    continue
                (dest / name).mkdir(mode=0o755)
                _land_dir(sub, dest / name, rel + "/", depth + 1, limits, report, redactions)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            problem = _land_file(dir_fd, name, st, dest / name, limits, report, redactions, rel)
            if problem:
                report.refused.append(f"{_shown(rel)} {problem}")
            else:
                report.files.append(rel)
        else:
            report.refused.append(f"{_shown(rel)} is a {_kind(st.st_mode)}")


def _land_file(
    dir_fd: int,
    name: str,
    st: os.stat_result,
    target: Path,
    limits: LandingLimits,
    report: LandingReport,
    redactions: Sequence[tuple[bytes, bytes]],
    rel: str | None = None,
) -> str | None:
    """Copy one regular file; the problem (completing "<name> ...") when it is refused."""
    if st.st_nlink != 1:
        return f"has {st.st_nlink} hard links"
    if st.st_size > limits.max_file_bytes:
        return f"is {_mib(st.st_size)}, over the cap of {_mib(limits.max_file_bytes)} per file"
    room = limits.max_total_bytes - report.bytes
    if st.st_size > room:
        return f"would take the landed total over its cap of {_mib(limits.max_total_bytes)}"
    try:
        fd = os.open(name, _OPEN_FILE, dir_fd=dir_fd)
    except OSError as err:  # ELOOP: replaced by a link since the lstat
        return f"cannot be opened without following links ({err.strerror})"
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return "changed while it was being landed"
        if now.st_nlink != 1:
            return f"has {now.st_nlink} hard links"
        cap = min(limits.max_file_bytes, room)
        redactor = StreamRedactor(redactions)
        out = os.open(target, _CREATE, 0o644)
        copied = 0
        raw = hashlib.sha256()
        try:
            while chunk := os.read(fd, CHUNK):
                copied += len(chunk)
                if copied > cap:
                    break
                raw.update(chunk)
                _write_all(out, redactor.feed(chunk))
            _write_all(out, redactor.flush())
        finally:
            os.close(out)
        if copied > cap:  # it grew past its cap after the fstat: nothing of it is kept
            with contextlib.suppress(OSError):
                target.unlink()
            return f"grew over its cap of {_mib(cap)} while it was being landed"
        report.bytes += copied
        report.redacted += redactor.count
        if rel is not None:
            report.raw_sha256[rel] = raw.hexdigest()
        return None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# ---------------------------------------------------------------------------------------------------
# Artifacts: the project folder's files matching a task's globs


def check_globs(globs: Sequence[str]) -> tuple[str, ...]:
    """The artifact globs, checked: relative to the project folder, "/"-separated, `**` as a whole
    segment for any number of folders. Raises ValueError naming the glob and its problem (absolute,
    `..` or `.` segments, empty segments, NUL, too long or too many)."""
    if isinstance(globs, str):
        raise ValueError(f"artifact globs: expected a list of globs, got the string {globs!r}")
    if len(globs) > MAX_GLOBS:
        raise ValueError(f"artifact globs: {len(globs)} given, at most {MAX_GLOBS}")
    checked = []
    for glob in globs:
        if not isinstance(glob, str) or not glob:
            raise ValueError(f"artifact glob {glob!r}: expected a non-empty string")
        if len(glob) > MAX_GLOB_CHARS:
            raise ValueError(f"artifact glob {glob[:40]!r}...: longer than {MAX_GLOB_CHARS} characters")
        if "\0" in glob:
            raise ValueError(f"artifact glob {glob!r}: contains a NUL character")
        if glob.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", glob):
            raise ValueError(f"artifact glob {glob!r}: absolute; globs are relative to the project folder")
        segments = glob.split("/")
        if ".." in segments:
            raise ValueError(f"artifact glob {glob!r}: '..' would leave the project folder")
        if "." in segments or "" in segments:
            raise ValueError(f"artifact glob {glob!r}: empty or '.' path segment; write it without")
        if segments[-1] == "**":
            raise ValueError(f"artifact glob {glob!r}: ends in '**'; name the files, e.g. '**/*.html'")
        checked.append(glob)
    return tuple(checked)


def _segment_matches(pattern: str, name: str) -> bool:
    """One path segment against one glob segment; a hidden name (".git", ".env") is matched only by
    a segment that itself starts with "." (as in a shell), so `**` never walks into .git."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


@lru_cache(maxsize=4096)
def _matches(glob: tuple[str, ...], path: tuple[str, ...]) -> bool:
    if not glob:
        return not path
    if glob[0] == "**":  # zero folders, or one more (never a hidden one)
        return _matches(glob[1:], path) or (
            bool(path) and not path[0].startswith(".") and _matches(glob, path[1:])
        )
    return bool(path) and _segment_matches(glob[0], path[0]) and _matches(glob[1:], path[1:])


@lru_cache(maxsize=4096)
def _may_hold_matches(glob: tuple[str, ...], folder: tuple[str, ...]) -> bool:
    """Whether a file somewhere under `folder` could match `glob`."""
    if not folder:
        return bool(glob)
    if not glob:
        return False
    if glob[0] == "**":
        return _may_hold_matches(glob[1:], folder) or (
            not folder[0].startswith(".") and _may_hold_matches(glob, folder[1:])
        )
    return _segment_matches(glob[0], folder[0]) and _may_hold_matches(glob[1:], folder[1:])


@dataclass
class _Search:
    globs: tuple[tuple[str, ...], ...]
    dest: Path
    limits: LandingLimits
    report: LandingReport
    redactions: Sequence[tuple[bytes, bytes]]
    max_examined: int
    stopped: bool = False

    def refuse(self, text: str) -> None:
        self.report.refused.append(text)

    def matches(self, path: tuple[str, ...]) -> bool:
        return any(_matches(g, path) for g in self.globs)

    def may_hold(self, path: tuple[str, ...]) -> bool:
        return any(_may_hold_matches(g, path) for g in self.globs)


def land_matching(
    src_root: Path,
    dest: Path,
    globs: Sequence[str],
    limits: LandingLimits | None = None,
    redactions: Sequence[tuple[bytes, bytes]] = (),
    *,
    max_examined: int = MAX_EXAMINED_ENTRIES,
) -> LandingReport:
    """Copy the regular files under `src_root` whose relative path matches one of `globs` into
    `dest`, keeping their relative paths, with ``land_outputs``' safety: nothing is followed (a
    symbolic link to a folder on the way to a match is refused by name, not entered), only regular
    files with a single link are read, each under ``limits.max_file_bytes``, all under
    ``limits.max_total_bytes``; ``limits.max_entries`` caps the number of files landed and
    `max_examined` the entries looked at. `dest` is made only when a file lands.

    Bad globs raise ValueError (``check_globs``) before anything is read; otherwise it never raises
    on what it finds: the report names what it refused (the caller logs it; artifacts are hints'
    input, so a refusal does not make the attempt invalid)."""
    patterns = tuple(tuple(g.split("/")) for g in check_globs(globs))
    limits = limits or LandingLimits.artifacts_from_config()
    report = LandingReport()
    if not patterns:
        return report
    try:
        root = os.open(src_root, _OPEN_DIR)
    except OSError as err:
        report.refused.append(f"the project folder cannot be opened without following links ({err.strerror})")
        return report
    try:
        _search_dir(root, (), 0, _Search(patterns, dest, limits, report, redactions, max_examined))
    finally:
        os.close(root)
    return report


def _search_dir(dir_fd: int, folder: tuple[str, ...], depth: int, search: _Search) -> None:
    report, limits = search.report, search.limits
    names: list[str] = []
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            report.entries += 1
            if report.entries > search.max_examined:
                search.refuse(f"more than {search.max_examined} entries examined in the project folder: "
                              "the search for artifacts stopped there")  # fmt: skip
                search.stopped = True
                return
            names.append(entry.name)
    for name in sorted(names):
        if search.stopped:
            return
        path = (*folder, name)
        rel = "/".join(path)
        wanted, may_hold = search.matches(path), search.may_hold(path)
        if not (wanted or may_hold):
            continue  # never looked at: no glob reaches it
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as err:
            search.refuse(f"{_shown(rel)} cannot be examined ({err.strerror})")
            continue
        if stat.S_ISDIR(st.st_mode):
            if not may_hold:
                continue  # a folder matching a glob itself: only files are landed
            if depth + 1 >= limits.max_depth:
                search.refuse(f"{_shown(rel)} is nested more than {limits.max_depth} folders deep")
                continue
            try:
                sub = os.open(name, _OPEN_DIR, dir_fd=dir_fd)
            except OSError as err:  # ELOOP: replaced by a link since the lstat
                search.refuse(f"{_shown(rel)} cannot be opened without following links ({err.strerror})")
                continue
            try:
                if (os.fstat(sub).st_dev, os.fstat(sub).st_ino) != (st.st_dev, st.st_ino):
                    search.refuse(f"{_shown(rel)} changed while it was being searched")
                    continue
                _search_dir(sub, path, depth + 1, search)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            if not wanted:
                continue
            if len(report.files) >= limits.max_entries:
                search.refuse(f"more than {limits.max_entries} files match the artifact globs: "
                              f"{_shown(rel)} and the rest not landed")  # fmt: skip
                search.stopped = True
                return
            target = search.dest.joinpath(*path)
            target.parent.mkdir(parents=True, exist_ok=True)  # our own folder: made as files land
            problem = _land_file(dir_fd, name, st, target, limits, report, search.redactions, None)
            if problem:
                search.refuse(f"{_shown(rel)} {problem}")
            else:
                report.files.append(rel)
        else:  # a link (to a file or to a folder on the way), FIFO, socket or device: never followed
            search.refuse(f"{_shown(rel)} is a {_kind(st.st_mode)}")
