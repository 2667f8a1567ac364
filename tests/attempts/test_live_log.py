"""The live view of an attempt's log (argusic.attempts.live_log): hostile output shown masked, cleaned
and capped, never the raw per-run key, never through a link; and a real attempt streams its log while
it runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from argusic.attempts.live_log import LiveLog, clean_line, elapsed_line
from scripted_seal import SEAL_PROLOGUE

KEY = "sk-live-0123456789abcdefghijklmnopqrstuv"


def collect(**kwargs) -> tuple[LiveLog, list[str]]:
    lines: list[str] = []
    return LiveLog(lines.append, interval=0.05, **kwargs), lines


def test_clean_line_strips_escapes_controls_and_cuts() -> None:
    assert clean_line("\x1b[31mred\x1b[0m \x1b]0;title\x07text\x00\x07") == "red text"
    assert clean_line("10%\r50%\r100% done") == "100% done"
    assert clean_line("a\tb") == "a    b"
    long = clean_line("x" * 1000, max_line=100)
    assert long.startswith("x" * 100) and long.endswith("(900 more characters)")
    assert clean_line("\x9b2Jcleared") == "cleared"


def test_clean_line_shows_bidi_controls_as_escapes() -> None:
    """A log line or story value that reorders itself (Trojan Source) in the operators' task log: the
    controls shown as escapes, counted in the cut; other non-ASCII text as written."""
    assert clean_line("tests \u202eliaf\u202c \u2066x\u2069 한국어 café 🎉") == (
        "tests \\u202eliaf\\u202c \\u2066x\\u2069 한국어 café 🎉"
    )
    assert clean_line("\u202e" * 100, max_line=30).startswith("\\u202e" * 5)
    assert "\u202e" not in clean_line("\u202e" * 100, max_line=30)


def test_streams_lines_as_the_file_grows_and_reads_the_rest_at_stop(tmp_path: Path) -> None:
    live, lines = collect()
    stop = live.watch(tmp_path)
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        f.write("first line\nsecond ")
        f.flush()
        deadline = time.monotonic() + 10
        while "│ first line" not in lines and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lines == ["│ first line"]  # the unfinished line waits for its end
        f.write("half\nlast line without newline")
    stop()
    assert lines == ["│ first line", "│ second half", "│ last line without newline"]
    stop()  # idempotent


def test_the_raw_key_never_reaches_a_line_even_cut_by_a_read(tmp_path: Path, monkeypatch) -> None:
    import argusic.attempts.live_log as live_log

    monkeypatch.setattr(live_log, "CHUNK", 7)  # every read cuts the key somewhere
    live, lines = collect(redactions=[(KEY.encode(), b"[per-run key]")])
    stop = live.watch(tmp_path)
    (tmp_path / "log.txt").write_text(
        f"export OPENAI_API_KEY={KEY}\nurl-encoded: {KEY.replace('-', '%2D')}\n"
    )
    time.sleep(0.3)
    stop()
    shown = "\n".join(lines)
    assert KEY not in shown and KEY.replace("-", "%2D") not in shown
    assert "[per-run key]" in shown or "[masked]" in shown
    assert len(lines) == 2


def test_token_formats_and_shared_secrets_are_masked(tmp_path: Path) -> None:
    live, lines = collect(secrets=["shared-secret-value-42"])
    stop = live.watch(tmp_path)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (tmp_path / "log.txt").write_text(f"token {token}\nthe shared one: shared-secret-value-42\nplain\n")
    stop()
    shown = "\n".join(lines)
    assert token not in shown and "shared-secret-value-42" not in shown
    assert "│ plain" in lines


def test_a_symbolic_link_or_fifo_is_never_followed_or_read(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("root:hash-of-the-host\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "log.txt").symlink_to(secret)
    live, lines = collect()
    live.watch(out)()
    assert not any("hash-of-the-host" in line for line in lines)
    assert any("live log stopped" in line and "without following links" in line for line in lines)

    fifo_out = tmp_path / "fifo"
    fifo_out.mkdir()
    os.mkfifo(fifo_out / "log.txt")
    live, lines = collect()
    live.watch(fifo_out)()  # would block forever if it were opened for a blocking read
    assert any("not a regular file" in line for line in lines)


def test_replaced_or_truncated_files_are_shown_from_their_start(tmp_path: Path) -> None:
    live, lines = collect()
    stop = live.watch(tmp_path)
    log = tmp_path / "log.txt"
    log.write_text("one\n")
    time.sleep(0.3)
    replacement = tmp_path / "new"
    replacement.write_text("two\n")
    replacement.replace(log)
    time.sleep(0.3)
    stop()
    assert "│ one" in lines and "│ two" in lines
    assert any("replaced" in line for line in lines)


def test_caps_lines_and_bytes(tmp_path: Path) -> None:
    live, lines = collect(max_lines=5)
    stop = live.watch(tmp_path)
    (tmp_path / "log.txt").write_text("".join(f"line {i}\n" for i in range(50)))
    stop()
    assert [line for line in lines if line.startswith("│")] == [f"│ line {i}" for i in range(5)]
    assert "stopped at 5 lines" in lines[-1]

    live, lines = collect(max_bytes=100)
    stop = live.watch(tmp_path)
    stop()
    assert "stopped at" in lines[-1] and len([x for x in lines if x.startswith("│")]) <= 15

    (tmp_path / "log.txt").write_bytes(b"y" * 300_000 + b"\n")  # one line without end for long
    live, lines = collect()
    stop = live.watch(tmp_path)
    stop()
    assert all(len(line) < 500 for line in lines)


def test_a_quiet_attempt_says_it_is_still_running(tmp_path: Path) -> None:
    live, lines = collect(quiet_notice_every=0.1, budget_seconds=5400)
    stop = live.watch(tmp_path)
    time.sleep(0.5)
    stop()
    assert any("still running" in line and "of its 90 min budget" in line for line in lines)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_running_attempt_says_its_elapsed_time_against_its_budget_every_few_seconds(tmp_path: Path) -> None:
    clock = FakeClock()
    live, lines = collect(budget_seconds=900, progress_every=10, clock=clock, quiet_notice_every=0)
    live._out = tmp_path  # what watch() sets, without its thread: the polls are driven by hand below
    live._started = live._last_news = clock.now
    live._next_progress = clock.now + 10
    seen = []
    for second in range(1, 86):  # polls once a second for 85 s of the fake clock
        clock.now = 1000.0 + second
        live._progress()
        seen.append(len(lines))
    assert lines[:2] == ["[argusic] elapsed 10 s of 15 min budget", "[argusic] elapsed 20 s of 15 min budget"]
    assert "[argusic] elapsed 1 min 20 s of 15 min budget" in lines
    assert len(lines) == 8  # one line every 10 s, not one per poll
    clock.now += 900
    live._progress()
    assert lines[-1] == "[argusic] elapsed 16 min 25 s of 15 min budget: over budget, being stopped"


def test_the_elapsed_line_is_shown_by_the_watching_thread(tmp_path: Path) -> None:
    live, lines = collect(budget_seconds=15, progress_every=0.1)
    stop = live.watch(tmp_path)
    time.sleep(0.6)
    stop()
    assert any(line.startswith("[argusic] elapsed 0 s of 15 s budget") for line in lines), lines


def test_the_command_line_says_each_running_attempt_s_time_against_its_budget() -> None:
    from argusic.core.spec import AttemptSpec
    from argusic.cycle.progress import RunningAttempts

    def spec(n: int) -> AttemptSpec:
        return AttemptSpec(
            cycle_id="2026-12", agent_id="readme-runner", project_id="p", repo_url="/r", commit="0" * 40,
            tier="standard", attempt_no=n, demo=True, budget_scale=1 / 360,
        )  # fmt: skip

    clock = FakeClock()
    running = RunningAttempts(clock=clock)
    running.started(spec(1))
    clock.now += 5
    running.started(spec(2))
    clock.now += 7
    assert running.lines() == [
        "readme-runner / p / attempt 1: elapsed 12 s of 15 s budget",
        "readme-runner / p / attempt 2: elapsed 7 s of 15 s budget",
    ]
    running.ended(spec(1))
    clock.now += 10
    assert running.lines() == [
        "readme-runner / p / attempt 2: elapsed 17 s of 15 s budget: over budget, being stopped"
    ]
    shown: list[str] = []
    stop = RunningAttempts().tick(shown.append, every=0.05)
    stop()
    assert shown == []  # nothing running, nothing said


@pytest.mark.parametrize(
    ("elapsed", "budget", "line"),
    [
        (5, 15, "elapsed 5 s of 15 s budget"),
        (80, 900, "elapsed 1 min 20 s of 15 min budget"),
        (3600, 5400, "elapsed 60 min of 90 min budget"),
        (42, None, "elapsed 42 s"),
    ],
)
def test_elapsed_line_words(elapsed, budget, line) -> None:
    assert elapsed_line(elapsed, budget) == line


# --- a real attempt (local executor, scripted harness): its log appears while it runs -----------------

SLOW_HARNESS = (
    SEAL_PROLOGUE
    + r"""
import json, os, sys, time
args = sys.argv[1:]
out = args[args.index("--out") + 1]
_seal_at_exit(out)
with open(os.path.join(out, "log.txt"), "w") as log:
    log.write("\x1b[1mSTEP install\x1b[0m: echo hi\n"); log.flush()
    log.write("OPENAI_API_KEY=" + os.environ.get("OPENAI_API_KEY", "") + "\n"); log.flush()
    while not os.path.exists(os.environ["LIVE_LOG_TEST_RELEASE"]):
        time.sleep(0.05)
    log.write("STEP run: done\n")
with open(os.path.join(out, "recording.cast"), "w") as f:
    f.write('{"version": 2, "width": 80, "height": 24}\n[0.1, "o", "hi"]\n')
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump({"install_ok": True, "ran_ok": True, "errors_encountered": 0, "errors_fixed": 0,
               "test_depth": "tier1_real", "verified_how": "x", "final_state": "done"}, f)
"""
)


def test_a_running_attempt_streams_its_log_into_the_task_log(isolated, tmp_path, monkeypatch, caplog) -> None:
    import logging
    import threading

    from argusic.attempts.run import run_attempt
    from argusic.core.spec import AttemptSpec
    from argusic.sandbox import executor as executor_mod
    from argusic.sandbox.executor import LocalExecutor
    from test_executor import make_repo

    harness = tmp_path / "harness"
    harness.mkdir()
    (harness / "readme_runner.py").write_text(SLOW_HARNESS)
    monkeypatch.setattr(executor_mod, "HARNESS_DIR", harness)
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(tmp_path / "scratch"))
    release = tmp_path / "release"
    monkeypatch.setenv("LIVE_LOG_TEST_RELEASE", str(release))
    repo, commit = make_repo(tmp_path, "ok")
    spec = AttemptSpec(
        cycle_id="2026-12", agent_id="readme-runner", project_id="p", repo_url=str(repo), commit=commit,
        tier="standard", attempt_no=1, demo=True, budget_scale=0.01,
    )  # fmt: skip
    caplog.set_level(logging.INFO, logger="argusic")
    done: list[Path] = []
    worker = threading.Thread(target=lambda: done.append(run_attempt(spec, LocalExecutor(), live_log=True)))
    worker.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any("STEP install" in r.getMessage() for r in caplog.records):
        time.sleep(0.05)
    live = [r.getMessage() for r in caplog.records if r.name == "argusic.live"]
    assert "│ STEP install: echo hi" in live, live  # shown while the attempt still runs, escapes gone
    assert worker.is_alive()
    release.touch()
    worker.join(timeout=60)
    assert done and done[0].exists()
    live = [r.getMessage() for r in caplog.records if r.name == "argusic.live"]
    assert "│ STEP run: done" in live


@pytest.mark.parametrize("words", ["✓ ran, verified for real", "✗ install failed", "✗ timeout at 5400 s"])
def test_attempt_story_words(isolated, record_doc, words) -> None:
    from argusic.attempts.story import attempt_story  # noqa: F401
    from argusic.core.layout import attempt_dir
    from argusic.core.spec import AttemptSpec
    from argusic.cycle.plan import write_plan  # noqa: F401
    from conftest import write_record

    doc = dict(record_doc)
    if "install" in words:
        doc["report"] = dict(doc["report"], install_ok=False, ran_ok=False, test_depth="tier3_none")
    if "timeout" in words:
        doc |= {"end_reason": "timeout", "report": None}
    spec = AttemptSpec(
        cycle_id="2026-12", agent_id="readme-runner", project_id="wavgen", repo_url="/x", commit="0" * 40,
        tier="standard", attempt_no=1,
    )  # fmt: skip
    spec_path = isolated / "spec.json"
    spec_path.write_text(spec.model_dump_json())
    record = write_record(attempt_dir(spec), doc)
    story = attempt_story(spec_path, [str(record)])
    assert story.label == f"readme-runner / wavgen / attempt 1 · {words}"
    assert not story.invalid
    text = "\n".join(story.lines)
    assert "final state:" in text and "served log" not in text  # the fixture record has no served copy
    assert "decided by the rubric" in text and "raw log: sha256" in text
