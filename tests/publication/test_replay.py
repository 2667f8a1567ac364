"""Watching an attempt: served copies only (never raw evidence), a terminal player that keeps a
recording's drawing and drops what would talk to the terminal, and a self-contained HTML page that
stays inert whatever the log and recording hold."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from argusic.attempts.common import with_presentation
from argusic.cli.main import app
from argusic.core.evidence import EvidenceStore
from argusic.core.record import RunRecord, parse_record
from argusic.publication.attempt_page import (
    PlayerAssets,
    json_for_script,
    load_player_assets,
    render_page,
    write_report,
)
from argusic.publication.replay import (
    MAX_COLUMNS,
    MAX_ROWS,
    MIN_COLUMNS,
    MIN_ROWS,
    ReplayRefused,
    TerminalFilter,
    clamp_terminal_sizes,
    fetch_served,
    find_attempt,
    play_cast,
    read_cast,
    recorded_seconds,
    strip_terminal_codes,
)
from typer.testing import CliRunner

HOSTILE_OUTPUT = "</script><script>alert(1)</script>"
HOSTILE_LOG = (
    "[2026-12-02T10:00:00Z] STEP run: ./tool\n"
    "<img src=x onerror=alert(2)></pre><script>alert(3)</script>\n"
    "\x1b[31mred text\x1b[0m \x1b]0;window title\x07 done\n"
)
ATTEMPT_ID = "2026-12.board.readme-runner.wavgen.a1"


def cast_bytes(events: list[tuple[float, str]], **header) -> bytes:
    head = {"version": 2, "width": 80, "height": 24, "title": "readme-runner / wavgen / attempt 1"} | header
    lines = [json.dumps(head)] + [json.dumps([t, "o", data]) for t, data in events]
    return ("\n".join(lines) + "\n").encode()


HOSTILE_CAST = cast_bytes(
    [
        (0.2, "\x1b[1m$ \x1b[0m./tool\r\n"),
        (0.5, "hello from the recording\r\n"),
        (0.9, HOSTILE_OUTPUT + "\r\n"),
        (1.4, "<b>not bold</b> &amp; done\r\n"),
    ],
    title="</script><script>alert(4)</script>",
)


def land_attempt(record_doc: dict, log: bytes, cast: bytes, *, withheld: bool = False) -> RunRecord:
    """Raw evidence into the configured store, served copies derived the real way, the run record
    written where `argusic play` finds an attempt not ingested yet."""
    from argusic.core.settings import runs_dir

    store = EvidenceStore()
    doc = json.loads(json.dumps(record_doc))
    for kind, data in (("log", log), ("recording", cast), ("report", b"{}")):
        doc["evidence"][kind] = store.put_bytes(
            store.key_for(hashlib.sha256(data).hexdigest()), data
        ).as_ref()
    record = with_presentation(parse_record(doc), store)
    if withheld:
        shown = json.loads(record.to_json())
        shown["presentation"] |= {"withheld": True, "withheld_reason": "recording: 1 live credential found"}
        shown["presentation"] |= {"log": None, "recording": None}
        shown["invalid_reason"] = "served copy withheld: recording: 1 live credential found"
        record = parse_record(shown)
    folder = runs_dir() / record.cycle_id / record.attempt_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run_record.json").write_text(record.to_json())
    return record


# -- the terminal filter ----------------------------------------------------------------------------


def feed_split(text: str, size: int) -> tuple[str, TerminalFilter]:
    screen = TerminalFilter()
    return "".join(screen.feed(text[i : i + size]) for i in range(0, len(text), size)), screen


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_filter_keeps_drawing_and_drops_what_talks_to_the_terminal(size):
    text = (
        "\x1b[?1049h\x1b[2J\x1b[H\x1b[1;31mred\x1b[0m \x1b(B\x1b7x\x1b8\r\n"  # drawing: kept
        "\x1b]0;new window title\x07"  # OSC title
        "\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x1b\\"  # OSC 52: write the clipboard
        "\x1b]8;;https://example.invalid\x1b\\link\x1b]8;;\x1b\\"  # OSC 8 hyperlink (text kept)
        "\x1b[6n\x1b[c\x1b[>0q\x1b[?u\x1b[>1u\x1b[18t"  # queries and keyboard protocols
        "\x1b[?1000h\x1b[?1004h"  # mouse and focus reporting
        "\x1bPq#0;2;0;0;0\x1b\\"  # DCS (sixel)
        "\x9b31m\x07\x0e"  # C1 CSI, BEL, shift out
        "end\n"
    )
    shown, screen = feed_split(text, size)
    assert shown == "\x1b[?1049h\x1b[2J\x1b[H\x1b[1;31mred\x1b[0m \x1b(B\x1b7x\x1b8\r\nlink31mend\n"
    assert screen.dropped >= 14 and screen.alt_screen
    assert screen.restore().endswith("\x1b[?1049l") and "\x1b[?25h" in screen.restore()


def test_strip_terminal_codes_shows_controls_as_symbols():
    assert strip_terminal_codes("a\x1b[31mb\x1b]0;t\x07c\r\nd\x00e\x08") == "abc\nd\u2400e\u2408"


# -- the player -------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


@pytest.mark.parametrize(
    ("speed", "idle", "sleeps"),
    [
        (1.0, 3.0, [0.5, 0.5, 3.0, 0.5]),  # the 10 s pause cut to 3 s
        (2.0, 3.0, [0.25, 0.25, 1.5, 0.25]),
        (1.0, 0.0, [0.5, 0.5, 10.0, 0.5]),  # every pause kept
    ],
)
def test_player_keeps_recorded_time_with_speed_and_idle_cap(speed, idle, sleeps):
    cast = read_cast(io.BytesIO(cast_bytes([(0.5, "a"), (1.0, "b"), (11.0, "c"), (11.5, "d\r\n")])))
    clock, out = FakeClock(), io.StringIO()
    result = play_cast(cast, out, speed=speed, idle_limit=idle, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == sleeps
    assert out.getvalue().startswith("abcd\r\n") and result.events == 4 and not result.stopped
    assert result.recorded_seconds == 11.5 and result.played_seconds == pytest.approx(sum(sleeps))


def test_player_skips_lines_that_are_not_events_and_refuses_other_formats():
    text = (
        cast_bytes([(0.1, "a")]) + b'not json\n[1, "o"]\n["x", "o", "b"]\n[NaN, "o", "c"]\n[0.3, "i", "k"]\n'
    )
    cast = read_cast(io.BytesIO(text + json.dumps([0.4, "o", "z"]).encode() + b"\n"))
    clock, out = FakeClock(), io.StringIO()
    result = play_cast(cast, out, clock=clock, sleep=clock.sleep)
    assert out.getvalue().startswith("az") and result.skipped_lines == 4 and result.events == 2
    for bad in (b'{"version": 1}\n', b"garbage\n", b'{"version": 2, "width": 0, "height": 5}\n'):
        with pytest.raises(ReplayRefused):
            read_cast(io.BytesIO(bad))


# A recording that asks the player for a 20000x20000 terminal, in its header and in resize events
# (one with its code written as a JSON escape, one without a size, one too small).
HUGE_CAST = (
    json.dumps({"version": 2, "width": 20000, "height": 20000, "term": {"cols": 20000, "rows": 20000}})
    + "\n"
    + "\n".join(
        [
            json.dumps([0.1, "o", "$ ./tool\r\n"]),
            json.dumps([0.2, "r", "20000x20000"]),
            '[0.3, "\\u0072", "99999x7"]',
            json.dumps([0.4, "r", "huge"]),
            json.dumps([0.5, "r", "1x1"]),
            json.dumps([0.6, "r", "120x40"]),
            json.dumps([0.7, "o", 'resize 20000x20000 "r" done\r\n']),
        ]
    )
    + "\n"
)


def _sizes(cast_text: str) -> tuple[dict, list[str], list[list]]:
    lines = [json.loads(line) for line in cast_text.splitlines() if line.strip()]
    return lines[0], [e[2] for e in lines[1:] if e[1] == "r"], [e for e in lines[1:] if e[1] == "o"]


def test_terminal_sizes_are_clamped_for_the_player():
    clamped = clamp_terminal_sizes(HUGE_CAST)
    header, resizes, output = _sizes(clamped.text)
    assert (header["width"], header["height"]) == (MAX_COLUMNS, MAX_ROWS)
    assert header["term"] == {"cols": MAX_COLUMNS, "rows": MAX_ROWS}
    assert resizes == [
        f"{MAX_COLUMNS}x{MAX_ROWS}",
        f"{MAX_COLUMNS}x7",
        f"{MIN_COLUMNS}x{MIN_ROWS}",
        "120x40",
    ]
    assert output == _sizes(HUGE_CAST)[2]  # output events untouched
    assert (clamped.changed, clamped.dropped) == (4, 1)
    assert f"{MIN_COLUMNS}-{MAX_COLUMNS} columns" in clamped.note()
    # A header size that is not a whole number gets the usual terminal's size.
    odd = clamp_terminal_sizes('{"version": 2, "width": 2e4, "height": true}\n')
    assert json.loads(odd.text.splitlines()[0]) == {"version": 2, "width": 80, "height": 24}
    # Another shape the player reads (a v1 document, sizes not clamped here) is not handed over.
    v1 = json.dumps({"version": 1, "width": 20000, "height": 20000, "stdout": [[0.1, "x"]]}, indent=1)
    with pytest.raises(ReplayRefused, match="not an asciicast v2 or v3 recording"):
        clamp_terminal_sizes(v1)
    # A recording within bounds is handed over as it is.
    ordinary = HOSTILE_CAST.decode() + json.dumps([2.0, "r", "100x30"]) + "\n"
    unchanged = clamp_terminal_sizes(ordinary)
    assert unchanged.text is ordinary and unchanged.note() is None


def test_recorded_seconds_reads_the_tail(tmp_path):
    path = tmp_path / "r.cast"
    path.write_bytes(cast_bytes([(float(i), "x" * 100) for i in range(2000)]) + b"\n")
    assert recorded_seconds(path) == 1999.0


# -- finding an attempt, served copies only -----------------------------------------------------------


def test_served_recording_is_fetched_and_checked(record_doc, tmp_path):
    record = land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    facts = find_attempt(ATTEMPT_ID)
    assert facts.record == record and facts.scores is None and "not in the warehouse yet" in facts.source
    copy = fetch_served(facts, "recording", tmp_path / "r.cast")
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == record.presentation.recording.sha256
    assert copy.read_bytes() != b"" and facts.label == "readme-runner / wavgen / attempt 1"


def test_an_edited_served_copy_is_not_shown(record_doc, tmp_path):
    record = land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    served = Path(EvidenceStore().root) / record.presentation.recording.uri.split("/evidence_store/", 1)[1]
    served.chmod(0o644)
    served.write_bytes(cast_bytes([(0.1, "forged")]))
    with pytest.raises(ReplayRefused, match="not what its record names"):
        fetch_served(find_attempt(ATTEMPT_ID), "recording", tmp_path / "r.cast")
    assert not (tmp_path / "r.cast").exists()


def test_play_refuses_without_a_served_copy_and_never_plays_raw(record_doc):
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST, withheld=True)
    result = CliRunner().invoke(app, ["play", ATTEMPT_ID, "--speed", "1000"])
    assert result.exit_code == 2
    assert "withheld" in result.output and "raw evidence is never shown" in result.output
    assert "hello from the recording" not in result.output


def test_play_refuses_a_record_without_presentation(record_doc):
    from argusic.core.settings import runs_dir

    record = land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    doc = json.loads(record.to_json())
    doc.pop("presentation")
    (runs_dir() / record.cycle_id / record.attempt_id / "run_record.json").write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["play", ATTEMPT_ID])
    assert result.exit_code == 2 and "no served copies" in result.output
    assert "hello from the recording" not in result.output


def test_play_plays_the_served_recording(record_doc):
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    result = CliRunner().invoke(app, ["play", ATTEMPT_ID, "--speed", "1000"])
    assert result.exit_code == 0, result.output
    assert "hello from the recording" in result.stdout and HOSTILE_OUTPUT in result.stdout
    assert (
        "readme-runner / wavgen / attempt 1" in result.output
        and "end of recording: 4 event(s)" in result.output
    )


def test_unknown_or_malformed_attempt_ids_are_refused(isolated):
    runner = CliRunner()
    bad = runner.invoke(app, ["play", "../../etc/passwd"])
    assert bad.exit_code == 2 and "not an attempt id" in bad.output
    missing = runner.invoke(app, ["play", ATTEMPT_ID])
    assert missing.exit_code == 2 and f"no attempt {ATTEMPT_ID!r}" in missing.output


def test_attempts_are_found_in_the_analyst_copy_while_a_writer_holds_the_warehouse(
    record_doc, isolated, monkeypatch
):
    import duckdb
    from argusic.core.settings import runs_dir, warehouse_path
    from argusic.warehouse.load_runs import ingest

    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    ingest([runs_dir()])
    assert find_attempt(ATTEMPT_ID).source.startswith("warehouse ")
    analyst = isolated / "analyst"
    analyst.mkdir()
    shutil.copy(warehouse_path(), analyst / "argusic.duckdb")  # what a build publishes
    monkeypatch.setenv("ARGUSIC_ANALYST_DIR", str(analyst))
    monkeypatch.setenv("ARGUSIC_LOCK_TIMEOUT", "0")
    with duckdb.connect(str(warehouse_path())):  # a writer holds the pipeline's file
        facts = find_attempt(ATTEMPT_ID)
    assert facts.source == f"analyst copy {analyst / 'argusic.duckdb'}"


# -- the HTML page ------------------------------------------------------------------------------------

FAKE_ASSETS = PlayerAssets(js="var AsciinemaPlayer = {};", css=".ap-player{}", license="Apache", version="0")


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self.tags: list[str] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))

    def handle_data(self, data):
        if self._open is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = None


def test_json_for_script_cannot_close_its_element():
    value = "</script><!-- <script>&\u2028"
    text = json_for_script(value)
    assert "<" not in text and ">" not in text and "&" not in text and json.loads(text) == value


def test_page_is_inert_whatever_the_log_and_recording_hold(record_doc):
    record = land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    facts = find_attempt(ATTEMPT_ID)
    page = render_page(facts, HOSTILE_LOG, None, HOSTILE_CAST.decode(), None, FAKE_ASSETS)
    parsed = _Scripts()
    parsed.feed(page)
    # Exactly three script elements: the recording as JSON data, the player, the page's own start-up.
    assert [a.get("type") for a, _ in parsed.scripts] == ["application/json", None, None]
    assert json.loads(parsed.scripts[0][1]) == HOSTILE_CAST.decode()
    assert "img" not in parsed.tags and "b" not in parsed.tags
    assert "&lt;img src=x onerror=alert(2)&gt;&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in page
    assert "\x1b" not in page and "window title" not in page and "red text" in page
    # The policy allows exactly the two inline scripts, by hash, and no network.
    csp = html.unescape(page.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0])
    for _, script in parsed.scripts[1:]:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert csp.startswith("default-src 'none';") and "connect-src" not in csp  # no fetch, no socket
    assert " 'unsafe-eval'" not in csp and "script-src 'unsafe-inline'" not in csp
    # Facts from the record, escaped.
    assert record.commit in page and "readme-runner / wavgen / attempt 1" in page
    assert "not in the warehouse yet" in page and "no masking was needed" in page
    # Where the machine keeps things is not on the page: no run folder, no store URI.
    from argusic.core.settings import evidence_url, runs_dir

    assert "its run record (not in the warehouse yet" in page
    assert str(runs_dir()) not in page and evidence_url() not in page


def test_report_page_shows_bidi_controls_as_escapes(record_doc):
    """`argusic report`: a log line that reorders itself with a bidi override is shown with the
    override as its escape; Korean, accents and emoji as written."""
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    log = "all tests \u202eliaf\u202c \u2066ok\u2069 한국어 café 🎉\n"
    page = render_page(find_attempt(ATTEMPT_ID), log, None, None, "note \u200f", FAKE_ASSETS)
    assert "\u202e" not in page and "\u2066" not in page and "\u200f" not in page
    assert "all tests \\u202eliaf\\u202c \\u2066ok\\u2069 한국어 café 🎉" in page
    assert "note \\u200f" in page


def test_report_page_clamps_the_recordings_terminal_sizes(record_doc):
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    page = render_page(find_attempt(ATTEMPT_ID), HOSTILE_LOG, None, HUGE_CAST, None, FAKE_ASSETS)
    parsed = _Scripts()
    parsed.feed(page)
    header, resizes, _ = _sizes(json.loads(parsed.scripts[0][1]))
    assert (header["width"], header["height"]) == (MAX_COLUMNS, MAX_ROWS)
    assert max(int(r.split("x")[0]) for r in resizes) <= MAX_COLUMNS
    assert max(int(r.split("x")[1]) for r in resizes) <= MAX_ROWS
    assert "outside 10-500 columns and 5-200 rows" in page
    v1 = json.dumps({"version": 1, "width": 20000, "height": 20000, "stdout": [[0.1, "x"]]}, indent=1)
    page = render_page(find_attempt(ATTEMPT_ID), HOSTILE_LOG, None, v1, None, FAKE_ASSETS)
    assert 'id="argusic-recording"' not in page and 'id="player"' not in page
    assert "not played here: not an asciicast v2 or v3 recording" in page


def test_report_of_a_withheld_attempt_shows_facts_only(record_doc, tmp_path):
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST, withheld=True)
    out = write_report(find_attempt(ATTEMPT_ID), tmp_path / "page.html", assets=FAKE_ASSETS)
    page = out.read_text()
    assert "withheld" in page and "raw evidence is never shown" in page
    assert "hello from the recording" not in page and "STEP run" not in page and "<script" not in page


def test_report_command_writes_a_page(record_doc, tmp_path):
    try:
        load_player_assets()
    except Exception as err:  # noqa: BLE001
        pytest.fail(f"asciinema-player is not vendored (`make player`): {err}")
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    out = tmp_path / "attempt.html"
    result = CliRunner().invoke(app, ["report", ATTEMPT_ID, "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "asciinema-player 3." in page and "Apache License" in page and 'id="player"' in page
    small = tmp_path / "small.html"
    result = CliRunner().invoke(app, ["report", ATTEMPT_ID, "--out", str(small), "--max-recording-mb", "0"])
    assert result.exit_code == 0 and f"argusic play {ATTEMPT_ID}" in small.read_text()
    assert 'id="player"' not in small.read_text()
