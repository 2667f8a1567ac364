"""The raw session video of the virtual display (issue #30): the bootstrap's recorder, its bounds,
the record's optional evidence kind, and the checks on arrival (a video replaced by something that
is not what the recorder writes, oversized, empty or a link is not kept, and the record says why).
The real recording of a real Tk application is tests/sandbox/test_desktop.py's Docker test."""

from __future__ import annotations

import json
import os
import shlex

import pytest
from argusic.attempts.video import display_video_evidence, video_problem
from argusic.core.evidence import EvidenceStore, record_evidence_problems
from argusic.core.record import RunRecord, parse_record
from argusic.sandbox.executor import _bootstrap_script, _video_command
from argusic.sandbox.landing import LandingLimits, land_outputs
from argusic.sandbox.launch import VIDEO_FILE, VIDEO_FPS, VIDEO_MAX_BYTES

# What ffmpeg's Matroska muxer writes first: the EBML header with its DocType "matroska"
MKV_HEAD = bytes.fromhex("1a45dfa3a34286810142f7810142f2810442f381084282886d6174726f736b61")


def _mkv(path, size: int = 4096):
    path.write_bytes(MKV_HEAD + b"\0" * (size - len(MKV_HEAD)))
    return path


# --- the recorder in the bootstrap ----------------------------------------------------------------


def test_the_recorder_is_bounded_in_rate_size_and_time():
    argv = shlex.split(_video_command(":99", "1280x800x24", "/out", 900))
    assert argv[0] == "ffmpeg" and "-nostdin" in argv
    assert argv[argv.index("-f") + 1] == "x11grab" and argv[argv.index("-i") + 1] == ":99"
    assert argv[argv.index("-framerate") + 1] == str(VIDEO_FPS) and 2 <= VIDEO_FPS <= 5
    assert argv[argv.index("-video_size") + 1] == "1280x800"
    assert argv[argv.index("-t") + 1] == "900"  # the budget
    assert argv[argv.index("-fs") + 1] == str(VIDEO_MAX_BYTES)
    assert "-n" in argv  # never overwrites a file already there
    assert argv[-1] == f"/out/{VIDEO_FILE}" and argv[-3:-1] == ["-cluster_time_limit", "1000"]


def test_the_bootstrap_records_only_when_asked_after_the_display_answers():
    display = ("1024x768x24", "/opt/argusic/harness", "/out")
    plain = _bootstrap_script("/forge/source", "/workspace/project", "abc1234", ["true"], display)
    assert "ffmpeg" not in plain
    script = _bootstrap_script("/forge/source", "/workspace/project", "abc1234", ["true"], display, 300)
    lines = script.splitlines()
    (at,) = [i for i, line in enumerate(lines) if "x11grab" in line]
    assert at > next(i for i, line in enumerate(lines) if "export DISPLAY=:99" in line)
    assert lines[at].rstrip().endswith("7>&- &")  # in the background, without the seal descriptor
    assert "-t 300" in lines[at]
    assert at < next(i for i, line in enumerate(lines) if line.startswith("exec "))  # before the agent
    with pytest.raises(ValueError):
        _video_command(":99", "1024x768; rm -rf /", "/out", 10)


# --- the record ------------------------------------------------------------------------------------------


def test_older_records_stay_valid_and_byte_for_byte(record_doc):
    record = parse_record(record_doc)
    assert record.evidence.display_video is None and record.evidence.session_log is None
    assert {"display_video", "session_log"}.isdisjoint(json.loads(record.to_json())["evidence"])


def test_an_external_cli_session_is_an_optional_evidence_kind(record_doc, isolated):
    """Issue #31 (seed 002): the raw session.jsonl, fingerprinted, audited where its sha256 says."""
    store = EvidenceStore()
    session = isolated / "session.jsonl"
    session.write_text('{"type":"system","subtype":"init"}\n')
    ref = store.put_file(session).as_ref()
    record = parse_record(record_doc | {"evidence": record_doc["evidence"] | {"session_log": ref}})
    assert RunRecord.model_validate_json(record.to_json()) == record
    assert record_evidence_problems(record) == []
    moved = ref | {"uri": ref["uri"].replace(ref["sha256"][:2], "zz")}
    bad = parse_record(record_doc | {"evidence": record_doc["evidence"] | {"session_log": moved}})
    assert [f for f, _ in record_evidence_problems(bad)] == ["evidence.session_log.uri"]


def test_the_video_is_an_optional_evidence_kind(record_doc, isolated):
    store = EvidenceStore()
    ref = store.put_file(_mkv(isolated / VIDEO_FILE)).as_ref()
    record = parse_record(record_doc | {"evidence": record_doc["evidence"] | {"display_video": ref}})
    assert record.evidence.display_video.sha256 == ref["sha256"]
    again = RunRecord.model_validate_json(record.to_json())
    assert again == record and record_evidence_problems(record) == []
    moved = ref | {"uri": ref["uri"].replace(ref["sha256"][:2], "zz")}
    bad = parse_record(record_doc | {"evidence": record_doc["evidence"] | {"display_video": moved}})
    assert [f for f, _ in record_evidence_problems(bad)] == ["evidence.display_video.uri"]


# --- on arrival -----------------------------------------------------------------------------------------


def test_a_video_is_fingerprinted_into_the_store_on_arrival(isolated):
    out = isolated / "out"
    out.mkdir()
    path = _mkv(out / VIDEO_FILE)
    found = display_video_evidence(out, EvidenceStore())
    assert set(found) == {"display_video"} and found["display_video"]["bytes"] == path.stat().st_size
    assert EvidenceStore().verify(found["display_video"])
    assert display_video_evidence(isolated / "none", EvidenceStore()) == {}  # no display, no video


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "is empty"),
        (b"\x00\x00\x00\x20ftypisom" + b"\0" * 100, "not a Matroska file"),  # an MP4 put in its place
        (b"#!/bin/sh\necho fake video\n", "not a Matroska file"),
        (bytes.fromhex("1a45dfa3") + b"\x42\x82\x84webm" + b"\0" * 100, "not a Matroska file"),
    ],
)
def test_a_replaced_video_is_refused_and_marked(isolated, content, words):
    out = isolated / "out"
    out.mkdir()
    (out / VIDEO_FILE).write_bytes(content)
    found = display_video_evidence(out, EvidenceStore())
    assert list(found) == ["display_video_problem"] and words in found["display_video_problem"]


def test_an_oversized_video_is_refused_and_marked(isolated):
    out = isolated / "out"
    out.mkdir()
    path = _mkv(out / VIDEO_FILE)
    os.truncate(path, VIDEO_MAX_BYTES + 2 * 1024**2)  # sparse: no real bytes written
    assert "over the video's cap" in video_problem(path)
    found = display_video_evidence(out, EvidenceStore())
    assert "over the video's cap" in found["display_video_problem"]
    stored = isolated / "evidence_store"
    assert not stored.exists() or not any(p.is_file() for p in stored.rglob("*"))  # nothing kept


def test_a_video_replaced_by_a_link_is_never_landed(tmp_path):
    source, dest = tmp_path / "out", tmp_path / "landed"
    source.mkdir()
    secret = _mkv(tmp_path / "elsewhere.mkv")
    (source / VIDEO_FILE).symlink_to(secret)
    report = land_outputs(source, dest, LandingLimits(1 << 30, 1 << 30, 100))
    assert report.refusal == f"evidence refused: {VIDEO_FILE} is a symbolic link"
    assert not (dest / VIDEO_FILE).exists()
    os.link(secret, source / "other.mkv")
    (source / VIDEO_FILE).unlink()
    os.link(secret, source / VIDEO_FILE)
    report = land_outputs(source, tmp_path / "landed2", LandingLimits(1 << 30, 1 << 30, 100))
    assert f"{VIDEO_FILE} has 3 hard links" in report.refusal


def test_a_landed_video_over_the_landing_cap_is_refused(tmp_path):
    source = tmp_path / "out"
    source.mkdir()
    _mkv(source / VIDEO_FILE, 10_000)
    report = land_outputs(source, tmp_path / "landed", LandingLimits(5_000, 1 << 30, 100))
    assert f"{VIDEO_FILE} is 10000 bytes, over the cap of 5000 bytes per file" in report.refusal


def test_the_video_is_audited_like_the_rest_of_the_evidence(isolated, record_doc):
    from argusic.publication.audit import audit_warehouse
    from argusic.warehouse.load_runs import ingest
    from conftest import write_record

    store = EvidenceStore()
    for kind, text in (("log", b"the log"), ("recording", b'{"version": 2}\n'), ("report", b"{}")):
        (isolated / kind).write_bytes(text)
        record_doc["evidence"][kind] = store.put_file(isolated / kind).as_ref()
    record_doc["evidence"]["display_video"] = ref = store.put_file(_mkv(isolated / VIDEO_FILE)).as_ref()
    ingest([write_record(isolated / "r", record_doc)])
    clean = audit_warehouse()
    assert clean.ok and clean.checked == 4
    stored = isolated / "evidence_store" / store.key_of_uri(ref["uri"])
    stored.chmod(0o644)
    stored.write_bytes(_mkv(isolated / "other.mkv").read_bytes()[:-1] + b"x")  # another video, same size
    report = audit_warehouse()
    assert [(f.kind, f.problem) for f in report.findings] == [("display_video", "mismatch")]


# --- the harness stops the recorder and seals the video -----------------------------------------------

# A stand-in for ffmpeg (its argv[0] is "ffmpeg", with x11grab and the output path, as /proc shows the
# real one): writes a frame every 50 ms; SIGINT makes it write its trailer and exit, unless told to
# ignore it.
FAKE_FFMPEG = r"""
import signal, sys, time
path, stubborn = sys.argv[-1], "stubborn" in sys.argv
out = open(path, "ab", buffering=0)
def stop(*_):
    out.write(b"TRAILER")
    sys.exit(0)
signal.signal(signal.SIGINT, signal.SIG_IGN if stubborn else stop)
print("recording", flush=True)
while True:
    out.write(b"frame ")
    time.sleep(0.05)
"""


class _Channel:
    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def file_as_it_is(self, name: str, path: str, cap: int = 0) -> None:
        import hashlib

        self.files[name] = hashlib.sha256(open(path, "rb").read()).hexdigest()  # noqa: SIM115


def _fake_recorder(out, *extra: str):
    import subprocess
    import sys

    argv = [sys.executable, "-c", FAKE_FFMPEG, "-f", "x11grab", "-i", ":99", *extra, str(out / VIDEO_FILE)]
    proc = subprocess.Popen(["bash", "-c", 'exec -a ffmpeg "$0" "$@"', *argv], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"recording\n"
    return proc


def test_the_harness_stops_the_recorder_cleanly_then_seals_the_video(tmp_path):
    import hashlib

    from argusic.harness import xdisplay

    proc = _fake_recorder(tmp_path)
    assert xdisplay.video_recorders(str(tmp_path / VIDEO_FILE)) == [proc.pid]
    assert xdisplay.video_recorders(str(tmp_path / "other.mkv")) == []  # only the one writing there
    channel = _Channel()
    xdisplay.seal_video(channel, str(tmp_path))
    data = (tmp_path / VIDEO_FILE).read_bytes()
    assert data.endswith(b"TRAILER")  # it closed its file itself: SIGINT, not SIGKILL
    assert channel.files == {VIDEO_FILE: hashlib.sha256(data).hexdigest()}
    assert xdisplay._proc_state(proc.pid) == ""  # gone and reaped
    assert (tmp_path / VIDEO_FILE).read_bytes() == data  # nothing writes after the seal


def test_a_recorder_that_ignores_sigint_is_killed_before_the_seal(tmp_path):
    from argusic.harness import xdisplay

    proc = _fake_recorder(tmp_path, "stubborn")
    assert xdisplay.stop_video(str(tmp_path), timeout=0.3) == [proc.pid]
    assert xdisplay._proc_state(proc.pid) == ""
    assert not (tmp_path / VIDEO_FILE).read_bytes().endswith(b"TRAILER")


def test_no_video_no_seal_entry(tmp_path):
    from argusic.harness import xdisplay

    channel = _Channel()
    xdisplay.seal_video(channel, str(tmp_path))
    assert channel.files == {}
