"""`argusic render`: an attempt's served recording rendered (mp4, gif, png) with its manifest, and
`argusic share-images`: the share images of a published cycle (argusic.publication.render)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from argusic.cli.common import console, fail
from argusic.publication.render.attempt import render_attempt
from argusic.publication.render.cards import share_images as write_share_images
from argusic.publication.render.output import FORMATS, RenderRefused


def render(
    attempt_id: Annotated[
        str, typer.Argument(help="The attempt id (as the operator or the publication names it)")
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="mp4, gif or png (a still at the first failure)")
    ] = "mp4",
    out: Annotated[Path, typer.Option(help="Folder for the rendering and its manifest")] = Path("renderings"),
    fps: Annotated[int | None, typer.Option(min=1, max=30, help="Frames per second (mp4 10, gif 5)")] = None,
    idle_limit: Annotated[
        float, typer.Option(min=0.1, max=60.0, help="Pauses longer than this are fast-forwarded to it")
    ] = 2.0,
    max_seconds: Annotated[
        float, typer.Option(min=5.0, max=600.0, help="Trim to about this length (never a failing step)")
    ] = 120.0,
) -> None:
    """Render an attempt's served (masked) recording: idle time fast-forwarded and trimmed stretches
    marked on screen, captions from the recorded error-and-fix timeline, an end card with the run page
    and the evidence's sha256; a JSON manifest beside it lists every edit (same input, same bytes)."""
    if fmt not in FORMATS:
        fail(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    started = time.process_time()
    try:
        done = render_attempt(
            attempt_id, out, fmt=fmt, fps=fps, idle_limit=idle_limit, max_seconds=max_seconds
        )
    except RenderRefused as err:
        fail(f"not rendered: {err}")
    m = done.manifest
    console.print(
        f"{done.path} ({m['output']['bytes']} bytes, {m['output']['frames']} frames, "
        f"{m['output']['width']}x{m['output']['height']}; {time.process_time() - started:.1f} CPU s)\n"
        f"manifest {done.manifest_path}: {len(m['edits'])} edit(s), {m['failures']} failure(s) captioned; "
        f"served recording sha256 {m['served_recording_sha256']}",
        markup=False,
        highlight=False,
    )


def share_images(
    cycle: Annotated[str, typer.Option(help="The published cycle")],
    publish_dir: Annotated[
        Path | None, typer.Option(help="The published files (default: published/)")
    ] = None,
    videos: Annotated[
        int, typer.Option(min=0, max=20, help="Also render this many highlights as mp4 (fixes and failures)")
    ] = 0,
) -> None:
    """Share images (PNG) of a published cycle: one per run and the board's, from published values only,
    and mp4 renderings of up to --videos highlights, into <publish dir>/<cycle>/renderings/ with
    index.json."""
    try:
        out = write_share_images(cycle, publish_dir, videos)
    except FileNotFoundError as err:
        fail(str(err))
    console.print(f"share images in {out} (listed in {out / 'index.json'})", markup=False, highlight=False)
