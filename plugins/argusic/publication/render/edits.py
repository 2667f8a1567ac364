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

from dataclasses import dataclass

from argusic.publication.render.timeline import Recording, Timeline

TRIM_CARD_SECONDS = 1.5
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


class TimeMap:
    """The recording's clock ↔ the rendering's, for validated `edits`."""

    def __init__(self, edits: list[Edit], duration: float) -> None:
        self.edits = edits
        self.duration = duration
        self.length = self.rendered(duration)

    def rendered(self, t: float) -> float:
        """When recording time `t` is shown (a trimmed time: at the end of its card)."""
        offset = 0.0
        for edit in self.edits:
            if t <= edit.start:
                break
            span = edit.end - edit.start
            if t < edit.end:
                if edit.kind == "idle":
                    return t + offset - (t - edit.start) * (1 - edit.shown / span)
                return edit.start + offset + edit.shown
            offset += edit.shown - span
        return t + offset

    def recorded(self, r: float) -> tuple[float, Edit | None]:
        """The recording time shown at rendering time `r`, and the edit it falls in (None: plain)."""
        offset = 0.0
        for edit in self.edits:
            start = edit.start + offset
            if r < start:
                break
            if r < start + edit.shown:
                if edit.kind == "idle":
                    return edit.start + (r - start) * (edit.end - edit.start) / edit.shown, edit
                return edit.start, edit
            offset += edit.shown - (edit.end - edit.start)
        return min(r - offset, self.duration), None


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
) -> list[Edit]:
    """Idle pauses compressed to `idle_limit` seconds, then, while the rendering is longer than
    `max_seconds`, the longest stretch between two timeline steps that touches no failure trimmed.
    EditRefused when it cannot be made short enough without cutting a failing step."""
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
    for a, b in zip(marks, marks[1:], strict=False):
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
    if total > max_seconds:
        raise EditRefused(
            f"cannot shorten this recording to {max_seconds:g} s without cutting a failing step "
            f"(shortest honest rendering: about {total:.0f} s): render with a larger --max-seconds "
            f"(at most {MAX_RENDER_SECONDS:g})"
        )
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
    return edits
