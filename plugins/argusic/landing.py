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
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1 << 20
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SHOWN_REFUSALS = 3  # the invalid reason names this many entries, then counts the rest


@dataclass(frozen=True)
class LandingLimits:
    max_file_bytes: int
    max_total_bytes: int
    max_entries: int
    max_depth: int = 16

    @classmethod
    def from_config(cls) -> LandingLimits:
        from argusic.settings import orchestrator_config

        config = orchestrator_config()
        return cls(config.landing_max_file_bytes, config.landing_max_total_bytes, config.landing_max_entries)


@dataclass
class LandingReport:
    files: list[str] = field(default_factory=list)  # landed, relative paths
    bytes: int = 0
    entries: int = 0
    refused: list[str] = field(default_factory=list)  # one sentence per entry not landed, naming it
    redacted: int = 0  # occurrences of a redacted value replaced

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
            problem = _land_file(dir_fd, name, st, dest / name, limits, report, redactions)
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
        try:
            while chunk := os.read(fd, CHUNK):
                copied += len(chunk)
                if copied > cap:
                    break
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
        return None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
