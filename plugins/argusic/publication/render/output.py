"""A rendering written: the file (mp4 by imageio-ffmpeg's ffmpeg, gif or png by Pillow) with the link
back in its metadata, and its JSON manifest beside it (``<name>.<format>.manifest.json``).

The manifest records what anyone needs to re-render and compare: the served recording's sha256 (the
input), the raw recording's sha256 (the evidence it was derived from), the run page, the renderer's
version and its libraries' versions (pyte, Pillow, ffmpeg, the font's sha256), the settings, every
edit applied and every caption shown, and the output's sha256 and size. Nothing in it depends on the
clock or the machine's paths, so the same input gives the same manifest and the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from PIL import Image
from PIL.PngImagePlugin import PngInfo

from argusic.publication.render import RENDERER_VERSION
from argusic.publication.render.edits import EditRefused, Plan, TimeMap, plan_edits, validate_edits
from argusic.publication.render.frames import (
    ACCENT,
    FAIL,
    FOREGROUND,
    PASS,
    Frame,
    captions_of,
    font_sha256,
    frames,
    painter_size,
)
from argusic.publication.render.timeline import RecordingRefused, Timeline, load_recording, timeline_of

MANIFEST_SCHEMA = "argusic.rendering/1"
FORMATS = ("mp4", "gif", "png")
MAX_OUTPUT_BYTES = 64 * 1024**2
DEFAULT_FPS = {"mp4": 10, "gif": 5, "png": 1}


class RenderRefused(RuntimeError):
    """Nothing rendered: the recording, an edit, the attempt or a bound said no (the reason given)."""


@dataclass(frozen=True)
class Link:
    """Where a rendering points back to: the attempt as published, its run page, its evidence."""

    attempt: str  # the published attempt id, or words saying it is not published
    run_page: str | None
    evidence_sha256: str | None  # the raw recording's sha256 (the evidence)


@dataclass(frozen=True)
class Rendering:
    path: Path
    manifest_path: Path
    manifest: dict


def ffmpeg_exe() -> str:
    import imageio_ffmpeg  # deferred: finds (and checks) the binary its wheel ships

    return imageio_ffmpeg.get_ffmpeg_exe()


def ffmpeg_version() -> str:
    out = subprocess.run([ffmpeg_exe(), "-version"], capture_output=True, text=True, timeout=30, check=False)
    return (out.stdout.splitlines() or ["unknown"])[0]


def _metadata_text(link: Link, served_sha: str, manifest_name: str) -> str:
    return (
        f"Argusic rendering of the served recording of {link.attempt}; "
        f"run page: {link.run_page or 'not published'}; "
        f"evidence (raw recording) sha256: {link.evidence_sha256 or 'unknown'}; "
        f"served recording sha256: {served_sha}; manifest: {manifest_name}"
    )


def _end_card(link: Link, served_sha: str, timeline: Timeline, plan: Plan, ending: str | None) -> list:
    edits = plan.edits
    lines: list[tuple[str, tuple[int, int, int]]] = [
        ("Rendered by Argusic from the served (masked) recording", ACCENT),
        (f"attempt: {link.attempt}", FOREGROUND),
        (f"run page: {link.run_page or 'not published'}", FOREGROUND),
        (f"evidence sha256: {link.evidence_sha256 or 'unknown'}", FOREGROUND),
        (f"served recording sha256: {served_sha}", FOREGROUND),
    ]
    idle = sum(1 for e in edits if e.kind == "idle")
    trims = [e for e in edits if e.kind == "trim"]
    cut = sum(e.end - e.start for e in trims)
    lines.append(
        (
            f"edits: {idle} idle pause(s) fast-forwarded, {len(trims)} stretch(es) trimmed ({cut:.1f} s)",
            FOREGROUND,
        )
    )
    failures = timeline.failures
    lines.append(
        (f"failures in the recording: {len(failures)} (every one shown)", FAIL if failures else PASS)
    )
    for caption in [c for c in captions_of(timeline) if c.kind in ("failed", "fixed", "no_move")][:8]:
        lines.append((f"  {caption.text}", FAIL if caption.kind != "fixed" else PASS))
    if ending:
        lines.append((f"how the attempt ended (run record): {ending}", PASS if "✓" in ending else FAIL))
    return lines


def render_recording(
    data: bytes,
    out_dir: Path,
    name: str,
    link: Link,
    *,
    fmt: str = "mp4",
    fps: int | None = None,
    idle_limit: float = 2.0,
    max_seconds: float = 120.0,
    plan: Plan | None = None,
    ending: str | None = None,
) -> Rendering:
    """Render the served recording `data` to `out_dir/<name>.<fmt>` and its manifest beside it.
    The edits are planned (`plan_edits`), or `plan`'s, validated against the timeline the same way.
    `ending`: how the attempt ended, in the story's words (``argusic.attempts.story``), captioned last."""
    if fmt not in FORMATS:
        raise RenderRefused(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    fps = fps or DEFAULT_FPS[fmt]
    if not 1 <= fps <= 30:
        raise RenderRefused("fps is 1-30")
    try:
        recording = load_recording(data)
        timeline = timeline_of(recording)
        if plan is None:
            plan = plan_edits(recording, timeline, idle_limit=idle_limit, max_seconds=max_seconds)
        validate_edits(plan.edits, recording, timeline)
        TimeMap(plan.edits, recording.duration, plan.speed)  # the speed within bounds
    except (RecordingRefused, EditRefused) as err:
        raise RenderRefused(str(err)) from None
    if not recording.events:
        raise RenderRefused("the recording has no output events: nothing to render")
    served_sha = hashlib.sha256(data).hexdigest()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.{fmt}"
    manifest_path = out_dir / f"{name}.{fmt}.manifest.json"
    meta = _metadata_text(link, served_sha, manifest_path.name)
    title = f"Argusic · {link.attempt} · rendering of the served recording"
    edits = plan.edits
    drawn = frames(
        recording,
        timeline,
        plan,
        fps=fps,
        title=title,
        end_card=_end_card(link, served_sha, timeline, plan, ending),
        ending=ending,
    )
    size = painter_size(recording)
    try:
        count = {"mp4": _write_mp4, "gif": _write_gif, "png": _write_png}[fmt](drawn, path, size, fps, meta)
    except ValueError as err:
        raise RenderRefused(str(err)) from None
    if path.stat().st_size > MAX_OUTPUT_BYTES:
        path.unlink()
        raise RenderRefused(f"the rendering came to over {MAX_OUTPUT_BYTES} bytes: not kept")
    output = path.read_bytes()
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "attempt": link.attempt,
        "run_page": link.run_page,
        "evidence_sha256": link.evidence_sha256,
        "served_recording_sha256": served_sha,
        "served_recording_bytes": len(data),
        "renderer": {
            "version": RENDERER_VERSION,
            "pyte": version("pyte"),
            "pillow": version("pillow"),
            "imageio_ffmpeg": version("imageio-ffmpeg"),
            "ffmpeg": ffmpeg_version() if fmt == "mp4" else None,
            "font_sha256": font_sha256(),
        },
        "settings": {"format": fmt, "fps": fps, "idle_limit": idle_limit, "max_seconds": max_seconds},
        "recording": {
            "width": recording.width,
            "height": recording.height,
            "seconds": recording.duration,
            "output_events": len(recording.events),
            "harness_notes": timeline.harness_notes,
        },
        "edits": [e.as_json() for e in edits],
        "speed": plan.speed,
        "timeline": [e.as_json() for e in timeline.entries if e.kind != "note"],
        "failures": len(timeline.failures),
        "ending": ending,
        "captions": [c.as_json() for c in captions_of(timeline, ending, recording.duration)],
        "output": {
            "file": path.name,
            "sha256": hashlib.sha256(output).hexdigest(),
            "bytes": len(output),
            "frames": count,
            "width": size[0],
            "height": size[1],
        },
    }
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return Rendering(path, manifest_path, manifest)


def _write_mp4(drawn, path: Path, size: tuple[int, int], fps: int, meta: str) -> int:
    import imageio_ffmpeg  # deferred: spawns the ffmpeg its wheel ships

    tmp = path.with_name(path.name + ".part")
    writer = imageio_ffmpeg.write_frames(
        str(tmp),
        size,
        fps=fps,
        codec="libx264",
        quality=None,
        macro_block_size=2,
        ffmpeg_log_level="error",
        output_params=[
            "-f", "mp4",
            "-crf", "26",
            "-preset", "medium",
            "-threads", "1",
            "-x264-params", "threads=1:sliced-threads=0",
            "-map_metadata", "-1",
            "-fflags", "+bitexact",
            "-flags", "+bitexact",
            "-metadata", f"comment={meta}",
            "-metadata", "title=Argusic rendering",
            "-movflags", "+faststart+use_metadata_tags",
        ],
    )  # fmt: skip
    writer.send(None)
    count = 0
    try:
        for frame in drawn:
            writer.send(frame.image)
            count += 1
    finally:
        writer.close()
    os.replace(tmp, path)
    return count


def _write_gif(drawn, path: Path, size: tuple[int, int], fps: int, meta: str) -> int:
    images: list[Image.Image] = []
    durations: list[int] = []
    last: bytes | None = None
    count = 0
    for frame in drawn:
        count += 1
        if frame.image == last:
            durations[-1] += round(1000 / fps)
            continue
        last = frame.image
        image = Image.frombytes("RGB", size, frame.image)
        images.append(image.convert("P", palette=Image.Palette.ADAPTIVE, colors=64))
        durations.append(round(1000 / fps))
    images[0].save(
        path,
        save_all=True,
        append_images=images[1:],
        duration=durations,
        loop=0,
        optimize=False,
        comment=meta.encode("utf-8"),
    )
    return count


def _write_png(drawn, path: Path, size: tuple[int, int], fps: int, meta: str) -> int:
    """A still: the moment of the first failure (its caption on screen), else the last screen."""
    chosen: Frame | None = None
    count = 0
    for frame in drawn:
        count += 1
        if frame.mark == "end card":
            continue
        if chosen is None or " failed: " not in (chosen.caption or ""):
            chosen = frame
    assert chosen is not None
    info = PngInfo()
    info.add_text("Comment", meta)
    Image.frombytes("RGB", size, chosen.image).save(path, pnginfo=info, optimize=False)
    return count
