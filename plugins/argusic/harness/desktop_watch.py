"""Desktop applications: a run command whose window stays up on the virtual display ran. Stdlib only.

README.md next to this file, "Desktop applications" (methodology section 7, item 6). While a run
command runs, `GuiWatch` looks at the display every GUI_POLL_SECONDS with read-only X11 requests
(xdisplay.py); a new top-level window still shown GUI_UP_SECONDS later with the command's processes
up makes the command a desktop application that ran, and its processes are stopped. Nothing is
clicked, typed or captured.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass

if __package__:
    from .recorder import Recorder
    from .xdisplay import XError, top_level_windows, wait_for
else:  # run as a script from the harness directory
    from recorder import Recorder  # type: ignore[no-redef]
    from xdisplay import XError, top_level_windows, wait_for  # type: ignore[no-redef]

# Desktop applications (methodology section 7, item 6: "ran" means the main process started on the
# virtual display and stayed up, or answered a version or help command; nothing is clicked). A run
# command that shows a new top-level window on the display and is still running with that window
# shown GUI_UP_SECONDS later ran; the harness then stops it (SIGTERM, SIGKILL after GUI_STOP_GRACE)
# and goes on. 10 s: long past a toolkit's start-up (a Tk window maps in well under a second), so a
# program that crashes on its first event loop turns is not counted, and short next to any budget.
GUI_UP_SECONDS = 10.0
GUI_POLL_SECONDS = 0.5
GUI_STOP_GRACE = 2.0


@dataclass
class GuiRun:
    """A run command seen running as a desktop application."""

    command: str
    index: int  # its place in the script
    window: str  # the window's title (WM_NAME), possibly empty
    seconds: float  # how long its window was seen with the main process up
    display: str


def _descendants(root: int) -> list[int]:
    """Every process below `root` (not root itself), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("latin-1")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class GuiWatch:
    """Watches the display while a run script's command runs (Control.on_tick): a command whose new
    top-level window is still shown, with the command still running, GUI_UP_SECONDS after it first
    appeared is a desktop application that ran. Its processes are then stopped and a flag file tells
    the script to count the command as succeeded. Reads the display only: nothing is clicked."""

    def __init__(self, display: str, state_dir: str, rec: Recorder) -> None:
        self.display = display
        self.state_dir = state_dir
        self.rec = rec
        self.runs: list[GuiRun] = []
        self.command: str | None = None

    def start(self, index: int, command: str) -> None:
        """A new command of the script starts: the windows already there are not its own."""
        self.index, self.command = index, command
        self.before = set(self._windows())
        self.seen_at: float | None = None
        self.window = ""
        self.stopping: tuple[float, list[int]] | None = None
        self.next_poll = time.monotonic() + GUI_POLL_SECONDS

    def _windows(self) -> dict:
        try:
            return top_level_windows(self.display)
        except (XError, OSError):
            return {}

    def tick(self, script_pid: int) -> None:
        now = time.monotonic()
        if self.command is None or now < self.next_poll:
            return
        self.next_poll = now + GUI_POLL_SECONDS
        if self.stopping is not None:
            since, pids = self.stopping
            if now - since >= GUI_STOP_GRACE:
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                self.command = None
            return
        new = [w for wid, w in self._windows().items() if wid not in self.before]
        if not new:
            self.seen_at = None  # no window of its own (yet, or any more)
            return
        if self.seen_at is None:
            self.seen_at, self.window = now, new[0].name
            self.rec.log_line(f"DISPLAY: a window appeared on {self.display}: {self.window!r}")
            return
        up = now - self.seen_at
        pids = _descendants(script_pid)
        if up < GUI_UP_SECONDS or not pids:
            return
        with open(os.path.join(self.state_dir, f"gui-{self.index}"), "w", encoding="utf-8"):
            pass
        self.runs.append(GuiRun(self.command, self.index, self.window, round(up, 1), self.display))
        self.rec.note(
            f"a desktop application: its window {self.window!r} has been on {self.display} for "
            f"{up:.0f} s with its main process up; it ran (nothing clicked); stopping it"
        )
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        self.stopping = (now, pids)


def display_available() -> str | None:
    """The virtual display the harness was given (DISPLAY, answering a real X11 connection)."""
    display = os.environ.get("DISPLAY", "")
    if not display:
        return None
    try:
        return display if wait_for(display, 2.0) is not None else None
    except XError:
        return None


def desktop_words(gui: GuiRun) -> str:
    window = f"window {gui.window!r}" if gui.window else "a window"
    return (
        f"its main process started on display {gui.display} and stayed up for {gui.seconds:g} s with "
        f"{window} shown, then the harness stopped it; nothing was clicked"
    )
