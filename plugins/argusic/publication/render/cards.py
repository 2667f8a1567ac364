"""Share images (PNG, 1200×630): one per run and one per board, drawn from published values only.

A run card reads one row of the cycle's published ``attempts.json`` and a board card the cycle's
published ``board.json``: nothing from the warehouse, the records or the evidence. Only these fields
are drawn (``RUN_FIELDS``, ``BOARD_FIELDS``): the outcome, the score, the project as published (a
sealed project's label, "private project K of N", never its name), the agent's identity code (never
the agent's or the model's name), the cycle and the link to the page. The link and the fields drawn
are in the PNG's text chunks too.

The step after publication (``share_images``): every run card and the board card of a published
cycle, written to ``<publish dir>/<cycle>/renderings/`` with ``index.json`` listing them (the hook a
run page can read to list its renderings).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw
from PIL.PngImagePlugin import PngInfo

from argusic.core.evidence import served_segment
from argusic.core.layout import publish_dir
from argusic.core.record import parse_attempt_id
from argusic.core.safe_io import Unreadable, read_capped
from argusic.publication.render import RENDERER_VERSION
from argusic.publication.render.attempt import (
    MAX_PUBLISHED_BYTES,
    published_attempts,
    render_attempt,
    run_page_url,
    site_url,
)
from argusic.publication.render.frames import ACCENT, BACKGROUND, BAR, FAIL, FOREGROUND, PASS, font
from argusic.publication.render.output import RenderRefused
from argusic.publication.render.timeline import one_line

SIZE = (1200, 630)
RUN_FIELDS = (
    "attempt_id",
    "cycle_id",
    "project_id",
    "project_label",
    "agent_id",
    "outcome",
    "score",
    "sealed",
)
BOARD_FIELDS = ("cycle_id", "rank", "agent_id", "board_score", "pass_rate")
BOARD_ROWS = 8
INDEX_SCHEMA = "argusic.renderings/1"


def _number(value: Any, digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—"
    return f"{value:.{digits}f}"


def _card(title: str, lines: list[tuple[str, tuple[int, int, int], int]], link: str, drawn: dict) -> tuple:
    image = Image.new("RGB", SIZE, BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, SIZE[0], 70], fill=BAR)
    draw.text((40, 18), "Argusic", font=font(30, True), fill=ACCENT)
    draw.text((220, 24), one_line(title, 60), font=font(22), fill=FOREGROUND)
    y = 110
    for text, tint, size in lines:
        draw.text((40, y), one_line(text, 1200 // (size * 6 // 10)), font=font(size, size >= 30), fill=tint)
        y += size + 22
    draw.rectangle([0, SIZE[1] - 60, SIZE[0], SIZE[1]], fill=BAR)
    draw.text((40, SIZE[1] - 44), one_line(link, 95), font=font(20), fill=FOREGROUND)
    info = PngInfo()
    info.add_text("Comment", f"Argusic share image ({RENDERER_VERSION}); page: {link}")
    info.add_text("argusic:fields", json.dumps(drawn, sort_keys=True, ensure_ascii=False))
    return image, info


def run_card(row: dict[str, Any], path: Path, cycle_id: str | None = None) -> dict[str, Any]:
    """A run's share image from its published attempts.json row (of `cycle_id`: the rows do not
    repeat it; else the attempt id's cycle part); returns the fields drawn."""
    if cycle_id is None:
        cycle_id = str(parse_attempt_id(row["attempt_id"])["cycle_id"])
    row = {**row, "cycle_id": cycle_id}
    drawn = {key: row.get(key) for key in RUN_FIELDS if key in row}
    sealed = bool(row.get("sealed"))
    project = row.get("project_label") if sealed else row.get("project_id")
    outcome = str(row.get("outcome") or "not scored")
    tint = PASS if outcome.startswith("pass") else FOREGROUND if outcome == "invalid" else FAIL
    link = run_page_url(str(row.get("cycle_id")), str(row["attempt_id"]))
    lines = [
        (f"outcome: {outcome}", tint, 44),
        (f"score: {_number(row.get('score'))}", FOREGROUND, 36),
        (f"project: {project}" + (" (sealed until the reveal)" if sealed else ""), FOREGROUND, 26),
        (f"agent: {row.get('agent_id')}", FOREGROUND, 26),
        (f"cycle: {row.get('cycle_id')}", FOREGROUND, 26),
    ]
    image, info = _card(f"run {row['attempt_id']}", lines, link, drawn)
    image.save(path, pnginfo=info, optimize=False)
    return drawn


def run_card_name(row: dict[str, Any]) -> str:
    return f"run-{served_segment(row['attempt_id'])}.png"


def board_card(board: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """The board's share image from the published board.json; returns the rows drawn."""
    cycle = str(board.get("cycle_id"))
    rows = [r for r in board.get("rows") or [] if isinstance(r, dict)]
    rows.sort(key=lambda r: (r.get("rank") is None, r.get("rank") or 0, str(r.get("agent_id"))))
    drawn = [{key: r.get(key) for key in BOARD_FIELDS if key in r} for r in rows[:BOARD_ROWS]]
    lines = [(f"board of cycle {cycle}", ACCENT, 30)]
    for r in drawn:
        rate = r.get("pass_rate")
        percent = _number(rate * 100 if isinstance(rate, int | float) else None, 0)
        rank = r.get("rank") if r.get("rank") is not None else "—"
        score = _number(r.get("board_score"))
        text = f"{rank}. {r.get('agent_id')}   board score {score}   pass rate {percent}%"
        lines.append((text, FOREGROUND, 22))
    image, info = _card(f"cycle {cycle}", lines, f"{site_url()}cycles/{cycle}/index.html", {"rows": drawn})
    image.save(path, pnginfo=info, optimize=False)
    return drawn


def highlight_rows(rows: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """Up to `count` published attempts worth a video, failures and fixes alike: alternately one whose
    errors were fixed and one that failed (most errors first, then by id; one per project), never a
    sealed one or one whose served copy was withheld."""
    shown = [
        r
        for r in rows
        if not r.get("sealed") and not r.get("served_copy_withheld") and r.get("served_recording_sha256")
    ]

    def errors(row: dict[str, Any], key: str) -> int:
        value = row.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    fixed = sorted(
        (r for r in shown if errors(r, "observed_errors_fixed") > 0),
        key=lambda r: (-errors(r, "observed_errors_fixed"), r["attempt_id"]),
    )
    failed = sorted(
        (r for r in shown if not str(r.get("outcome") or "").startswith("pass")),
        key=lambda r: (-errors(r, "observed_errors_encountered"), r["attempt_id"]),
    )
    chosen: list[dict[str, Any]] = []
    projects: set[Any] = set()
    queues = [fixed, failed]
    while len(chosen) < count and any(queues):
        for queue in queues:
            while queue and len(chosen) < count:
                row = queue.pop(0)
                if row.get("project_id") not in projects and row not in chosen:
                    chosen.append(row)
                    projects.add(row.get("project_id"))
                    break
    return chosen


def share_images(cycle_id: str, folder: Path | None = None, videos: int = 0) -> Path:
    """The step after publication: every run card and the board card of the published cycle, and mp4
    renderings of up to `videos` highlights (``highlight_rows``), in ``<publish dir>/<cycle>/renderings/``,
    listed with their sha256 in ``index.json``."""
    folder = folder or publish_dir()
    try:
        board = json.loads(read_capped(folder / cycle_id / "board.json", MAX_PUBLISHED_BYTES))
    except (Unreadable, FileNotFoundError, ValueError) as err:
        raise FileNotFoundError(f"cycle {cycle_id} is not published in {folder}: {err}") from None
    out = folder / cycle_id / "renderings"
    out.mkdir(parents=True, exist_ok=True)
    listed: list[dict[str, Any]] = []
    board_card(board, out / "board.png")
    listed.append({"kind": "board", "file": "board.png"})
    rows = published_attempts(cycle_id, folder)
    for row in rows:
        name = run_card_name(row)
        run_card(row, out / name, cycle_id)
        listed.append({"kind": "run", "attempt_id": row["attempt_id"], "file": name})
    for row in highlight_rows(rows, videos):
        try:
            done = render_attempt(row["attempt_id"], out, fmt="mp4")
        except RenderRefused as err:
            listed.append({"kind": "video", "attempt_id": row["attempt_id"], "refused": str(err)})
            continue
        listed.append(
            {
                "kind": "video",
                "attempt_id": row["attempt_id"],
                "file": done.path.name,
                "manifest": done.manifest_path.name,
            }
        )
    for item in listed:
        if "file" in item:
            item["sha256"] = hashlib.sha256((out / item["file"]).read_bytes()).hexdigest()
    index = {"schema": INDEX_SCHEMA, "cycle_id": cycle_id, "renderer": RENDERER_VERSION, "files": listed}
    (out / "index.json").write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out
