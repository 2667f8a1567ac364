"""A served recording read for rendering, and its error-and-fix timeline.

The recording is read whole and strictly (a rendering must show exactly one session, in order):
an asciicast v2 header, then events ``[t, code, data]`` with finite, non-decreasing times. A second
header in the file (two sessions joined), a time that goes backwards (events reordered), a line that
is not an event, or a recording over the bounds is refused with `RecordingRefused`, never repaired.

The timeline is what the harness itself wrote into the recording (``argusic.harness.recorder``): each
command at its prompt (``$ command``, bold) and each harness note (``# ...``, dim): a failing step
(``step failed with exit code N``, ``still failing``, ``killed after``), a recovery move, and a fix
(``... after the recovery move; error fixed``). A recording from another harness may hold no such
lines: its timeline then lists its prompts only, and the captions say so.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

MAX_RECORDING_BYTES = 64 * 1024**2
MAX_EVENTS = 200_000
MAX_SECONDS = 24 * 3600.0
MAX_WIDTH, MAX_HEIGHT = 300, 100

_PROMPT = re.compile(r"\x1b\[1m(?P<cwd>[^\x1b\r\n]{0,200})\$ \x1b\[0m(?P<command>[^\r]*)\r\n")
_NOTE = re.compile(r"\x1b\[2m# (?P<note>[^\x1b]*)\x1b\[0m\r\n")
_FAILED = re.compile(
    r"^(step failed with exit code (?P<code>-?\d+)|still failing with exit code (?P<code2>-?\d+)"
    r"|killed after [0-9.]+ s \(--command-timeout\)|background command ended early with exit code -?\d+"
    r"|HARNESS ERROR)"
)
_FIXED = re.compile(r"(succeeded after the recovery move; error fixed)")
_RECOVERY = re.compile(r"^recovery move (?P<name>[^:]+): (?P<what>.*)")
_NO_MOVE = re.compile(r"^no recovery move applies")


class RecordingRefused(ValueError):
    """Not a recording this renderer draws: not asciicast v2, reordered, joined, or over the bounds."""


@dataclass(frozen=True)
class Recording:
    width: int
    height: int
    events: tuple[tuple[float, str], ...]  # output events only, in recorded order
    duration: float
    other_events: int  # input, marker and resize events: kept in order, nothing to draw


@dataclass(frozen=True)
class Entry:
    """One step of the timeline: `kind` is command, failed, recovery, no_move, fixed or note."""

    t: float
    kind: str
    text: str
    command: str | None = None  # for failed/recovery/fixed: the command it is about
    index: int = 0  # the event's index in Recording.events

    def as_json(self) -> dict:
        return {"t": round(self.t, 6), "kind": self.kind, "text": self.text, "command": self.command}


@dataclass(frozen=True)
class Timeline:
    entries: tuple[Entry, ...]
    harness_notes: bool  # the recording holds the harness's notes (else: prompts only)
    failure_spans: tuple[tuple[float, float], ...] = field(default=())  # failing command → its failure

    @property
    def failures(self) -> list[Entry]:
        return [e for e in self.entries if e.kind == "failed"]


def load_recording(data: bytes) -> Recording:
    """`data` as a Recording, or RecordingRefused with the reason (line numbers from 1)."""
    if len(data) > MAX_RECORDING_BYTES:
        raise RecordingRefused(f"the recording is {len(data)} bytes: over {MAX_RECORDING_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecordingRefused(
            f"not an asciicast v2 recording: not UTF-8 ({err.reason} at byte {err.start})"
        ) from None
    lines = text.split("\n")
    try:
        header = json.loads(lines[0])
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("version") != 2 or isinstance(header.get("version"), bool):
        raise RecordingRefused("not an asciicast v2 recording: its first line is not a v2 header")
    size = []
    for key, top in (("width", MAX_WIDTH), ("height", MAX_HEIGHT)):
        value = header.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top:
            raise RecordingRefused(f"asciicast header: {key} {value!r} is not a terminal size of 1-{top}")
        size.append(value)
    events: list[tuple[float, str]] = []
    others = 0
    last = 0.0
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            raise RecordingRefused(f"line {number} is not JSON: not an asciicast v2 event") from None
        if isinstance(event, dict):
            raise RecordingRefused(
                f"line {number} is a second header: two sessions joined in one file are not rendered"
            )
        if not (
            isinstance(event, list)
            and len(event) == 3
            and isinstance(event[0], int | float)
            and not isinstance(event[0], bool)
            and isinstance(event[1], str)
            and isinstance(event[2], str)
        ):
            raise RecordingRefused(f"line {number} is not an asciicast v2 event [time, code, data]")
        t = float(event[0])
        if not math.isfinite(t) or t < 0 or t > MAX_SECONDS:
            raise RecordingRefused(f"line {number}: time {event[0]!r} is not within 0-{MAX_SECONDS:g} s")
        if t < last:
            raise RecordingRefused(
                f"line {number}: time {t:g} s comes before the previous event's {last:g} s: "
                "events out of order are not rendered"
            )
        last = t
        if event[1] == "o":
            events.append((t, event[2]))
            if len(events) > MAX_EVENTS:
                raise RecordingRefused(f"over {MAX_EVENTS} output events")
        else:
            others += 1
    return Recording(size[0], size[1], tuple(events), last, others)


def one_line(text: str, limit: int = 90) -> str:
    """A command or note as one caption line: controls out, long text cut with an ellipsis."""
    text = " ".join(re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def timeline_of(recording: Recording) -> Timeline:
    """The recording's prompts and harness notes in order, each failure tied to its command."""
    entries: list[Entry] = []
    command: str | None = None
    command_t = 0.0
    notes = False
    spans: list[tuple[float, float]] = []
    for index, (t, data) in enumerate(recording.events):
        for match in re.finditer(f"{_PROMPT.pattern}|{_NOTE.pattern}", data):
            if match["command"] is not None:
                command, command_t = one_line(match["command"], 200), t
                entries.append(Entry(t, "command", command, command, index))
                continue
            note = one_line(match["note"], 300)
            notes = True
            if _FAILED.match(note):
                entries.append(Entry(t, "failed", note, command, index))
                spans.append((command_t if command is not None else t, t))
            elif _FIXED.search(note):
                entries.append(Entry(t, "fixed", note, command, index))
            elif _RECOVERY.match(note):
                entries.append(Entry(t, "recovery", note, command, index))
            elif _NO_MOVE.match(note):
                entries.append(Entry(t, "no_move", note, command, index))
            else:
                entries.append(Entry(t, "note", note, command, index))
    return Timeline(tuple(entries), notes, tuple(spans))
