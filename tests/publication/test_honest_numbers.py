"""Honest numbers on pages (issue 29): one scope per figure, labelled; a rerun labelled as the rerun
of its original; durations split into the agent's time and our overhead; a timeout said at the end
of the recording's presentation (the site's run page, `argusic report`, `argusic play`), never
written into the recording's bytes."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from argusic.cli.main import app
from argusic.core.record import RecordError, parse_record
from argusic.publication.replay import budget_words, duration_words, ending_note, time_split
from test_replay import ATTEMPT_ID, HOSTILE_CAST, HOSTILE_LOG, land_attempt
from test_site import _published, loose_digits, number_problems, published_values
from typer.testing import CliRunner

TIMING = {"agent_started_at": "2026-12-02T10:00:03Z", "agent_ended_at": "2026-12-02T10:04:58Z"}


# -- the record ------------------------------------------------------------------------------------


def test_timing_is_optional_and_splits_the_wall_time(record_doc: dict) -> None:
    old = parse_record(record_doc)  # a record written before timings: still valid
    assert old.timing is None and old.agent_seconds is None and old.overhead_seconds is None
    assert old.wall_seconds == 300
    record = parse_record(record_doc | {"timing": TIMING})
    assert record.agent_seconds == 295 and record.overhead_seconds == 5
    assert json.loads(record.to_json())["timing"] == {
        "agent_started_at": "2026-12-02T10:00:03Z",
        "agent_ended_at": "2026-12-02T10:04:58Z",
    }


@pytest.mark.parametrize(
    ("timing", "message"),
    [
        ({"agent_started_at": "2026-12-02T09:59:00Z", "agent_ended_at": "2026-12-02T10:01:00Z"}, "within"),
        ({"agent_started_at": "2026-12-02T10:01:00Z", "agent_ended_at": "2026-12-02T10:06:00Z"}, "within"),
        ({"agent_started_at": "2026-12-02T10:02:00Z", "agent_ended_at": "2026-12-02T10:01:00Z"}, "before"),
        ({"agent_started_at": "2026-12-02T10:01:00", "agent_ended_at": "2026-12-02T10:02:00Z"}, "UTC"),
        ({"agent_started_at": "2026-12-02T10:01:00Z"}, "agent_ended_at"),
    ],
)
def test_timing_must_lie_within_the_wall_time(record_doc: dict, timing: dict, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        parse_record(record_doc | {"timing": timing})


def test_timing_of_an_execution_result_is_clamped_to_its_wall_time() -> None:
    import datetime as dt

    from argusic.attempts.common import timing_of
    from argusic.sandbox.launch import ExecutionResult

    at = dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.UTC)
    s = dt.timedelta(seconds=1)
    result = ExecutionResult("docker", at, at + 18 * s, 0, False, None)
    assert timing_of(result) is None  # never started: no timing, the wall time stands alone
    started = ExecutionResult("docker", at, at + 18 * s, 0, False, None, agent_started_at=at + 2 * s,
                              agent_ended_at=at + 17 * s)  # fmt: skip
    assert timing_of(started) == {
        "agent_started_at": "2026-12-02T10:00:02Z",
        "agent_ended_at": "2026-12-02T10:00:17Z",
    }


# -- words -----------------------------------------------------------------------------------------


def test_durations_and_endings_in_words(record_doc: dict) -> None:
    assert duration_words(18.4) == "18 s" and duration_words(900) == "15 min 0 s"
    assert duration_words(5400) == "1 h 30 min 0 s"
    assert budget_words(900) == "the 15-minute budget" and budget_words(15) == "the 15 s budget"
    doc = record_doc | {"budget_seconds": 900, "end_reason": "timeout", "report": None}
    doc |= {"started_at": "2026-12-02T10:00:00Z", "ended_at": "2026-12-02T10:15:04Z"}
    timed_out = parse_record(doc | {"timing": {"agent_started_at": "2026-12-02T10:00:02Z",
                                               "agent_ended_at": "2026-12-02T10:15:02Z"}})  # fmt: skip
    assert ending_note(timed_out).startswith("killed at the 15-minute budget after 15 min 0 s of agent time")
    assert time_split(timed_out) == (
        "agent 15 min 0 s of a 15 min 0 s budget; our overhead 4 s (container start and evidence "
        "collection); 15 min 4 s in all"
    )
    # the case: a demo's "completed" 18 s against a 15 s budget was 15 s of agent time
    demo = record_doc | {"demo": True, "effective_budget_seconds": 15, "end_reason": "completed"}
    demo |= {"started_at": "2026-12-02T10:00:00Z", "ended_at": "2026-12-02T10:00:18Z"}
    demo |= {"timing": {"agent_started_at": "2026-12-02T10:00:02Z", "agent_ended_at": "2026-12-02T10:00:16Z"}}
    split = time_split(parse_record(demo))
    assert split.startswith("agent 14 s of a 15 s budget (a demo: scaled down from 1 h 30 min 0 s)")
    assert "our overhead 4 s" in split and "18 s in all" in split
    assert ending_note(parse_record(demo)) is None  # it ended by itself
    old = parse_record(doc)
    assert "our overhead included" in time_split(old)
    killed = "killed at the 15-minute budget after 15 min 4 s (our overhead included)"
    assert ending_note(old).startswith(killed)


# -- argusic play and argusic report ---------------------------------------------------------------


def _timed_out(record_doc: dict) -> dict:
    doc = record_doc | {"budget_seconds": 900, "end_reason": "timeout", "report": None}
    doc |= {"started_at": "2026-12-02T10:00:00Z", "ended_at": "2026-12-02T10:15:04Z"}
    timing = {"agent_started_at": "2026-12-02T10:00:02Z", "agent_ended_at": "2026-12-02T10:15:02Z"}
    return doc | {"timing": timing}


def test_play_says_a_timeout_at_the_end_of_the_recording(record_doc: dict) -> None:
    land_attempt(_timed_out(record_doc), HOSTILE_LOG.encode(), HOSTILE_CAST)
    result = CliRunner().invoke(app, ["play", ATTEMPT_ID, "--speed", "1000"])
    assert result.exit_code == 0, result.output
    end = result.output.index("end of recording: 4 event(s)")
    assert "■ killed at the 15-minute budget after 15 min 0 s of agent time" in result.output[end:]
    assert "killed at" not in result.stdout  # said beside the recording, never mixed into its output


def test_play_of_an_attempt_that_ended_by_itself_adds_nothing(record_doc: dict) -> None:
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    result = CliRunner().invoke(app, ["play", ATTEMPT_ID, "--speed", "1000"])
    assert result.exit_code == 0 and "■" not in result.output and "killed" not in result.output


def test_report_page_splits_durations_and_ends_a_timed_out_recording(record_doc: dict, tmp_path) -> None:
    record = land_attempt(_timed_out(record_doc), HOSTILE_LOG.encode(), HOSTILE_CAST)
    out = tmp_path / "attempt.html"
    result = CliRunner().invoke(app, ["report", ATTEMPT_ID, "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "agent 15 min 0 s of a 15 min 0 s budget; our overhead 4 s" in page
    player, ending = page.index('id="player"'), page.index('id="recording-end"')
    assert player < ending < page.index("<h2>Log</h2>")
    assert "End of the recording: killed at the 15-minute budget after 15 min 0 s" in page
    assert "timeout: agent 15 min 0 s of 15 min 0 s, our overhead 4 s" in page  # the summary line
    from argusic.core.evidence import EvidenceStore

    served = EvidenceStore().read(record.presentation.recording.uri)  # never edited: nothing added
    assert b"killed" not in served and served.count(b"\n") == HOSTILE_CAST.count(b"\n")


# -- the site --------------------------------------------------------------------------------------


class _Marks(HTMLParser):
    """The marked values of a page (``data-n`` numbers, ``data-v`` strings), as the browser test
    collects them."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.page, self.marks, self._open = page, [], None

    def handle_starttag(self, tag, attrs) -> None:
        values = dict(attrs)
        if "data-n" in values:
            self._open = {"page": self.page, "n": values["data-n"], "scale": values["data-scale"],
                          "digits": values["data-digits"], "text": ""}  # fmt: skip
        elif "data-v" in values and tag != "time":
            self.marks.append({"page": self.page, "v": values["data-v"]})

    def handle_data(self, data) -> None:
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag) -> None:
        if self._open is not None and tag == "span":
            self.marks.append(self._open)
            self._open = None


def _site_with_a_rerun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A published cycle: board attempt 1 invalid, its rerun (.r1) timed out; the verdict's counts
    of every cycle beside this cycle's."""
    from argusic.publication.site import build_site

    publish, store_url = _published(
        tmp_path, masked=False, is_valid=False, outcome="invalid", score=None,
        invalid_reason="executor error: the Docker daemon did not answer", end_reason="harness_error",
        wall_seconds=12.5, agent_seconds=None, overhead_seconds=None, rerun_no=0,
    )  # fmt: skip
    folder = publish / "2026-11-x"
    attempts = json.loads((folder / "attempts.json").read_text())
    original = attempts["attempts"][0]
    rerun = original | {
        "attempt_id": original["attempt_id"] + ".r1", "rerun_of": original["attempt_id"], "rerun_no": 1,
        "is_valid": True, "invalid_reason": None, "outcome": "timeout", "score": 0.0, "end_reason": "timeout",
        "budget_seconds": 900, "effective_budget_seconds": 900, "wall_seconds": 904.25,
        "agent_seconds": 900.125, "overhead_seconds": 4.125,
        "started_at": "2026-11-02T10:10:00Z", "ended_at": "2026-11-02T10:25:04.250000Z",
    }  # fmt: skip
    attempts["attempts"].append(rerun)
    (folder / "attempts.json").write_text(json.dumps(attempts))
    # the rerun's served copies: the same bytes, under its own id
    from argusic.core.evidence import EvidenceStore, served_key_for

    store = EvidenceStore(store_url)
    for kind in ("log", "recording"):
        sha = original[f"served_{kind}_sha256"]
        data = store.read(store.uri_for(served_key_for(original["attempt_id"], kind, sha)))
        store.put_bytes(served_key_for(rerun["attempt_id"], kind, sha), data)
    board = json.loads((folder / "board.json").read_text())
    board["projects"][0] |= {
        "valid_attempts": 3, "recorded_attempts": 16, "complete_attempts": 2, "cycle_recorded_attempts": 2,
        "cycle_valid_attempts": 1, "cycle_invalid_attempts": 1, "cycle_reruns": 1,
    }  # fmt: skip
    (folder / "board.json").write_text(json.dumps(board))
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    return publish, build_site(publish)


def test_site_labels_scopes_reruns_durations_and_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish, site = _site_with_a_rerun(tmp_path, monkeypatch)
    runs = site / "cycles/2026-11-x/runs"
    project = (site / "cycles/2026-11-x/projects/demo.html").read_text()
    board = (site / "cycles/2026-11-x/index.html").read_text()
    original = (runs / "2026-11-x.board.readme-runner.demo.a1.html").read_text()
    rerun = (runs / "2026-11-x.board.readme-runner.demo.a1.r1.html").read_text()
    text = {name: " ".join(_text(page).split()) for name, page in
            (("project", project), ("board", board), ("original", original), ("rerun", rerun))}  # fmt: skip

    # One scope per figure, labelled: "3 of 16" is every cycle's, this cycle's are beside it.
    assert "this cycle 1 valid of 2 attempts recorded in cycle 2026-11-x" in text["project"]
    assert "1 invalid; 1 of them reruns" in text["project"]
    every = "all cycles, at this commit 3 valid of 16 attempts recorded (board and verdict, any agent, every"
    assert every in text["project"]
    assert "Attempts this cycle" in board and "Attempts, all cycles" in board
    assert "Verdict (all cycles, at this commit)" in board and "this cycle's board attempts only" in board

    # A rerun is the rerun of its original, never a second "board attempt 1".
    assert text["project"].count("board attempt 1") == 2
    assert "rerun 1 of board attempt 1" in text["project"]
    assert "(run again: its rerun counts)" in text["project"]
    assert "demo, rerun 1 of board attempt 1" in text["rerun"]
    assert "demo, board attempt 1" in text["original"]

    # Durations: the agent's time against the budget, our overhead apart; an older record says so.
    assert "durations agent 15.0 min of a 15.0 min budget; our overhead 4.1 s" in text["rerun"]
    assert "15.1 min in all" in text["rerun"]
    assert "durations 12 s in all, our overhead included" in text["original"]
    assert "15.0 min / 15.0 min" in text["project"] and "not kept apart / 90.0 min" in text["project"]

    # The timeout is said at the end of the recording's presentation, beside the player.
    assert rerun.index('id="player"') < rerun.index('id="recording-end"') < rerun.index("<h2>Log</h2>")
    ending = "End of the recording: killed at the 15-minute budget after 15.0 min of agent time"
    assert ending in text["rerun"]
    assert 'id="recording-end"' not in original  # it did not time out

    # Every number shown is a published one; no digit outside a marked field.
    numbers, strings = published_values(publish)
    pages = (("project", project), ("board", board), ("rerun", rerun), ("original", original))
    marks = [m for name, page in pages for m in _marks_of(name, page)]
    assert marks and number_problems(marks, numbers, strings) == []
    for page in (project, board, original, rerun):
        assert loose_digits(page) == []


def _marks_of(name: str, page: str) -> list[dict]:
    parser = _Marks(name)
    parser.feed(page)
    return parser.marks


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs) -> None:
        self.skip += tag in ("script", "style", "pre")
        if tag in ("th", "td", "tr", "p", "h1", "h2", "li", "div", "br", "title", "nav"):
            self.parts.append(" ")  # between cells and blocks, as a reader sees them

    def handle_endtag(self, tag) -> None:
        self.skip -= tag in ("script", "style", "pre")

    def handle_data(self, data) -> None:
        if not self.skip:
            self.parts.append(data)


def _text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return "".join(parser.parts)
