"""Renderings of served recordings (issue 30): order kept, one session, no failure hidden, every
rendering linked back and reproducible, share images from published values only."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from argusic.publication.render.cards import highlight_rows, run_card, share_images
from argusic.publication.render.edits import (
    Edit,
    EditRefused,
    Plan,
    TimeMap,
    plan_edits,
    validate_edits,
)
from argusic.publication.render.frames import captions_of, frames
from argusic.publication.render.output import Link, RenderRefused, ffmpeg_exe, render_recording
from argusic.publication.render.timeline import RecordingRefused, load_recording, timeline_of
from PIL import Image
from render_casts import cast, failing_at_the_end, failure_then_fix, note, prompt

LINK = Link(
    "2026-12.board.A-3f9c0a.wavgen.a1",
    "https://argusic.example/cycles/2026-12/runs/2026-12.board.A-3f9c0a.wavgen.a1.html",
    "ab" * 32,
)


def parts(data: bytes):
    recording = load_recording(data)
    return recording, timeline_of(recording)


# -- reading: one session, in order, or refused -------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json\n", "not an asciicast v2"),
        (
            json.dumps({"version": 3, "term": {"cols": 80, "rows": 24}}).encode() + b"\n",
            "not an asciicast v2",
        ),
        (cast([(0.1, "a")], width=5000), "not a terminal size"),
        (cast([(2.0, "a"), (1.0, "b")]), "out of order"),
        (cast([(0.1, "a")]) + cast([(0.2, "b")]), "two sessions joined"),
        (cast([(0.1, "a")]) + b'[0.2, "o"]\n', "not an asciicast v2 event"),
        (cast([(0.1, "a")]) + b'[NaN, "o", "x"]\n', "not within"),
    ],
)
def test_a_recording_that_is_not_one_ordered_v2_session_is_refused(data, reason):
    with pytest.raises(RecordingRefused, match=reason):
        load_recording(data)
    with pytest.raises(RenderRefused, match=reason):
        render_recording(data, Path("/nonexistent"), "x", LINK, fmt="png")


def test_the_timeline_ties_each_failure_to_its_command_and_captions_it():
    recording, timeline = parts(failure_then_fix())
    kinds = [(e.kind, e.command) for e in timeline.entries if e.kind != "note"]
    assert kinds == [
        ("command", "pip install -r requirements.txt"),
        ("failed", "pip install -r requirements.txt"),
        ("recovery", "pip install -r requirements.txt"),
        ("command", "pip install -r requirements.txt"),
        ("fixed", "pip install -r requirements.txt"),
        ("command", "wavgen --help"),
    ]
    assert timeline.failure_spans == ((0.5, 1.7),)
    texts = [c.text for c in captions_of(timeline)]
    assert (
        texts[0]
        == "`pip install -r requirements.txt` failed: step failed with exit code 1; counted as an error"
    )
    assert texts[1].startswith("Next: recovery move loosen-pin: retry without the version pin")
    assert "`pip install -r requirements.txt` passed after the fix" in texts


# -- edits: validated against the timeline -------------------------------------------------------------


def test_idle_and_trim_are_planned_and_never_touch_a_failure():
    recording, timeline = parts(failure_then_fix(idle=30.0, busy=40))
    edits = plan_edits(recording, timeline, idle_limit=2.0, max_seconds=30.0).edits
    assert [e.kind for e in edits] == ["trim", "idle"]
    for edit in edits:
        for start, end in timeline.failure_spans:
            assert edit.end < start or edit.start > end
    timemap = TimeMap(edits, recording.duration)
    assert timemap.length <= 30.0


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (Edit("trim", 0.4, 2.5, 1.5), "cuts into a failing step"),  # the failing command's output
        (Edit("trim", 1.65, 1.75, 1.5), "cuts into a failing step"),  # the failure note alone
        (Edit("trim", 1.75, 1.85, 1.5), "recovery"),  # the recovery note
        (Edit("trim", 3.0, 1000.0, 1.5), "not a span inside the recording"),
        (Edit("trim", 3.0, 4.0, 0.0), "marked by a card"),  # a trim nobody sees
        (Edit("idle", 0.9, 1.7, 0.1), "not idle"),  # events inside a "pause"
        (Edit("splice", 3.0, 4.0, 1.0), "only idle compression and trimming"),
        (Edit("reverse", 3.0, 4.0, 1.0), "only idle compression and trimming"),
    ],
)
def test_an_edit_that_would_hide_or_reorder_is_refused(edit, reason):
    recording, timeline = parts(failure_then_fix(idle=30.0, busy=40))
    with pytest.raises(EditRefused, match=reason):
        validate_edits([edit], recording, timeline)


def test_edits_out_of_order_or_overlapping_are_refused():
    recording, timeline = parts(failure_then_fix(idle=30.0, busy=40))
    with pytest.raises(EditRefused, match="overlaps or comes before"):
        validate_edits([Edit("trim", 10.0, 20.0, 1.5), Edit("trim", 5.0, 8.0, 1.5)], recording, timeline)
    with pytest.raises(EditRefused, match="overlaps or comes before"):
        validate_edits([Edit("trim", 5.0, 12.0, 1.5), Edit("trim", 10.0, 20.0, 1.5)], recording, timeline)


def _long_failing_step(seconds: int) -> bytes:
    events = [(0.1, prompt("make"))] + [(0.2 + i, f"line {i}\r\n") for i in range(seconds)]
    events.append((seconds + 1.0, note("step failed with exit code 2; counted as an error")))
    return cast(events)


def test_a_long_failing_step_is_sped_up_never_cut_and_refused_beyond_the_top_speed():
    recording, timeline = parts(_long_failing_step(200))
    plan = plan_edits(recording, timeline, max_seconds=30.0)
    assert plan.edits == [] and plan.speed == 7.0  # 201 s in 30 s: shown ×7, nothing trimmed
    assert TimeMap(plan.edits, recording.duration, plan.speed).length <= 30.0
    recording, timeline = parts(_long_failing_step(400))
    with pytest.raises(EditRefused, match="without cutting a failing step"):
        plan_edits(recording, timeline, max_seconds=30.0)


def test_a_recording_without_the_harness_notes_is_never_trimmed():
    events = [(0.1, prompt("make"))] + [(0.2 + i, f"line {i}\r\n") for i in range(100)]
    events += [(101.0, "error: something failed\r\n")]
    recording, timeline = parts(cast(events))
    assert not timeline.harness_notes
    plan = plan_edits(recording, timeline, max_seconds=30.0)
    assert plan.edits == [] and plan.speed == 3.5


def test_a_caller_cannot_hand_in_an_edit_that_hides_the_failure(tmp_path):
    data = failure_then_fix(idle=30.0, busy=40)
    for plan in (
        Plan([Edit("trim", 0.2, 2.4, 1.5)]),  # the failing step and its notes
        Plan([Edit("idle", 1.0, 1.7, 0.1)]),  # the error line "compressed" away
        Plan([], speed=1000.0),  # played too fast to see
    ):
        with pytest.raises(RenderRefused):
            render_recording(data, tmp_path, "x", LINK, fmt="png", plan=plan)
    assert not list(tmp_path.iterdir())


def test_the_time_map_is_monotone_both_ways():
    recording, timeline = parts(failure_then_fix(idle=30.0, busy=40))
    edits = plan_edits(recording, timeline, max_seconds=30.0).edits
    timemap = TimeMap(edits, recording.duration)
    ts = [i * 0.05 for i in range(int(recording.duration / 0.05) + 2)]
    shown = [timemap.rendered(t) for t in ts]
    assert shown == sorted(shown)
    back = [timemap.recorded(i * 0.05)[0] for i in range(int(timemap.length / 0.05) + 2)]
    assert back == sorted(back)


# -- frames: order, failures on screen ------------------------------------------------------------------


def test_frames_follow_the_recording_and_every_failure_is_on_screen():
    data = failure_then_fix(idle=30.0, busy=40)
    recording, timeline = parts(data)
    edits = plan_edits(recording, timeline, max_seconds=30.0).edits
    drawn = list(frames(recording, timeline, Plan(edits), fps=5, title="t", end_card=[]))
    times = [f.recorded for f in drawn]
    assert times == sorted(times)  # never reordered
    failing = [f for f in drawn if f.caption and " failed: " in f.caption]
    assert failing, "the failure's caption is on screen"
    assert any(f.mark and f.mark.startswith("✂ trimmed") for f in drawn)
    assert any(f.mark and f.mark.startswith("▶▶ fast-forward") for f in drawn)
    assert drawn[-1].mark == "end card"
    last_screen = [f for f in drawn if f.mark != "end card"][-1]
    assert last_screen.recorded == recording.duration  # the end is always shown


# -- outputs: link back, manifest, determinism, by looking ----------------------------------------------


def _ffmpeg_info(path: Path) -> str:
    out = subprocess.run([ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True)
    return out.stderr


def _frame_at(path: Path, seconds: float, dest: Path) -> Image.Image:
    subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-ss", f"{seconds}", "-i", str(path), "-frames:v", "1", str(dest)],
        check=True,
    )
    return Image.open(dest)


def test_mp4_rendering_links_back_and_is_reproducible(tmp_path):
    data = failure_then_fix(idle=30.0, busy=40)
    one = render_recording(data, tmp_path / "a", "demo", LINK, fmt="mp4", max_seconds=30.0)
    two = render_recording(data, tmp_path / "b", "demo", LINK, fmt="mp4", max_seconds=30.0)
    assert one.path.read_bytes() == two.path.read_bytes()  # same input, same bytes
    assert one.manifest_path.read_bytes() == two.manifest_path.read_bytes()
    m = one.manifest
    assert m["served_recording_sha256"] == __import__("hashlib").sha256(data).hexdigest()
    assert m["evidence_sha256"] == LINK.evidence_sha256 and m["run_page"] == LINK.run_page
    assert [e["kind"] for e in m["edits"]] == ["trim", "idle"]
    assert m["failures"] == 1 and m["captions"][0]["kind"] == "failed"
    info = _ffmpeg_info(one.path)
    assert "h264" in info and f"{m['output']['width']}x{m['output']['height']}" in info
    meta = subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-i", str(one.path), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
    ).stdout
    assert LINK.run_page in meta and LINK.evidence_sha256 in meta  # the file's metadata
    first = _frame_at(one.path, 0.3, tmp_path / "first.png")
    last = _frame_at(one.path, m["output"]["frames"] / 10 - 0.2, tmp_path / "last.png")
    assert first.size == last.size == (m["output"]["width"], m["output"]["height"])
    assert first.tobytes() != last.tobytes()


def test_gif_and_png_carry_the_link(tmp_path):
    data = failing_at_the_end()
    gif = render_recording(data, tmp_path, "f", LINK, fmt="gif")
    png = render_recording(data, tmp_path, "f", LINK, fmt="png")
    with Image.open(gif.path) as image:
        assert LINK.run_page.encode() in image.info["comment"]
        assert image.n_frames >= 2
    with Image.open(png.path) as image:
        assert LINK.evidence_sha256 in image.text["Comment"]
    assert [c["kind"] for c in png.manifest["captions"]] == ["failed", "no_move"]


# -- share images ---------------------------------------------------------------------------------------


def test_share_images_draw_published_values_only_and_keep_a_sealed_project_sealed(tmp_path):
    cycle = tmp_path / "2026-12"
    cycle.mkdir()
    open_row = {
        "attempt_id": "2026-12.board.A-3f9c0a.wavgen.a1",
        "cycle_id": "2026-12",
        "project_id": "wavgen",
        "agent_id": "A-3f9c0a",
        "agent_name": "Some Vendor Model",
        "configuration": {"agent_id": "claude-code", "model_requested": "secret-model"},
        "outcome": "pass_full",
        "score": 87.5,
    }
    sealed_row = {
        "attempt_id": "2026-12.board.A-3f9c0a.private-1-of-2.a1",
        "cycle_id": "2026-12",
        "project_id": "private-1-of-2",
        "project_label": "private project 1 of 2",
        "agent_id": "A-3f9c0a",
        "outcome": "fail",
        "score": 10.0,
        "sealed": True,
    }
    (cycle / "attempts.json").write_text(json.dumps({"attempts": [open_row, sealed_row]}))
    board = {
        "cycle_id": "2026-12",
        "rows": [{"rank": 1, "agent_id": "A-3f9c0a", "board_score": 80.0, "pass_rate": 0.5}],
    }
    (cycle / "board.json").write_text(json.dumps(board))
    out = share_images("2026-12", tmp_path)
    index = json.loads((out / "index.json").read_text())
    assert [f["kind"] for f in index["files"]] == ["board", "run", "run"]
    for item in index["files"]:
        with Image.open(out / item["file"]) as image:
            assert image.size == (1200, 630)
            fields = image.text["argusic:fields"]
            assert (
                "claude-code" not in fields and "secret-model" not in fields and "Some Vendor" not in fields
            )
    drawn = run_card(sealed_row, tmp_path / "sealed.png")
    assert drawn["project_label"] == "private project 1 of 2" and drawn["sealed"] is True
    assert (
        share_images("2026-12", tmp_path)
        and (out / "board.png").read_bytes() == (out / "board.png").read_bytes()
    )


def test_how_the_attempt_ended_is_captioned_last_and_gif_png_are_reproducible(tmp_path):
    data = cast([(0.2, prompt("python3 tickerd.py")), (0.5, "ticking\r\n"), (9.0, "ticking\r\n")])
    for fmt in ("gif", "png"):
        one = render_recording(data, tmp_path / "a", "t", LINK, fmt=fmt, ending="✗ timeout at 15 s")
        two = render_recording(data, tmp_path / "b", "t", LINK, fmt=fmt, ending="✗ timeout at 15 s")
        assert one.path.read_bytes() == two.path.read_bytes()
        assert one.manifest["captions"][-1] == {
            "t": 9.0,
            "kind": "ended",
            "text": "How the attempt ended (run record): ✗ timeout at 15 s",
        }
        assert one.manifest["edits"] == [
            {"kind": "idle", "start": 0.5, "end": 9.0, "recorded_seconds": 8.5, "shown_seconds": 2.0}
        ]


def test_highlights_take_fixes_and_failures_never_a_sealed_or_withheld_attempt():
    def row(n, project, outcome, fixed=0, errors=0, **extra):
        base = {"attempt_id": f"2026-12.board.A-3f9c0a.{project}.a{n}", "project_id": project}
        return (
            base
            | {
                "outcome": outcome,
                "observed_errors_fixed": fixed,
                "observed_errors_encountered": errors,
                "served_recording_sha256": "c" * 64,
            }
            | extra
        )

    rows = [
        row(1, "wavgen", "pass_full", fixed=2, errors=2),
        row(1, "csvstats", "fail", errors=3),
        row(1, "private-1-of-2", "fail", errors=9, sealed=True),
        row(1, "zigfmt", "fail", errors=5, served_copy_withheld=True),
        row(1, "banner", "pass_full"),
    ]
    chosen = [r["project_id"] for r in highlight_rows(rows, 5)]
    assert chosen == ["wavgen", "csvstats"]


def test_a_hostile_recording_is_drawn_as_text_within_its_bounds(tmp_path):
    hostile = (
        "\x1b]0;SECRET-TITLE\x07\x1b]52;c;ZXZpbA==\x1b\\\x1bPq#0;2\x1b\\\x1b[6n\x1b[999999999L"
        "\x1b[999999999;999999999H\x1b[999999999@\x1b[?1000h visible text\r\n"
    )
    data = cast([(0.1, prompt("./tool")), (0.2, hostile), (0.3, "\u202edone\r\n")])
    done = render_recording(data, tmp_path, "h", LINK, fmt="png")
    assert done.manifest["output"]["frames"] <= 30
    assert "SECRET-TITLE" not in json.dumps(done.manifest)
