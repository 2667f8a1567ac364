"""Watching an attempt: find it, fetch its *served* copies, play its recording in a terminal.

Only the presentation layer is ever shown (``record.presentation``: credentials masked, generated
private keys redacted, vendor banners hidden). Raw evidence may hold secrets and is never read here:
an attempt without a served copy (withheld, or recorded before served copies existed) is refused
with the reason.

Where an attempt is found, in this order: the analyst copy (``ARGUSIC_ANALYST_DIR``, a snapshot
that no writer holds), the warehouse (read-only, waiting for a writer like every reader), then the
run record in ``runs/<cycle>/<attempt>/run_record.json`` (an attempt not ingested yet: no points).
Every record is validated again and its served URIs checked against the store before anything is
opened; a copied object must hash to the sha256 its record names.

A recording is hostile text: the terminal player passes on what a recording needs to draw (text,
colours, cursor movement, clearing, the alternate screen) and drops every other control sequence:
OSC (window titles, clipboard writes, hyperlinks), DCS/APC/PM/SOS strings, device status and
attribute queries (which make a terminal type an answer into the shell after the playback), mouse
and focus reporting, C1 controls. The terminal is put back as it was when the playback ends or is
stopped.

A recording shown in asciinema-player (the run page, `argusic report`) has its terminal sizes
clamped first (`clamp_terminal_sizes`): a header or a resize event asking for a 20000x20000 terminal
would make the player allocate and draw that grid, and the page stop responding.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO

import duckdb

from argusic.core.evidence import (
    EvidenceKeyError,
    EvidenceMissing,
    EvidenceStore,
    served_key_for,
    uri_problem,
)
from argusic.core.record import RecordError, RunRecord, load_record_file, parse_attempt_id, parse_record
from argusic.core.settings import runs_dir, warehouse_path
from argusic.warehouse.analyst import analyst_db_path
from argusic.warehouse.db import connect

try:
    import termios
except ImportError:  # no POSIX terminal here: keys typed while playing are echoed as usual
    termios = None

ANALYST_DIR_ENV = "ARGUSIC_ANALYST_DIR"
MAX_EVENT_LINE = 16 * 1024**2  # one event line of a recording; a longer one is skipped and counted
DEFAULT_IDLE_LIMIT = 3.0


class ReplayRefused(RuntimeError):
    """The attempt cannot be shown: unknown, no served copy, withheld, or its copy does not match."""


@dataclass(frozen=True)
class AttemptFacts:
    """One attempt: its validated run record, its scores when the marts are built, where it came from."""

    record: RunRecord
    scores: dict[str, Any] | None
    source: str

    @property
    def source_kind(self) -> str:
        """Where the attempt was found, without the machine's paths (for pages others read)."""
        for prefix, kind in (("analyst copy", "the analyst copy"), ("warehouse", "the warehouse")):
            if self.source.startswith(prefix):
                return kind
        return "its run record (not in the warehouse yet: no points)"

    @property
    def label(self) -> str:
        rerun = parse_attempt_id(self.record.attempt_id)["rerun_no"]
        suffix = f" (rerun {rerun})" if rerun else ""
        r = self.record
        return f"{r.agent_id} / {r.project_id} / attempt {r.attempt_no}{suffix}"


# -- finding an attempt ---------------------------------------------------------------------------


def analyst_database() -> Path:
    """The analyst copy's DuckDB file (``argusic.warehouse.analyst.analyst_db_path``)."""
    return analyst_db_path()


def _from_database(con, attempt_id: str, source: str) -> AttemptFacts | None:
    try:
        row = con.execute(
            "SELECT record_json FROM raw.run_records WHERE attempt_id = ?", [attempt_id]
        ).fetchone()
    except duckdb.CatalogException:  # nothing ingested into this file yet
        return None
    if row is None:
        return None
    record = parse_record(row[0], source=f"{source}: raw.run_records[{attempt_id}]")
    scores = None
    try:
        cursor = con.execute("SELECT * FROM marts.attempt_scores WHERE attempt_id = ?", [attempt_id])
        found = cursor.fetchone()
        if found is not None:
            scores = dict(zip([d[0] for d in cursor.description], found, strict=True))
    except duckdb.CatalogException:  # ingested, not built yet
        pass
    return AttemptFacts(record, scores, source)


def find_attempt(attempt_id: str) -> AttemptFacts:
    """The attempt's validated record (and scores when built): analyst copy, warehouse, run record."""
    try:
        parts = parse_attempt_id(attempt_id)
    except ValueError as err:
        raise ReplayRefused(f"not an attempt id: {err}") from None
    analyst = analyst_database()
    if analyst.is_file():
        # being replaced, or not a database: the warehouse is next
        with contextlib.suppress(duckdb.Error), duckdb.connect(str(analyst), read_only=True) as con:
            if facts := _from_database(con, attempt_id, f"analyst copy {analyst}"):
                return facts
    db = warehouse_path()
    if db.is_file():
        with connect(db, read_only=True) as con:  # waits for a writer, saying whom for
            if facts := _from_database(con, attempt_id, f"warehouse {db}"):
                return facts
    path = runs_dir() / str(parts["cycle_id"]) / attempt_id / "run_record.json"
    if path.is_file() or path.is_symlink():
        record = load_record_file(path)  # size-capped, no link followed, validated
        if record.attempt_id != attempt_id:
            raise RecordError(f"{path}: holds attempt {record.attempt_id!r}, not {attempt_id!r}")
        return AttemptFacts(record, None, f"run record {path} (not in the warehouse yet: no points)")
    raise ReplayRefused(
        f"no attempt {attempt_id!r}: not in the analyst copy, the warehouse ({db}) or {path.parent}"
    )


# -- served copies --------------------------------------------------------------------------------


def served_ref(facts: AttemptFacts, kind: str, store: EvidenceStore):
    """The served copy's reference, checked against the store; ReplayRefused when there is none."""
    record = facts.record
    shown = record.presentation
    what = {"log": "log", "recording": "recording"}[kind]
    if shown is None:
        raise ReplayRefused(
            f"{record.attempt_id} has no served copies (its record has no presentation layer); "
            "raw evidence is never shown"
        )
    if shown.withheld:
        why = printable(shown.withheld_reason or "no reason given")
        raise ReplayRefused(
            f"{record.attempt_id}: its served copies were withheld ({why}); raw evidence is never shown. "
            "A withheld attempt is invalid and rerun: look for its rerun"
        )
    ref = getattr(shown, kind)
    if ref is None:
        raise ReplayRefused(f"{record.attempt_id} has no served {what}")
    if problem := uri_problem(ref.uri, store.url, served_key_for(record.attempt_id, kind, ref.sha256)):
        raise ReplayRefused(f"{record.attempt_id}: served {what} {ref.uri!r} refused: {problem}")
    return ref


def fetch_served(facts: AttemptFacts, kind: str, dest: Path, store: EvidenceStore | None = None) -> Path:
    """Copy the attempt's served log or recording into `dest` and check it against its record."""
    store = store or EvidenceStore()
    ref = served_ref(facts, kind, store)
    attempt = facts.record.attempt_id
    try:
        sha, size = store.copy_to_file(ref.uri, dest)
    except (EvidenceMissing, EvidenceKeyError) as err:
        raise ReplayRefused(f"{attempt}: served {kind} cannot be read: {err}") from None
    if sha != ref.sha256 or size != ref.bytes:
        dest.unlink(missing_ok=True)
        raise ReplayRefused(
            f"{attempt}: the served {kind} at {ref.uri} is not what its record names (sha256 {sha}, "
            f"{size} bytes; the record says {ref.sha256}, {ref.bytes} bytes): not shown. "
            "Run `argusic audit`"
        )
    return dest


# -- durations and endings --------------------------------------------------------------------------


def duration_words(seconds: float) -> str:
    """A duration as people read it: "18 s", "15 min 0 s", "1 h 30 min 0 s"."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min {secs} s"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def budget_words(seconds: int) -> str:
    """A budget as a length: "the 15-minute budget", "the 15 s budget"."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"the {seconds // 60}-minute budget"
    return f"the {duration_words(seconds)} budget"


def time_split(record: RunRecord) -> str:
    """The attempt's durations, split (issue #29): the agent's time against the budget it was allowed,
    and our overhead (container start, evidence collection) apart. A record without timing says
    that its one duration includes our overhead."""
    allowed = record.allowed_seconds
    budget = f"{duration_words(allowed)} budget"
    if record.demo and record.effective_budget_seconds and allowed != record.budget_seconds:
        budget += f" (a demo: scaled down from {duration_words(record.budget_seconds)})"
    agent, overhead = record.agent_seconds, record.overhead_seconds
    if agent is None or overhead is None:
        return (
            f"{duration_words(record.wall_seconds)} in all, our overhead included (this record predates "
            f"separate agent timings), against a {budget}"
        )
    return (
        f"agent {duration_words(agent)} of a {budget}; our overhead {duration_words(overhead)} "
        f"(container start and evidence collection); {duration_words(record.wall_seconds)} in all"
    )


def ending_note(record: RunRecord) -> str | None:
    """What the end of the recording's presentation says when the attempt did not end by itself: a
    timeout is "killed at the 15-minute budget after 15 min 0 s". None when it ended by itself. The
    recording's bytes are never changed: this is said beside them."""
    took = record.agent_seconds
    after = (
        f"after {duration_words(took)} of agent time"
        if took is not None
        else f"after {duration_words(record.wall_seconds)} (our overhead included)"
    )
    if record.end_reason == "timeout":
        budget = budget_words(record.allowed_seconds)
        scaled = ""
        if record.demo and record.allowed_seconds != record.budget_seconds:
            scaled = f" (a demo: scaled down from {duration_words(record.budget_seconds)})"
        return f"killed at {budget}{scaled} {after}: the recording stops here, the attempt did not finish"
    if record.end_reason == "emergency_stop":
        return f"stopped by an emergency stop {after}: the recording stops here"
    if record.end_reason == "cancelled":
        return f"cancelled from outside {after}: the recording stops here"
    return None


# -- hostile text ---------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC (to BEL or ST)
    r"|\x1b[ -/]*[0-~]"  # other escapes
)


def printable(text: str, limit: int = 500) -> str:
    """A hostile one-line text fit for a terminal message: escapes removed, controls shown as '?'."""
    text = _CONTROL.sub("?", _ANSI.sub("", text))
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def strip_terminal_codes(text: str) -> str:
    """Terminal output as plain text: escape sequences removed, carriage returns and other controls
    (bar tab and newline) shown as visible symbols, never passed through."""
    text = _ANSI.sub("", text.replace("\r\n", "\n"))

    def visible(match: re.Match) -> str:
        code = ord(match.group())
        return chr(0x2400 + code) if code < 0x20 else ("\u2421" if code == 0x7F else "\ufffd")

    return _CONTROL.sub(visible, text)


# -- terminal sizes --------------------------------------------------------------------------------

# The terminal sizes a player is asked to draw: wider than any real screen is a recording trying to
# exhaust the page, narrower than this is not a terminal anyone works in.
MIN_COLUMNS, MAX_COLUMNS = 10, 500
MIN_ROWS, MAX_ROWS = 5, 200
DEFAULT_COLUMNS, DEFAULT_ROWS = 80, 24  # for a header size that is not a whole number
_RESIZE = re.compile(r"\s*(\d{1,12})\s*x\s*(\d{1,12})\s*")
# Every line after the first that is not plainly an output event (its code the literal "o"): the
# only lines parsed, found in one pass (most lines of a recording are output).
_NOT_OUTPUT = re.compile(r'\n(?![ \t]*\[[ \t]*[-0-9.eE]+[ \t]*,[ \t]*"o"[ \t]*,)([^\n]+)')


@dataclass(frozen=True)
class ClampedCast:
    """A recording as handed to a player: `text` with its sizes within bounds; `changed` counts the
    header sizes and resize events that were clamped, and `dropped` the resize events that named no
    size (removed)."""

    text: str
    changed: int = 0
    dropped: int = 0

    def note(self) -> str | None:
        if not self.changed and not self.dropped:
            return None
        return (
            f"The recording asked for terminal sizes outside {MIN_COLUMNS}-{MAX_COLUMNS} columns and "
            f"{MIN_ROWS}-{MAX_ROWS} rows: {self.changed} size(s) shown within those bounds"
            + (f", {self.dropped} resize event(s) without a size left out" if self.dropped else "")
            + " (the served file keeps what was recorded)."
        )


def _within(value: object, low: int, high: int, default: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        return default
    return min(max(value, low), high)


def _clamped_header(header: dict) -> dict:
    """The header with v2 sizes (`width`, `height`) and v3 sizes (`term.cols`, `term.rows`) in bounds."""
    out = dict(header)
    out["width"] = _within(header.get("width"), MIN_COLUMNS, MAX_COLUMNS, DEFAULT_COLUMNS)
    out["height"] = _within(header.get("height"), MIN_ROWS, MAX_ROWS, DEFAULT_ROWS)
    if isinstance(header.get("term"), dict):
        term = dict(header["term"])
        term["cols"] = _within(term.get("cols"), MIN_COLUMNS, MAX_COLUMNS, DEFAULT_COLUMNS)
        term["rows"] = _within(term.get("rows"), MIN_ROWS, MAX_ROWS, DEFAULT_ROWS)
        out["term"] = term
    return out


def clamp_terminal_sizes(cast_text: str) -> ClampedCast:
    """`cast_text` (an asciicast) with the header's terminal size and every resize event ("r",
    "COLSxROWS") clamped to MIN/MAX_COLUMNS and MIN/MAX_ROWS; a resize event whose data is not a
    size is left out. Every line is parsed as the player will parse it (a code written as `\\u0072`
    is still "r"); a line that is not JSON is left as it is (the player skips it). ReplayRefused
    when the first line is not an asciicast v2 or v3 header."""
    first_end = cast_text.find("\n") if "\n" in cast_text else len(cast_text)
    changed = dropped = 0
    parts: list[str] = []  # the text rebuilt from slices, each changed line replaced
    done = 0
    try:
        header = json.loads(cast_text[:first_end])
    except ValueError:
        header = None
    # The player reads other shapes too (a v1 document whose sizes this does not clamp): refused.
    if (
        not isinstance(header, dict)
        or header.get("version") not in (2, 3)
        or isinstance(header["version"], bool)
    ):
        raise ReplayRefused("not an asciicast v2 or v3 recording (its first line is not such a header)")
    clamped = _clamped_header(header)
    if clamped != header:
        parts.append(json.dumps(clamped, ensure_ascii=False))
        done = first_end
        changed += 1
    for match in _NOT_OUTPUT.finditer(cast_text, first_end):
        try:
            event = json.loads(match[1])
        except ValueError:
            continue
        if not (isinstance(event, list) and len(event) >= 3 and event[1] == "r"):
            continue
        size = _RESIZE.fullmatch(event[2]) if isinstance(event[2], str) else None
        if size is None:
            replacement = ""  # the line left empty: the player skips it
            dropped += 1
        else:
            columns = min(max(int(size[1]), MIN_COLUMNS), MAX_COLUMNS)
            rows = min(max(int(size[2]), MIN_ROWS), MAX_ROWS)
            if f"{columns}x{rows}" == event[2]:
                continue
            replacement = json.dumps([event[0], "r", f"{columns}x{rows}", *event[3:]])
            changed += 1
        parts += [cast_text[done : match.start(1)], replacement]
        done = match.end(1)
    if not changed and not dropped:
        return ClampedCast(cast_text)
    return ClampedCast("".join(parts) + cast_text[done:], changed, dropped)


# Private modes a recording may switch (cursor shown, autowrap, alternate screen); every other mode,
# mouse and focus reporting included, is dropped.
_SAFE_PRIVATE_MODES = {"25", "7", "47", "1047", "1048", "1049", "12"}
_SAFE_CSI_FINALS = set("ABCDEFGHJKLMPSTXZ@`dfmrsu")
_CSI_NUMBERS = re.compile(r"[0-9;:]*")
_SAFE_ESC = {"7", "8", "D", "E", "M", "=", ">", "(0", "(A", "(B", ")0", ")A", ")B"}


class TerminalFilter:
    """Passes on what a recording needs to draw; drops everything that talks to the terminal itself.

    Stateful: an escape sequence split over two events is still recognised. A sequence longer than
    `max_sequence` characters is dropped whole; a control string (OSC, DCS, APC, PM, SOS) is dropped
    up to its BEL or ST, however long."""

    def __init__(self, max_sequence: int = 256) -> None:
        self.max_sequence = max_sequence
        self._state = "text"  # text | esc | csi | string | string_esc
        self._seq = ""
        self.dropped = 0
        self.alt_screen = False
        self.scroll_region = False
        self.insert_mode = False

    def feed(self, data: str) -> str:
        out: list[str] = []
        i, n = 0, len(data)
        while i < n:
            if self._state == "text":
                match = _CONTROL.search(data, i)
                j = match.start() if match else n
                if j > i:
                    out.append(data[i:j])
                if match is None:
                    break
                ch, i = data[j], j + 1
                if ch in "\n\r\t\b":
                    out.append(ch)
                elif ch == "\x1b":
                    self._state, self._seq = "esc", ch
                else:
                    self.dropped += 1
                continue
            ch, i = data[i], i + 1
            if self._state in ("string", "string_esc"):
                if ch == "\x07" or (self._state == "string_esc" and ch == "\\"):
                    self._state = "text"
                else:
                    self._state = "string_esc" if ch == "\x1b" else "string"
                continue
            self._seq += ch
            if len(self._seq) > self.max_sequence:
                self._end(None)
            elif self._state == "esc":
                if len(self._seq) == 2 and ch in "]PX^_":  # OSC, DCS, SOS, PM, APC
                    self.dropped += 1
                    self._state = "string"
                elif len(self._seq) == 2 and ch == "[":
                    self._state = "csi"
                elif "\x30" <= ch <= "\x7e":
                    out.append(self._end(self._seq if self._seq[1:] in _SAFE_ESC else None))
                elif not "\x20" <= ch <= "\x2f":  # intermediates wait for the final byte
                    self._end(None)
            elif "\x40" <= ch <= "\x7e":  # the final byte of a CSI sequence
                out.append(self._end(self._csi(self._seq)))
            elif not "\x20" <= ch <= "\x3f":
                self._end(None)
        return "".join(out)

    def _end(self, seq: str | None) -> str:
        """Back to text; what to write for the sequence just ended ('' when it is dropped)."""
        self._state, self._seq = "text", ""
        if seq is None:
            self.dropped += 1
            return ""
        return seq

    def _csi(self, seq: str) -> str | None:
        params, final = seq[2:-1], seq[-1]
        if final in "hl":
            on = final == "h"
            if params.startswith("?"):
                modes = params[1:].split(";")
                if not all(m in _SAFE_PRIVATE_MODES for m in modes):
                    return None
                if any(m in {"47", "1047", "1049"} for m in modes):
                    self.alt_screen = on
                return seq
            if params == "4":  # insert mode
                self.insert_mode = on
                return seq
            return None
        # Only plain numeric parameters: `?`, `>`, `=`, `<` and intermediates mark queries and
        # settings of the terminal itself (keyboard protocols, reports), never drawing.
        if final not in _SAFE_CSI_FINALS or not _CSI_NUMBERS.fullmatch(params):
            return None
        if final == "r":
            self.scroll_region = params != ""
        return seq

    def restore(self) -> str:
        """What puts the terminal back: attributes, cursor, autowrap, scroll region, insert mode, main
        screen."""
        parts = ["\x1b[0m", "\x1b[?25h", "\x1b[?7h"]
        if self.scroll_region:
            parts.append("\x1b[r")
        if self.insert_mode:
            parts.append("\x1b[4l")
        if self.alt_screen:
            parts.append("\x1b[?1049l")
        return "".join(parts)


# -- playing ---------------------------------------------------------------------------------------


@dataclass
class Cast:
    """An asciicast v2 recording read lazily from a file: the header now, events as they are played."""

    header: dict
    events: Iterator[tuple[float, str, str]]
    skipped: list[int] = field(default_factory=list)  # line numbers of lines that are not events


def read_cast(handle: IO[bytes]) -> Cast:
    """Parse the header of an asciicast v2 file; events are read lazily (`Cast.events`)."""
    first = handle.readline(MAX_EVENT_LINE + 1)
    try:
        header = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ReplayRefused("not an asciicast recording: its first line is not a JSON header") from None
    if not isinstance(header, dict) or header.get("version") != 2:
        raise ReplayRefused("not an asciicast v2 recording (header version is not 2)")
    for key in ("width", "height"):
        if not isinstance(header.get(key), int) or not 1 <= header[key] <= 10_000:
            raise ReplayRefused(f"asciicast header: {key} is not a terminal size")
    cast = Cast(header, iter(()))
    cast.events = _events(handle, cast.skipped)
    return cast


def _events(handle: IO[bytes], skipped: list[int]) -> Iterator[tuple[float, str, str]]:
    number = 1
    while True:
        line = handle.readline(MAX_EVENT_LINE + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_EVENT_LINE and not line.endswith(b"\n"):
            skipped.append(number)
            while line and not line.endswith(b"\n"):  # the rest of the over-long line
                line = handle.readline(MAX_EVENT_LINE + 1)
            continue
        if not line.strip():
            continue
        try:
            t, code, data = json.loads(line.decode("utf-8", errors="replace"))
            t = float(t)
        except (ValueError, TypeError):
            skipped.append(number)
            continue
        if not math.isfinite(t) or not isinstance(code, str) or not isinstance(data, str):
            skipped.append(number)
            continue
        yield t, code, data


def recorded_seconds(path: Path) -> float | None:
    """The time of a recording's last event, read from its tail (not the whole file)."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 65536))
        tail = handle.read().splitlines()
    for line in reversed(tail):
        try:
            t = float(json.loads(line)[0])
        except (ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError):
            continue
        if math.isfinite(t):
            return t
    return None


@dataclass(frozen=True)
class PlayResult:
    events: int
    recorded_seconds: float  # time of the last event played
    played_seconds: float  # what the playback took (pauses cut, speed applied)
    skipped_lines: int
    dropped_sequences: int
    stopped: bool  # Ctrl-C


def play_cast(
    cast: Cast,
    out: TextIO,
    *,
    speed: float = 1.0,
    idle_limit: float | None = DEFAULT_IDLE_LIMIT,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> PlayResult:
    """Write the recording's output events to `out` at their recorded times, `speed` times faster,
    with pauses longer than `idle_limit` seconds cut to it (None or 0: every pause kept). Output
    passes through `TerminalFilter`; the terminal is restored at the end and on Ctrl-C."""
    if not speed > 0 or not math.isfinite(speed):
        raise ValueError("speed must be a positive number")
    cap = idle_limit if idle_limit and idle_limit > 0 else None
    screen = TerminalFilter()
    started = clock()
    due = 0.0  # when the next event is due, in playback seconds
    last_t = 0.0
    count = 0
    stopped = False
    try:
        for t, code, data in cast.events:
            gap = max(0.0, t - last_t)
            last_t = max(last_t, t)
            if code != "o":  # input, markers, resizes: nothing to draw
                continue
            due += (min(gap, cap) if cap is not None else gap) / speed
            wait = due - (clock() - started)
            if wait > 0:
                sleep(wait)
            shown = screen.feed(data)
            if shown:
                out.write(shown)
                out.flush()
            count += 1
    except KeyboardInterrupt:
        stopped = True
    finally:
        with contextlib.suppress(OSError, ValueError):
            out.write(screen.restore())
            out.flush()
    return PlayResult(
        events=count,
        recorded_seconds=last_t,
        played_seconds=clock() - started,
        skipped_lines=len(cast.skipped),
        dropped_sequences=screen.dropped,
        stopped=stopped,
    )


@contextlib.contextmanager
def keys_not_echoed(stream: TextIO = sys.stdin) -> Iterator[None]:
    """While playing: keys typed are not echoed over the recording, and whatever reached the
    terminal's input meanwhile (keys, a terminal's answer to anything) is discarded at the end, so
    nothing is typed into the shell after the playback. Ctrl-C still stops it."""
    try:
        fd = stream.fileno()
        saved = termios.tcgetattr(fd) if termios is not None and os.isatty(fd) else None
    except (OSError, ValueError, AttributeError):
        saved = None
    if saved is None:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcflush(fd, termios.TCIFLUSH)
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def terminal_note(header: dict, stream: TextIO = sys.stdout) -> str | None:
    """A note when the terminal is smaller than the recording (lines would wrap)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    if size.columns < header["width"] or size.lines < header["height"]:
        return (
            f"recorded on a {header['width']}×{header['height']} terminal; this one is "
            f"{size.columns}×{size.lines}: enlarge it, or lines will wrap"
        )
    return None


__all__ = [
    "ANALYST_DIR_ENV",
    "AttemptFacts",
    "Cast",
    "PlayResult",
    "ReplayRefused",
    "TerminalFilter",
    "analyst_database",
    "budget_words",
    "duration_words",
    "ending_note",
    "fetch_served",
    "find_attempt",
    "keys_not_echoed",
    "play_cast",
    "printable",
    "read_cast",
    "recorded_seconds",
    "served_ref",
    "strip_terminal_codes",
    "terminal_note",
    "time_split",
]
