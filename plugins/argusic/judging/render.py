"""Layer 1 rendering hint (issue 14): does each landed HTML page render, in a locked-down headless Chromium?

`render_pages` copies the artifacts folder's regular files (no links followed, size and count caps) to a
private staging folder, mounts it read-only in one container of RENDER_IMAGE (no network, read-only
root, tmpfs only where Chromium writes, every capability dropped, the images' unprivileged user, pid and
memory caps) and runs render_driver.py there, which renders each page in its own Chromium. Each page has
a time bound, and so has the container (the driver runs under `timeout`, and the caller kills the
container when its bound plus a margin is over): a page whose script never yields ends as `timeout`, it
never hangs the caller. Screenshots come back as base64 on the driver's stdout (the container has no
writable mount of ours) and are written here, after checking they are PNGs, as
`<out_dir>/page<NN>-{load,1s,3s}.png`.

Outcomes: `clean` (rendered, no console error), `console_errors` (rendered, with console.error /
uncaught exceptions / errors Chromium logged), `not_rendered` (did not load, no body, nothing visible and
no drawn canvas, or refused: a link, not a regular file, over the size cap, outside the artifacts
folder), `timeout` (the page's or the container's bound ran out).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from argusic.core.settings import PACKAGE_DIR
from argusic.sandbox.containment import AGENT_GID, AGENT_HOME, AGENT_UID, locked_container_options

RENDER_IMAGE = "argusic-render:bookworm"  # scripts/build_render_image.sh
RENDER_IMAGE_ENV = "ARGUSIC_RENDER_IMAGE"
RENDER_LAYOUT_LABEL = "argusic.render.layout"
RENDER_LAYOUT = "2"  # 2: upgraded from bookworm-security. scripts/build_render_image.sh
CONTAINER_LABEL = "argusic.judging.render"
DRIVER = PACKAGE_DIR / "payload" / "render_driver.py"  # mounted read-only into the render container
PAGES_IN_CONTAINER = "/pages"
DRIVER_IN_CONTAINER = "/opt/argusic/render_driver.py"

Outcome = Literal["clean", "console_errors", "not_rendered", "timeout"]
OUTCOMES: tuple[str, ...] = ("clean", "console_errors", "not_rendered", "timeout")
SHOT_NAMES = ("load", "1s", "3s")

MAX_PAGES = 50  # per call
MAX_PAGE_BYTES = 5 * 1024 * 1024  # one HTML page
MAX_ASSET_BYTES = 20 * 1024 * 1024  # one other file of the artifacts folder (images, scripts, data)
MAX_STAGED_FILES = 2000
MAX_STAGED_BYTES = 100 * 1024 * 1024
MAX_SCANNED_ENTRIES = 20_000  # folder entries looked at while staging
MAX_ERRORS = 20
MAX_ERROR_CHARS = 500
MAX_SCREENSHOT_BYTES = 16 * 1024 * 1024
MAX_OUTPUT_BYTES = MAX_PAGES * 3 * MAX_SCREENSHOT_BYTES // 8  # what we read of the driver's stdout
# dockerd's log of the render container (json-file: one line's JSON wrapping on top of the output)
RENDER_LOG_BYTES = MAX_OUTPUT_BYTES + MAX_OUTPUT_BYTES // 4
# Chromium's start, per page, before the page's own bound begins: a bound on the host, not the page (a
# loaded 2-core host took over 15 s to start one, and a start that fails is not the page's fault)
START_SECONDS = 60.0
CONTAINER_MARGIN_SECONDS = 20.0
SWEEP_AFTER_SECONDS = 600
MEMORY = "1g"
PIDS = 512  # Chromium's processes and their threads
SHM = "256m"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class RenderError(RuntimeError):
    """Rendering could not be done at all (no Docker, no image, the browser does not start): the
    rendering hint is then "unavailable", not a page's outcome."""


@dataclass(frozen=True)
class PageRender:
    path: str  # relative to the artifacts folder
    outcome: Outcome
    console_errors: tuple[str, ...]  # capped: MAX_ERRORS messages x MAX_ERROR_CHARS chars
    screenshots: tuple[Path, ...]  # PNGs at three moments (load, +1 s, +3 s), may be fewer on failure
    detail: str


def render_image() -> str:
    return os.environ.get(RENDER_IMAGE_ENV) or RENDER_IMAGE


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _refused(path: str, why: str) -> PageRender:
    return PageRender(path, "not_rendered", (), (), f"refused: {why}")


def _copy_regular(source: Path, dest: Path, cap: int) -> str | None:
    """Copy one file without following a link; None when copied, else why it was not."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        return f"cannot open ({err.strerror})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_nlink != 1:
            return f"has {info.st_nlink} hard links"
        if info.st_size > cap:
            return f"{info.st_size} bytes, over the {cap} byte cap"
        data = handle.read(cap + 1)
    if len(data) > cap:
        return f"over the {cap} byte cap"
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    dest.write_bytes(data)
    dest.chmod(0o644)
    return None


def _stage_assets(root: Path, stage: Path, pages: set[str]) -> None:
    """The artifacts folder's other regular files (what pages load: scripts, styles, images), links
    and special files skipped, within the count and byte caps; pages were staged already."""
    count, total = len(pages), sum(p.stat().st_size for p in stage.rglob("*") if p.is_file())
    folders, scanned = [root], 0
    while folders and scanned < MAX_SCANNED_ENTRIES:
        folder = folders.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        scanned += len(entries)
        for entry in entries:
            if entry.is_symlink():
                continue
            relative = Path(entry.path).relative_to(root).as_posix()
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
                continue
            if relative in pages or not entry.is_file(follow_symlinks=False):
                continue
            size = entry.stat(follow_symlinks=False).st_size
            if count >= MAX_STAGED_FILES or total + size > MAX_STAGED_BYTES:
                return
            if _copy_regular(Path(entry.path), stage / relative, MAX_ASSET_BYTES) is None:
                count, total = count + 1, total + size


def _relative(page: Path, root: Path) -> str | None:
    """The page's path under root, with no '..' and without resolving links (None when outside)."""
    absolute = Path(os.path.abspath(page))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return None
    return relative.as_posix() if relative.parts and ".." not in relative.parts else None


def _linked_folder(page: Path, root: Path) -> bool:
    """Is any folder between root and the page a link?"""
    folder = Path(os.path.abspath(page)).parent
    while folder != root and root in folder.parents:
        if folder.is_symlink():
            return True
        folder = folder.parent
    return False


def _save_png(data: str, dest: Path) -> Path | None:
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return None
    if not raw.startswith(PNG_SIGNATURE) or len(raw) > MAX_SCREENSHOT_BYTES:
        return None
    tmp = dest.with_name(dest.name + ".part")
    tmp.write_bytes(raw)
    os.replace(tmp, dest)
    return dest


def _page_result(path: str, index: int, line: dict, out_dir: Path) -> PageRender:
    outcome = line.get("outcome")
    if outcome not in OUTCOMES:
        return PageRender(
            path, "not_rendered", (), (), _clip(f"the driver said: {line.get('fatal') or line}")
        )
    shots: list[Path] = []
    for name, data in zip(SHOT_NAMES, line.get("screenshots") or [], strict=False):
        saved = (
            _save_png(str(data), out_dir / f"page{index:02d}-{name}.png") if isinstance(data, str) else None
        )
        if saved is not None:
            shots.append(saved)
    errors = tuple(_clip(str(e)) for e in (line.get("console_errors") or [])[:MAX_ERRORS])
    detail = str(line.get("detail") or "")
    dropped = line.get("dropped_errors")
    if isinstance(dropped, int) and dropped > 0:
        detail += f" ({dropped} more console errors not kept: cap {MAX_ERRORS})"
    if isinstance(line.get("seconds"), (int, float)):
        detail += f" [{line['seconds']:.1f} s]"
    return PageRender(path, outcome, errors, tuple(shots), _clip(detail))


def _sweep_finished(client) -> None:
    """Remove rendering containers that finished over SWEEP_AFTER_SECONDS ago: left by a caller that died
    before removing its own (a live caller removes its container within seconds of its end)."""
    import docker  # deferred: the Docker SDK loads only when a page is rendered

    cutoff = datetime.now(UTC) - timedelta(seconds=SWEEP_AFTER_SECONDS)
    with contextlib.suppress(docker.errors.DockerException):
        for container in client.containers.list(
            all=True, filters={"label": CONTAINER_LABEL, "status": "exited"}
        ):
            finished = str(container.attrs.get("State", {}).get("FinishedAt", ""))
            try:
                when = datetime.fromisoformat(finished[:19]).replace(tzinfo=UTC)
            except ValueError:
                continue
            if when < cutoff:
                with contextlib.suppress(docker.errors.DockerException):
                    container.remove(force=True)


def _run_container(stage: Path, page_paths: list[str], timeout_seconds: float) -> tuple[list[dict], str]:
    """Run the driver over the staged pages; (its result lines, what happened to the container)."""
    try:
        import requests  # deferred: the Docker SDK's transport (its timeouts), loaded with it

        import docker  # deferred: the Docker SDK loads only when a page is rendered
    except ImportError as err:  # pragma: no cover - both are in requirements.txt
        raise RenderError(f"docker SDK missing: {err}") from None
    try:
        client = docker.from_env()
        image = client.images.get(render_image())
    except docker.errors.ImageNotFound:
        raise RenderError(
            f"render image {render_image()} not found: build it with `make render-image`"
        ) from None
    except docker.errors.DockerException as err:
        raise RenderError(f"docker: {err}") from None
    _sweep_finished(client)
    layout = (image.labels or {}).get(RENDER_LAYOUT_LABEL)
    if layout != RENDER_LAYOUT:
        raise RenderError(
            f"render image {render_image()} has layout {layout!r}, not {RENDER_LAYOUT}: rebuild it with "
            "`make render-image`"
        )
    per_page = START_SECONDS + timeout_seconds + 5
    life = int(per_page * len(page_paths) + 10)
    job = {
        "pages": [f"{PAGES_IN_CONTAINER}/{p}" for p in page_paths],
        "page_seconds": timeout_seconds,
        "start_seconds": START_SECONDS,
    }
    container = None
    ending = "finished"
    try:
        container = client.containers.run(
            image.id,
            ["timeout", "--kill-after=5", str(life), "python3", "-I", DRIVER_IN_CONTAINER, json.dumps(job)],
            detach=True,
            name=f"argusic-render-{secrets.token_hex(6)}",
            labels={CONTAINER_LABEL: "1"},
            shm_size=SHM,
            **locked_container_options(
                tmpfs={
                    "/tmp": "rw,noexec,nosuid,nodev,size=512m",
                    AGENT_HOME: f"rw,noexec,nosuid,nodev,size=64m,uid={AGENT_UID},gid={AGENT_GID}",
                },
                volumes={
                    str(stage): {"bind": PAGES_IN_CONTAINER, "mode": "ro"},
                    str(DRIVER): {"bind": DRIVER_IN_CONTAINER, "mode": "ro"},
                },
                working_dir="/tmp",
                environment={"HOME": AGENT_HOME, "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"},
                memory=MEMORY,
                pids=PIDS,
                cpus=2,
                log_bytes=RENDER_LOG_BYTES,
            ),
        )
        try:
            status = container.wait(timeout=life + CONTAINER_MARGIN_SECONDS)
            code = status.get("StatusCode")
            if code == 124 or code == 137:
                ending = f"the container's {life} s bound ran out"
            elif code != 0:
                ending = f"the driver exited {code}"
        except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
            ending = f"the container's {life} s bound ran out (killed)"
            with contextlib.suppress(docker.errors.DockerException):
                container.kill()
        output = container.logs(stdout=True, stderr=False)[:MAX_OUTPUT_BYTES]
        errors = container.logs(stdout=False, stderr=True)[-2000:].decode(errors="replace").strip()
        if errors and ending != "finished":
            ending += f": {errors.splitlines()[-1]}"
    except docker.errors.DockerException as err:
        raise RenderError(f"docker: {err}") from None
    finally:
        if container is not None:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True)
    lines: list[dict] = []
    for raw in output.decode("utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            line = json.loads(raw)
            if isinstance(line, dict):
                lines.append(line)
    return lines, ending


def render_pages(
    pages: list[Path],
    *,
    out_dir: Path,
    timeout_seconds: float = 20.0,
    artifacts_root: Path | None = None,
) -> list[PageRender]:
    """Render each page (see the module docstring); one PageRender per page, in the given order.

    `artifacts_root`: the folder the pages' paths are relative to and whose other files they may load
    (default: the pages' deepest common folder). RenderError when rendering cannot be done at all;
    ValueError for more than MAX_PAGES pages or a non-positive bound."""
    if len(pages) > MAX_PAGES:
        raise ValueError(f"{len(pages)} pages given; at most {MAX_PAGES} are rendered per call")
    if not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be positive, not {timeout_seconds}")
    if not pages:
        return []
    if artifacts_root is None:
        artifacts_root = Path(os.path.commonpath([os.path.abspath(p.parent) for p in pages]))
    root = Path(os.path.abspath(artifacts_root))
    out_dir.mkdir(parents=True, exist_ok=True)

    results: list[PageRender | None] = [None] * len(pages)
    stage = Path(os.path.realpath(tempfile.mkdtemp(prefix="argusic-render-")))
    try:
        stage.chmod(0o755)  # the container's unprivileged user reads it (read-only mount)
        to_render: list[tuple[int, str]] = []
        for index, page in enumerate(pages):
            if os.path.islink(root) or not os.path.isdir(root):
                what = "a symbolic link" if os.path.islink(root) else "not a folder"
                results[index] = _refused(str(page), f"the artifacts folder {root} is {what}")
                continue
            relative = _relative(page, root)
            if relative is None:
                results[index] = _refused(str(page), f"{page} is outside the artifacts folder {root}")
                continue
            if _linked_folder(page, root):
                results[index] = _refused(relative, f"{relative}: a folder on its path is a symbolic link")
                continue
            if os.path.islink(page):
                results[index] = _refused(relative, f"{relative} is a symbolic link")
                continue
            why = _copy_regular(root / relative, stage / relative, MAX_PAGE_BYTES)
            if why is not None:
                results[index] = _refused(relative, f"{relative}: {why}")
                continue
            to_render.append((index, relative))
        if to_render:
            _stage_assets(root, stage, {relative for _, relative in to_render})
            lines, ending = _run_container(stage, [relative for _, relative in to_render], timeout_seconds)
            by_index = {line.get("index"): line for line in lines}
            fatal = [line["fatal"] for line in lines if isinstance(line.get("fatal"), str)]
            if fatal and len(fatal) == len(to_render):
                raise RenderError(f"the browser could not be used: {_clip(fatal[0])}")
            for position, (index, relative) in enumerate(to_render):
                line = by_index.get(position)
                if line is None:
                    results[index] = PageRender(relative, "timeout", (), (), _clip(f"no result: {ending}"))
                else:
                    results[index] = _page_result(relative, index, line, out_dir)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return [r for r in results if r is not None]
