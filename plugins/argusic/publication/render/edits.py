"""The only edits a rendering may apply, as time-range operations on the recording's clock, validated
against its timeline before anything is drawn (methodology section 17: fast-forward and trimming are
allowed; reordering events, splicing sessions and hiding failures are not).

- ``idle``: a pause (no output event inside it) shown in `shown` seconds instead of its length, marked
  on screen as fast-forward. Every event is still drawn, in order.
- ``trim``: a stretch of the recording not shown; a card in its place says what was cut and how long.
  The terminal is still fed every event of the stretch, so the screen after the cut is the recorded
  screen. A trim may not touch a failure span (from the failing command's prompt to the harness's
  failure note), a failure, recovery or fix note, or the recording's last output event.

`TimeMap` maps the recording's clock to the rendering's and back; both directions are monotone by
construction (edits are sorted and disjoint), so a rendering cannot show events out of order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from argusic.publication.render.timeline import Recording, Timeline

TRIM_CARD_SECONDS = 1.5
MAX_SPEED = 8.0
MAX_RENDER_SECONDS = 600.0
_PROTECTED_KINDS = ("failed", "recovery", "no_move", "fixed")


class EditRefused(ValueError):
    """An edit list that would reorder, join, or hide: refused, nothing rendered."""


@dataclass(frozen=True)
class Edit:
    kind: str  # idle | trim
    start: float
    end: float
    shown: float  # idle: seconds it is shown for; trim: the card's seconds

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "start": round(self.start, 6),
            "end": round(self.end, 6),
            "recorded_seconds": round(self.end - self.start, 6),
            "shown_seconds": round(self.shown, 6),
        }


def validate_edits(edits: list[Edit], recording: Recording, timeline: Timeline) -> None:
    """EditRefused unless every edit is allowed: a known kind, inside the recording, sorted and
    disjoint; an idle span holds no output event; a trim touches no failure and not the last event."""
    previous_end = 0.0
    times = [t for t, _ in recording.events]
    protected = [e.t for e in timeline.entries if e.kind in _PROTECTED_KINDS]
    last_event = times[-1] if times else 0.0
    for n, edit in enumerate(edits):
        where = f"edit {n + 1} ({edit.kind} {edit.start:g}-{edit.end:g} s)"
        if edit.kind not in ("idle", "trim"):
            raise EditRefused(f"{where}: only idle compression and trimming are allowed")
        if not 0 <= edit.start < edit.end <= recording.duration:
            raise EditRefused(f"{where}: not a span inside the recording (0-{recording.duration:g} s)")
        if edit.start < previous_end:
            raise EditRefused(f"{where}: overlaps or comes before the previous edit (edits are in order)")
        previous_end = edit.end
        if edit.kind == "idle":
            if any(edit.start < t < edit.end for t in times):
                raise EditRefused(f"{where}: not idle, an output event is inside it")
            if not 0 < edit.shown < edit.end - edit.start:
                raise EditRefused(f"{where}: an idle span is shown shorter than it lasted, not longer")
            continue
        if edit.shown < TRIM_CARD_SECONDS:
            raise EditRefused(f"{where}: a trim is marked by a card of at least {TRIM_CARD_SECONDS:g} s")
        for start, end in timeline.failure_spans:
            if edit.start <= end and edit.end >= start:
                raise EditRefused(
                    f"{where}: cuts into a failing step ({start:g}-{end:g} s): failures are never trimmed"
                )
        if any(edit.start <= t <= edit.end for t in protected):
            raise EditRefused(f"{where}: cuts a failure, recovery or fix note of the timeline")
        if edit.end >= last_event:
            raise EditRefused(f"{where}: cuts the end of the recording (its last output is always shown)")


@dataclass(frozen=True)
class Plan:
    """The edits of a rendering and its speed: plain stretches (outside the edits) shown `speed`
    times faster (1: at the recorded pace), marked on screen; every event still drawn in order."""

    edits: list[Edit]
    speed: float = 1.0


class TimeMap:
    """The recording's clock ↔ the rendering's, for validated `edits` and a `speed` (plain stretches
    shown that many times faster). Built as consecutive segments (recording start, end; rendering
    start, end; the edit or None), so both directions are monotone."""

    def __init__(self, edits: list[Edit], duration: float, speed: float = 1.0) -> None:
        if not 1.0 <= speed <= MAX_SPEED:
            raise EditRefused(f"a speed of 1-{MAX_SPEED:g}")
        self.edits, self.duration, self.speed = edits, duration, speed
        self.segments: list[tuple[float, float, float, float, Edit | None]] = []
        t = r = 0.0
        for edit in [*edits, None]:
            until = edit.start if edit is not None else duration
            if until > t:
                self.segments.append((t, until, r, r + (until - t) / speed, None))
                r += (until - t) / speed
            if edit is not None:
                self.segments.append((edit.start, edit.end, r, r + edit.shown, edit))
                r += edit.shown
                t = edit.end
        self.length = r

    def rendered(self, t: float) -> float:
        """When recording time `t` is shown (a trimmed time: at the end of its card)."""
        for t0, t1, r0, r1, edit in self.segments:
            if t < t1 or (t == t1 and t1 == self.duration):
                if t <= t0:
                    return r0
                if edit is not None and edit.kind == "trim":
                    return r1
                return r0 + (t - t0) * (r1 - r0) / (t1 - t0)
        return self.length

    def recorded(self, r: float) -> tuple[float, Edit | None]:
        """The recording time shown at rendering time `r`, and the edit it falls in (None: plain)."""
        for t0, t1, r0, r1, edit in self.segments:
            if r < r1:
                if edit is not None and edit.kind == "trim":
                    return t0, edit
                return t0 + max(0.0, r - r0) * (t1 - t0) / (r1 - r0), edit
        return self.duration, None


def _idle_gaps(recording: Recording, idle_limit: float) -> list[tuple[float, float]]:
    gaps = []
    previous = 0.0
    for t, _ in recording.events:
        if t - previous > idle_limit:
            gaps.append((previous, t))
        previous = t
    return gaps


def plan_edits(
    recording: Recording, timeline: Timeline, *, idle_limit: float = 2.0, max_seconds: float = 120.0
) -> Plan:
    """Idle pauses compressed to `idle_limit` seconds; then, while the rendering is longer than
    `max_seconds`, the longest stretch between two timeline steps that touches no failure trimmed
    (only in a recording that holds the harness's notes: without them nobody can say where a failure
    is, and nothing is trimmed); then, if still too long, the plain stretches sped up (at most
    MAX_SPEED times). EditRefused when it cannot be made short enough that way."""
    if not 0 < idle_limit <= 60:
        raise EditRefused("the idle limit is 0-60 seconds")
    if not 5 <= max_seconds <= MAX_RENDER_SECONDS:
        raise EditRefused(f"the rendering's length is 5-{MAX_RENDER_SECONDS:g} seconds")
    gaps = _idle_gaps(recording, idle_limit)

    def shown(a: float, b: float) -> float:
        saved = sum(max(0.0, min(b, g1) - max(a, g0)) for g0, g1 in gaps)
        saved -= sum(idle_limit for g0, g1 in gaps if a <= g0 and g1 <= b)
        return (b - a) - max(0.0, saved)

    # Candidate stretches: between consecutive timeline steps, 1 s after the first and before the
    # second, each validated as a trim on its own (failure spans and notes are never candidates).
    marks = sorted(
        {0.0, *(e.t for e in timeline.entries), recording.events[-1][0] if recording.events else 0.0}
    )
    candidates: list[Edit] = []
    for a, b in zip(marks, marks[1:], strict=False) if timeline.harness_notes else ():
        trim = Edit("trim", a + 1.0, b - 1.0, TRIM_CARD_SECONDS)
        if trim.end - trim.start < 3 * TRIM_CARD_SECONDS:
            continue
        try:
            validate_edits([trim], recording, timeline)
        except EditRefused:
            continue
        candidates.append(trim)
    total = shown(0.0, recording.duration)
    trims: list[Edit] = []
    for trim in sorted(candidates, key=lambda e: (-shown(e.start, e.end), e.start)):
        if total <= max_seconds:
            break
        trims.append(trim)
        total -= shown(trim.start, trim.end) - trim.shown
    edits = list(trims)
    for g0, g1 in gaps:  # idle spans outside the trims, clipped at their edges
        for trim in trims:
            if g0 < trim.end and g1 > trim.start:
                if g0 < trim.start:
                    g1 = trim.start
                else:
                    g0 = max(g0, trim.end)
        if g1 - g0 > idle_limit and not any(t.start <= g0 and g1 <= t.end for t in trims):
            edits.append(Edit("idle", g0, g1, idle_limit))
    edits.sort(key=lambda e: e.start)
    validate_edits(edits, recording, timeline)
    fixed = sum(e.shown for e in edits)
    plain = recording.duration - sum(e.end - e.start for e in edits)
    speed = 1.0
    if fixed + plain > max_seconds:
        needed = plain / (max_seconds - fixed) if max_seconds > fixed else math.inf
        speed = math.ceil(needed * 2) / 2  # a readable factor: ×1.5, ×2, ×2.5 …
        if speed > MAX_SPEED:
            raise EditRefused(
                f"cannot shorten this recording to {max_seconds:g} s without cutting a failing step "
                f"or playing faster than ×{MAX_SPEED:g} (it would take ×{needed:.1f}): render with a "
                f"larger --max-seconds (at most {MAX_RENDER_SECONDS:g})"
            )
    return Plan(edits, speed)
