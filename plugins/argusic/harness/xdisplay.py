#!/usr/bin/env python3
"""The attempt container's virtual display, seen through the X11 protocol itself (standard library
only: the harness runs on the image's python3, and a real connection is the honest probe).

    python3 xdisplay.py wait :99 --timeout 15 --write /out/display.json

waits until the X server of display :99 accepts a connection, then writes
``{"kind": "xvfb", "width": W, "height": H, "depth": D}`` (read from the server's own answer, not
from what it was asked to be) and exits 0; exits 1 when no server answered in time (no file then).
The bootstrap (argusic's executor module) starts Xvfb and runs this before handing over to the agent.

The reference harness uses ``top_level_windows`` to see whether a running command put a window on
the display (methodology section 7, item 6: a desktop application "ran" when its main process started
on the display and stayed up). Nothing here draws, clicks, types or takes a screenshot: the requests
used are the connection set-up, QueryTree, GetWindowAttributes and GetProperty, which only read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass

X11_SOCKET_DIR = "/tmp/.X11-unix"
MAX_REPLY_BYTES = 1 << 20  # a setup or reply larger than this is not from an X server we started
WM_NAME = 39  # predefined atom
ANY_PROPERTY_TYPE = 0
MAP_STATE_VIEWABLE = 2


class XError(Exception):
    """The display could not be reached or answered something that is not X11."""


@dataclass(frozen=True)
class Window:
    id: int
    name: str


def display_number(display: str) -> int:
    """`:99` or `:99.0` (a local display; no host part: the container has no network)."""
    host, sep, rest = display.partition(":")
    number = rest.split(".", 1)[0]
    if host or not sep or not number.isdigit():
        raise XError(f"DISPLAY {display!r} is not a local display (':N')")
    return int(number)


class XConnection:
    """One connection to a local X server (Unix socket), read-only requests, little-endian."""

    def __init__(self, display: str, timeout: float = 2.0) -> None:
        path = f"{X11_SOCKET_DIR}/X{display_number(display)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
            # Set-up: byte order 'l', protocol 11.0, no authorisation (Xvfb is started without -auth:
            # only processes of this container reach its socket).
            self.sock.sendall(struct.pack("<BxHHHHxx", 0x6C, 11, 0, 0, 0))
            status, reason_len, _major, _minor, length = struct.unpack("<BBHHH", self._read(8))
            body = self._read(length * 4)
        except OSError as err:
            self.close()
            raise XError(f"{path}: {err}") from None
        if status != 1:
            self.close()
            reason = body[:reason_len].decode("latin-1", "replace") if status == 0 else "authentication"
            raise XError(f"display {display} refused the connection: {reason}")
        vendor_len, _max_req, screens, formats = struct.unpack_from("<HHBB", body, 16)
        if screens < 1:
            self.close()
            raise XError(f"display {display} has no screen")
        screen = 32 + (vendor_len + 3) // 4 * 4 + 8 * formats
        self.root = struct.unpack_from("<I", body, screen)[0]
        self.width, self.height = struct.unpack_from("<HH", body, screen + 20)
        self.depth = body[screen + 38]

    def _read(self, n: int) -> bytes:
        if n > MAX_REPLY_BYTES:
            raise OSError(f"reply of {n} bytes")
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise OSError("connection closed by the server")
            data += chunk
        return data

    def _request(self, data: bytes) -> bytes | None:
        """Send one request and return its reply (None when the server answered with an error)."""
        self.sock.sendall(data)
        while True:
            head = self._read(32)
            if head[0] == 0:
                return None  # an error (a window that went away meanwhile)
            if head[0] == 1:
                extra = struct.unpack_from("<I", head, 4)[0]
                return head + self._read(extra * 4)
            # an event (none were selected): skip it

    def children(self, window: int) -> list[int]:
        reply = self._request(struct.pack("<BxHI", 15, 2, window))  # QueryTree
        if reply is None:
            return []
        count = struct.unpack_from("<H", reply, 16)[0]
        return list(struct.unpack_from(f"<{count}I", reply, 32))

    def viewable_top_level(self, window: int) -> bool:
        reply = self._request(struct.pack("<BxHI", 3, 2, window))  # GetWindowAttributes
        # map-state at byte 26; override-redirect (menus, tooltips) at 27 is not a main window
        return reply is not None and reply[26] == MAP_STATE_VIEWABLE and reply[27] == 0

    def name(self, window: int) -> str:
        # GetProperty WM_NAME, any type, the first 256 bytes
        reply = self._request(struct.pack("<BBHIIIII", 20, 0, 6, window, WM_NAME, ANY_PROPERTY_TYPE, 0, 64))
        if reply is None or reply[1] != 8:
            return ""
        length = struct.unpack_from("<I", reply, 16)[0]
        return reply[32 : 32 + length].decode("utf-8", "replace")

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> XConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe(display: str, timeout: float = 2.0) -> dict:
    """What the display is, from the server's own set-up answer (XError when none answers)."""
    with XConnection(display, timeout) as conn:
        return {"kind": "xvfb", "width": conn.width, "height": conn.height, "depth": conn.depth}


def top_level_windows(display: str, timeout: float = 2.0) -> dict[int, Window]:
    """The viewable top-level windows of the display (children of the root; no window manager runs,
    so an application's main window is one of them), by id."""
    with XConnection(display, timeout) as conn:
        found = {}
        for child in conn.children(conn.root):
            if conn.viewable_top_level(child):
                found[child] = Window(child, conn.name(child))
        return found


def wait_for(display: str, timeout: float) -> dict | None:
    """The display's description once its server answers, or None after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return describe(display)
        except XError:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)


# The display's raw session video (issue #30): the bootstrap's ffmpeg x11grab writes it into /out
# (argusic.sandbox.launch.VIDEO_FILE, VIDEO_MAX_BYTES). At its end the harness stops it cleanly and
# seals it as it is then, so a change after the harness ended shows on the host.
VIDEO_FILE = "display.mkv"
VIDEO_SEAL_CAP = 65 * 1024**2  # VIDEO_MAX_BYTES and ffmpeg's overshoot past its -fs
VIDEO_STOP_SECONDS = 5.0


def _proc_state(pid: int) -> str:
    """A process's state letter (Z: a zombie, gone for our purpose), "" when it no longer exists."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("latin-1")
    except OSError:
        return ""
    return stat[stat.rfind(")") + 2 :][:1]


def video_recorders(path: str) -> list[int]:
    """The ffmpeg x11grab processes writing `path`, from their command lines in /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"ffmpeg" and b"x11grab" in argv and os.fsencode(path) in argv:
            found.append(int(entry))
    return found


def stop_video(out: str, timeout: float = VIDEO_STOP_SECONDS) -> list[int]:
    """Stop the display's recorder cleanly: SIGINT (ffmpeg then writes its Matroska index and
    closes the file), SIGKILL after `timeout`; waits until it is gone (reaping it when it is this
    process's child: the bootstrap execs the harness, which so inherits it). The pids it stopped."""
    pids = video_recorders(os.path.join(out, VIDEO_FILE))
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGINT)
    left, killed = list(pids), False
    deadline = time.monotonic() + timeout
    while left:
        for pid in left:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        left = [pid for pid in left if _proc_state(pid) not in ("", "Z", "X")]
        if left and time.monotonic() >= deadline:
            if killed:
                break  # not gone a second after SIGKILL: the seal shows whatever it did next
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            killed, deadline = True, time.monotonic() + 1.0
        time.sleep(0.05 if left else 0)
    return pids


def seal_video(channel, out: str) -> None:  # noqa: ANN001 - seal.SealChannel (no import: no cycle)
    """Stop the recorder and put the video, as it is now, in the harness's seal (when there is one)."""
    stop_video(out)
    path = os.path.join(out, VIDEO_FILE)
    if os.path.lexists(path):
        channel.file_as_it_is(VIDEO_FILE, path, cap=VIDEO_SEAL_CAP)


def _write_json(path: str, value: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f)
        f.write("\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xdisplay.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    wait = sub.add_parser("wait", help="wait for the display's X server, then describe it")
    wait.add_argument("display")
    wait.add_argument("--timeout", type=float, default=15.0)
    wait.add_argument("--write", help="write the description (JSON) to this file")
    args = parser.parse_args(argv)
    found = wait_for(args.display, args.timeout)
    if found is None:
        sys.stderr.write(f"xdisplay: no X server answered on {args.display} in {args.timeout:g} s\n")
        return 1
    if args.write:
        _write_json(args.write, found)
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
