"""The harness's seal: what it wrote, sent out of the container where nothing inside can forge it.

The attempt container's PID 1 (init.py) hands the harness the write end of a pipe as descriptor
SEAL_FD and is itself the only process writing the container's standard output. The harness makes
itself non-dumpable (its memory and its /proc/<pid>/fd are then out of reach of the agent, which runs
as the same user), keeps that descriptor out of everything it starts, and at the end writes one JSON
line to it: the sha256 of every file it wrote into /out as it wrote them, and for the reference
harness its report and what it observed. PID 1 forwards the line to the container's log; the host
compares the landed /out with it (argusic.attempts.sealing). A file changed after the harness wrote
it -- a detached process rewriting report.json -- is then a finding, never the record.

Standard library only: it runs on the image's python3.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import stat

SEAL_FD = 7  # init.py's SEAL_FD
SEAL_MAX_BYTES = 60 * 1024  # init.py forwards at most this much
SEAL_VERSION = 1
PR_SET_DUMPABLE = 4


def json_bytes(value: object) -> bytes:
    """A JSON file as the harness writes it (report.json, harness.json): indented, UTF-8, one final
    newline. The host puts a replaced report back in these same bytes (argusic.attempts.sealing)."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def not_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): the same user can no longer ptrace this process or open its
    /proc/<pid>/fd, mem or environ. Its children become dumpable again when they exec."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class RunningDigest:
    """The sha256 of everything written to one file through this object, in order."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.size = 0

    def add(self, text: str) -> None:
        data = text.encode("utf-8")
        self._hash.update(data)
        self.size += len(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class SealChannel:
    """The descriptor PID 1 gave this process, or none (the harness run by hand, or in a test)."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.files: dict[str, str] = {}

    @classmethod
    def take(cls) -> SealChannel:
        """Claim SEAL_FD when it is a pipe: closed in every program this process starts from now on."""
        try:
            mode = os.fstat(SEAL_FD).st_mode
        except OSError:
            return cls(None)
        if not stat.S_ISFIFO(mode):
            return cls(None)
        os.set_inheritable(SEAL_FD, False)
        return cls(SEAL_FD)

    def file_written(self, name: str, data: bytes) -> None:
        self.files[name] = hashlib.sha256(data).hexdigest()

    def file_digest(self, name: str, digest: RunningDigest) -> None:
        self.files[name] = digest.hexdigest()

    def file_as_it_is(self, name: str, path: str, cap: int = 64 * 1024**2) -> None:
        """A file someone else wrote (an external CLI's report and session log): its digest now,
        so a change after this moment shows. Absent or over `cap`: recorded as such."""
        try:
            with open(path, "rb") as handle:
                h, size = hashlib.sha256(), 0
                while chunk := handle.read(1 << 20):
                    size += len(chunk)
                    if size > cap:
                        self.files[name] = "over-cap"
                        return
                    h.update(chunk)
        except FileNotFoundError:
            self.files[name] = "absent"
            return
        except OSError:
            self.files[name] = "unreadable"
            return
        self.files[name] = h.hexdigest()

    def send(self, **parts: object) -> bool:
        """Write the seal line once; True when written (False: no channel). A seal over the cap
        drops its `report` and `observed` parts and keeps the digests. Raises OSError when the
        channel exists but the write fails: the harness then ends as broken."""
        if self.fd is None:
            return False
        doc = {"seal": SEAL_VERSION, "files": self.files, **parts}
        line = json.dumps(doc, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
        if len(line) > SEAL_MAX_BYTES:
            doc = {"seal": SEAL_VERSION, "files": self.files, "oversized": True}
            line = json.dumps(doc, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
        view = memoryview(line)
        while view:
            view = view[os.write(self.fd, view) :]
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None
        return True
