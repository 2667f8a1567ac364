"""Frames of a rendering: the recorded terminal emulated by pyte and drawn by Pillow, with the
rendering's marks (fast-forward, trimmed), the captions of the error-and-fix timeline and the end card.

Layout of a frame: a title bar (whose rendering this is), the terminal, a caption bar (the caption of
the moment, and the count of failures shown so far out of the recording's total), and during an
edit its mark. The font is DejaVu Sans Mono as matplotlib's wheel ships it (its sha256 is in the
manifest); no clock, no randomness: the same input draws the same pixels.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pyte
from PIL import Image, ImageDraw, ImageFont

from argusic.publication.render.edits import Edit, Plan, TimeMap
from argusic.publication.render.timeline import Recording, Timeline, one_line

MAX_FRAMES = 6000
MAX_PIXELS_WIDE = 1600
CAPTION_SECONDS = 4.0
END_CARD_SECONDS = 4.0
FINAL_HOLD_SECONDS = 2.0  # the last screen held, with how the attempt ended, before the end card
BACKGROUND = (18, 18, 22)
FOREGROUND = (220, 220, 220)
BAR = (36, 38, 46)
ACCENT = (240, 190, 60)
FAIL = (235, 90, 80)
PASS = (110, 200, 120)

_COLOURS = {
    "black": (40, 40, 40),
    "red": (215, 80, 70),
    "green": (110, 190, 100),
    "brown": (200, 170, 60),
    "blue": (90, 140, 220),
    "magenta": (190, 110, 200),
    "cyan": (80, 190, 200),
    "white": (210, 210, 210),
    "brightblack": (120, 120, 120),
    "brightred": (245, 110, 100),
    "brightgreen": (140, 220, 130),
    "brightbrown": (235, 210, 100),
    "brightblue": (130, 170, 245),
    "brightmagenta": (220, 140, 230),
    "brightcyan": (120, 220, 230),
    "brightwhite": (245, 245, 245),
}


SYSTEM_FONTS = Path("/usr/share/fonts/truetype/dejavu")  # Debian's fonts-dejavu-core (the images')


def font_path(bold: bool = False) -> Path:
    """DejaVu Sans Mono from matplotlib's wheel (pinned in requirements.txt), else Debian's copy. The
    manifest records the font's sha256: another copy of the font is another rendering."""
    name = "DejaVuSansMono-Bold.ttf" if bold else "DejaVuSansMono.ttf"
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.submodule_search_locations:
        path = Path(spec.submodule_search_locations[0]) / "mpl-data" / "fonts" / "ttf" / name
        if path.is_file():
            return path
    if (SYSTEM_FONTS / name).is_file():
        return SYSTEM_FONTS / name
    raise RuntimeError(
        f"{name} not found (matplotlib's wheel or Debian's fonts-dejavu-core): it draws the frames"
    )


@cache
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(font_path(bold)), size)


def font_sha256() -> str:
    return hashlib.sha256(font_path().read_bytes() + font_path(True).read_bytes()).hexdigest()


def colour(name: str, default: tuple[int, int, int]) -> tuple[int, int, int]:
    if name == "default":
        return default
    if name in _COLOURS:
        return _COLOURS[name]
    if len(name) == 6:
        try:
            return (int(name[0:2], 16), int(name[2:4], 16), int(name[4:6], 16))
        except ValueError:
            return default
    return default


@dataclass(frozen=True)
class Caption:
    t: float  # recording time it belongs to
    kind: str  # failed | recovery | fixed | no_move | next
    text: str

    def as_json(self) -> dict:
        return {"t": round(self.t, 6), "kind": self.kind, "text": self.text}


def captions_of(timeline: Timeline, ending: str | None = None, end: float = 0.0) -> list[Caption]:
    """The captions of the error-and-fix timeline, in the neutral Argusic voice: which command failed,
    what came next, when it passed. Every failure of the timeline gets a caption; `ending` (how the
    attempt ended, from its run record: a timeout leaves no note in the recording) is the last, at
    `end`."""
    out: list[Caption] = []
    after_failure = False
    for entry in timeline.entries:
        cmd = f"`{one_line(entry.command or '?', 60)}`"
        if entry.kind == "failed":
            out.append(Caption(entry.t, "failed", f"{cmd} failed: {one_line(entry.text, 80)}"))
            after_failure = True
        elif entry.kind == "recovery":
            out.append(Caption(entry.t, "recovery", f"Next: {one_line(entry.text, 100)}"))
            after_failure = False  # the recovery move names what is retried
        elif entry.kind == "no_move":
            out.append(Caption(entry.t, "no_move", f"No recovery move applies; {cmd} stays failed"))
        elif entry.kind == "fixed":
            out.append(Caption(entry.t, "fixed", f"{cmd} passed after the fix"))
            after_failure = False
        elif entry.kind == "command" and after_failure:
            out.append(Caption(entry.t, "next", f"Next command: {cmd}"))
            after_failure = False
    if ending:
        out.append(Caption(end, "ended", f"How the attempt ended (run record): {one_line(ending, 100)}"))
    return out


@dataclass(frozen=True)
class Frame:
    image: bytes  # RGB bytes
    rendered: float  # rendering time
    recorded: float  # recording time shown
    caption: str | None
    mark: str | None


class Painter:
    """Draws frames of one rendering (fixed size, fixed font)."""

    def __init__(self, recording: Recording, title: str, total_failures: int) -> None:
        self.columns, self.rows = recording.width, recording.height
        size = 16
        while size > 8 and font(size).getbbox("M")[2] * self.columns + 24 > MAX_PIXELS_WIDE:
            size -= 1
        self.font, self.bold = font(size), font(size, True)
        self.ui = font(max(size, 14))
        left, top, right, bottom = self.font.getbbox("M")
        self.cell_w = max(1, round(self.font.getlength("M")))
        self.cell_h = size + 4
        self.pad = 12
        self.bar_h = max(size, 14) + 14
        width = self.cell_w * self.columns + 2 * self.pad
        height = self.bar_h + self.cell_h * self.rows + 2 * self.pad + 3 * self.bar_h
        self.width = max(960, width + width % 2)
        self.height = height + height % 2
        self.title = one_line(title, 120)
        self.total_failures = total_failures

    def terminal(self, screen: pyte.Screen) -> Image.Image:
        image = Image.new("RGB", (self.width, self.height), BACKGROUND)
        draw = ImageDraw.Draw(image)
        y0 = self.bar_h + self.pad
        for row in range(self.rows):
            line = screen.buffer[row]
            y = y0 + row * self.cell_h
            col = 0
            while col < self.columns:
                char = line[col]
                start = col
                key = (char.fg, char.bg, char.bold, char.reverse)
                text = []
                while col < self.columns and (
                    (line[col].fg, line[col].bg, line[col].bold, line[col].reverse) == key
                ):
                    text.append(line[col].data or " ")
                    col += 1
                fg = colour(key[0], FOREGROUND)
                bg = colour(key[1], BACKGROUND)
                if key[3]:
                    fg, bg = bg, fg
                x = self.pad + start * self.cell_w
                if bg != BACKGROUND:
                    draw.rectangle([x, y, x + self.cell_w * len(text) - 1, y + self.cell_h - 1], fill=bg)
                run = "".join(text)
                if run.strip():
                    draw.text((x, y + 1), run, font=self.bold if key[2] else self.font, fill=fg)
        return image

    def fit(self, text: str, width: float) -> str:
        """`text` cut (with an ellipsis) to `width` pixels of the UI font."""
        if self.ui.getlength(text) <= width:
            return text
        while text and self.ui.getlength(text + "…") > width:
            text = text[:-1]
        return text + "…"

    def decorate(
        self,
        image: Image.Image,
        status: Caption | None,
        caption: Caption | None,
        failures_shown: int,
        mark: str | None,
        clock: str,
    ) -> Image.Image:
        """The bars over a terminal image: title and clock; the status of the last failure (it stays
        until it is fixed); the caption of the moment; failures shown so far; the edit's mark."""
        image = image.copy()
        draw = ImageDraw.Draw(image)
        draw.rectangle([0, 0, self.width, self.bar_h - 1], fill=BAR)
        clock_w = self.ui.getlength(clock)
        draw.text(
            (self.pad, 7),
            self.fit(self.title, self.width - 3 * self.pad - clock_w),
            font=self.ui,
            fill=FOREGROUND,
        )
        draw.text((self.width - self.pad - clock_w, 7), clock, font=self.ui, fill=FOREGROUND)
        y = self.height - 3 * self.bar_h
        draw.rectangle([0, y, self.width, self.height], fill=BAR)
        for row, shown in enumerate((status, caption)):
            if shown is not None:
                tint = {"failed": FAIL, "no_move": FAIL, "fixed": PASS}.get(shown.kind, ACCENT)
                if shown.kind == "ended":
                    tint = PASS if "✓" in shown.text else FAIL
                text = self.fit(shown.text, self.width - 2 * self.pad)
                draw.text((self.pad, y + row * self.bar_h + 7), text, font=self.ui, fill=tint)
        y += 2 * self.bar_h
        count = f"failures shown: {failures_shown} of {self.total_failures}"
        draw.text((self.pad, y + 7), count, font=self.ui, fill=FAIL if failures_shown else FOREGROUND)
        if mark:
            w = self.ui.getlength(mark)
            x = self.width - self.pad - w
            draw.rectangle([x - 8, y + 2, self.width - 4, self.height - 3], fill=ACCENT)
            draw.text((x, y + 7), mark, font=self.ui, fill=BACKGROUND)
        return image

    def card(self, lines: list[tuple[str, tuple[int, int, int]]]) -> Image.Image:
        image = Image.new("RGB", (self.width, self.height), BACKGROUND)
        draw = ImageDraw.Draw(image)
        y = self.bar_h * 2
        room = self.width - 6 * self.pad
        for text, tint in lines:
            text = one_line(text, 400)
            while text and y < self.height - self.bar_h:  # long lines wrap: a sha256 is never cut
                part = text
                while self.ui.getlength(part) > room:
                    part = part[:-1]
                draw.text((self.pad * 3, y), part, font=self.ui, fill=tint)
                text = text[len(part) :]
                y += self.bar_h
        return image


def _clock(t: float) -> str:
    return f"{int(t // 60):02d}:{t % 60:04.1f}"


def _mark(edit: Edit | None, speed: float = 1.0) -> str | None:
    if edit is None:
        return f"▶ fast-forward ×{speed:g}" if speed > 1 else None
    length = edit.end - edit.start
    if edit.kind == "idle":
        return f"▶▶ fast-forward: {length:.1f} s idle shown in {edit.shown:.1f} s"
    return f"✂ trimmed: {_clock(edit.start)}–{_clock(edit.end)} cut ({length:.1f} s)"


def frames(
    recording: Recording,
    timeline: Timeline,
    plan: Plan,
    *,
    fps: int,
    title: str,
    end_card: list[tuple[str, tuple[int, int, int]]],
    ending: str | None = None,
) -> Iterator[Frame]:
    """Every frame of the rendering in order: the terminal at each rendering time, then the end card.
    Frames are emitted in rendering order, each showing a recording time not before the previous."""
    timemap = TimeMap(plan.edits, recording.duration, plan.speed)
    steps = math.ceil(timemap.length * fps)
    count = steps + 1 + int((FINAL_HOLD_SECONDS + END_CARD_SECONDS) * fps)
    if count > MAX_FRAMES:
        raise ValueError(f"{count} frames at {fps} fps: over {MAX_FRAMES}; lower --fps or --max-seconds")
    captions = captions_of(timeline, ending, recording.duration)
    failures = [e.t for e in timeline.failures]
    painter = Painter(recording, title, len(failures))
    screen = pyte.Screen(recording.width, recording.height)
    stream = pyte.Stream(screen)
    fed = 0
    cached: tuple[int, Image.Image] | None = None
    for n in range(steps + 1):
        r = min(n / fps, timemap.length)  # the last frame shows the end of the recording
        t, edit = timemap.recorded(r)
        while fed < len(recording.events) and recording.events[fed][0] <= t:
            stream.feed(recording.events[fed][1])
            fed += 1
        if cached is None or cached[0] != fed:
            cached = (fed, painter.terminal(screen))
        caption = status = None
        for c in captions:
            if c.t <= t and c.kind in ("failed", "no_move", "fixed", "ended"):
                status = c  # a failure stays on screen until its fix
            elif c.t <= t and r - timemap.rendered(c.t) < CAPTION_SECONDS:
                caption = c
        if caption is not None and status is not None and caption.t < status.t:
            caption = None  # what came before the latest failure or fix is no longer "next"
        shown = sum(1 for f in failures if f <= t)
        image = painter.decorate(cached[1], status, caption, shown, _mark(edit, plan.speed), _clock(t))
        text = " | ".join(c.text for c in (status, caption) if c is not None) or None
        yield Frame(image.tobytes(), r, t, text, _mark(edit, plan.speed))
    last_step = [c for c in captions if c.kind in ("failed", "no_move", "fixed")][-1:]
    below = last_step[0] if last_step and last_step[0] is not status else None
    final = painter.decorate(cached[1], status, below, shown, None, _clock(recording.duration)).tobytes()
    text = " | ".join(c.text for c in (status, below) if c is not None) or None
    for n in range(1, int(FINAL_HOLD_SECONDS * fps) + 1):  # the last screen, with how it ended
        yield Frame(final, timemap.length + n / fps, recording.duration, text, "final screen")
    card = painter.card(end_card).tobytes()
    held = timemap.length + FINAL_HOLD_SECONDS
    for n in range(int(END_CARD_SECONDS * fps)):
        yield Frame(card, held + n / fps, recording.duration, None, "end card")


def painter_size(recording: Recording) -> tuple[int, int]:
    p = Painter(recording, "", 0)
    return p.width, p.height
