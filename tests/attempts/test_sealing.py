"""The landed /out against the harness's seal, and the observation of an external CLI's session
(argusic.attempts.sealing; issue #25). The real channel (PID 1, a forged report in Docker) is in
tests/sandbox/test_containment.py; these are the host's decisions, branch by branch."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from argusic.attempts.sealing import LANDED_REPORT_COPY, check_seal, observe_session
from argusic.external import claude_code, codex
from argusic.sandbox.launch import ExecutionResult

SESSIONS = Path(__file__).parents[1] / "fixtures" / "sessions"
REPORT = {
    "install_ok": True, "ran_ok": False, "errors_encountered": 2, "errors_fixed": 1,
    "test_depth": "tier3_none", "verified_how": "not verified", "final_state": "It did not run.",
}  # fmt: skip
OBSERVED = {"source": "harness", "install_ok": True, "ran_ok": False, "errors_encountered": 2,
            "errors_fixed": 1, "verified": False}  # fmt: skip


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def result(
    landed: dict[str, bytes], seal: dict | bytes | None, exit_code: int = 0, **over
) -> ExecutionResult:
    at = datetime(2026, 12, 2, tzinfo=UTC)
    line = seal if isinstance(seal, bytes) or seal is None else json.dumps(seal).encode()
    fields = dict(
        executor="docker", started_at=at, ended_at=at, exit_code=exit_code, timed_out=False, error=None,
        seal_channel=True, seal_line=line, landed_sha256={n: sha(b) for n, b in landed.items()},
    )  # fmt: skip
    return ExecutionResult(**(fields | over))


def land(out: Path, files: dict[str, bytes]) -> None:
    out.mkdir(exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)


def report_bytes(report: dict) -> bytes:
    return (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode()


def test_intact_when_every_sealed_file_landed_as_written(tmp_path: Path) -> None:
    files = {"log.txt": b"log\n", "report.json": report_bytes(REPORT)}
    land(tmp_path, files)
    seal = {"seal": 1, "files": {n: sha(b) for n, b in files.items()}, "report": REPORT, "observed": OBSERVED}
    check = check_seal(result(files, seal), tmp_path)
    assert check.seal == {"status": "intact", "altered": [], "report_replaced": False}
    assert (check.fault, check.invalid) == (None, None)
    assert check.report == REPORT and check.observed["ran_ok"] is False
    assert check.observed["source"] == "harness" and check.observed["commands_run"] is None


def test_a_replaced_report_is_put_back_and_the_forgery_kept(tmp_path: Path) -> None:
    forged = report_bytes(REPORT | {"ran_ok": True, "test_depth": "tier1_real", "verified_how": "trust me"})
    written = {"log.txt": b"log\n", "report.json": report_bytes(REPORT)}
    landed = written | {"report.json": forged}
    land(tmp_path, landed)
    seal = {
        "seal": 1,
        "files": {n: sha(b) for n, b in written.items()},
        "report": REPORT,
        "observed": OBSERVED,
    }
    check = check_seal(result(landed, seal), tmp_path)
    assert check.seal == {"status": "altered", "altered": ["report.json"], "report_replaced": True}
    assert check.fault is None and check.invalid is None  # a finding: the sealed report counts
    assert (tmp_path / "report.json").read_bytes() == report_bytes(REPORT)  # the harness's own bytes
    assert (tmp_path / LANDED_REPORT_COPY).read_bytes() == forged


@pytest.mark.parametrize(
    ("landed", "altered"),
    [
        ({"log.txt": b"log, rewritten\n"}, ["log.txt"]),  # changed
        ({}, ["log.txt"]),  # removed, or refused at landing
    ],
)
def test_evidence_changed_after_the_harness_wrote_it_is_the_containers_fault(
    tmp_path, landed, altered
) -> None:
    land(tmp_path, landed)
    seal = {"seal": 1, "files": {"log.txt": sha(b"log\n")}}
    check = check_seal(result(landed, seal), tmp_path)
    assert check.seal["status"] == "altered" and check.seal["altered"] == altered
    assert check.fault == "changed after the harness wrote them: log.txt" and check.invalid is None


def test_a_file_sealed_absent_that_lands_was_written_afterwards(tmp_path: Path) -> None:
    landed = {"report.json": b"{}"}
    check = check_seal(result(landed, {"seal": 1, "files": {"report.json": "absent"}}), tmp_path)
    assert check.seal["altered"] == ["report.json"] and check.fault is not None


def test_a_file_too_large_to_seal_is_not_compared(tmp_path: Path) -> None:
    landed = {"session.jsonl": b"x"}
    check = check_seal(result(landed, {"seal": 1, "files": {"session.jsonl": "over-cap"}}), tmp_path)
    assert check.seal["status"] == "intact" and check.fault is None


@pytest.mark.parametrize(
    "line",
    [None, b"", b"not json", b'{"seal": 2, "files": {}}', b'{"seal": 1, "files": {"../x": "absent"}}',
     b'{"seal": 1, "files": {"log.txt": "zz"}}', b"[1]"],
)  # fmt: skip
def test_a_seal_lost_or_unreadable_after_a_normal_end_is_ours(tmp_path: Path, line) -> None:
    check = check_seal(result({}, line), tmp_path)
    assert check.seal == {"status": "missing"}
    assert check.invalid is not None and check.invalid.startswith("the harness's seal did not reach us")
    assert check.invalid.endswith("our tooling")


def test_no_seal_after_the_harness_was_killed_is_not_ours(tmp_path: Path) -> None:
    """The harness killed from inside exits non-zero and seals nothing: the container's fault is
    decided elsewhere (harness exit code), never an invalid attempt the container could ask for."""
    check = check_seal(result({}, None, exit_code=137), tmp_path)
    assert check.seal == {"status": "missing"} and check.invalid is None and check.fault is None


def test_timeouts_and_executor_errors_expect_no_seal(tmp_path: Path) -> None:
    assert check_seal(result({}, None, timed_out=True, exit_code=None), tmp_path).invalid is None
    assert check_seal(result({}, None, error="docker: gone", exit_code=None), tmp_path).invalid is None


def test_an_executor_without_a_channel_says_so(tmp_path: Path) -> None:
    check = check_seal(result({}, None, seal_channel=False), tmp_path)
    assert check.seal == {"status": "no_channel"} and check.observed is None and check.invalid is None


def test_a_sealed_report_that_is_not_a_report_is_ours(tmp_path: Path) -> None:
    seal = {"seal": 1, "files": {}, "report": {"install_ok": "yes"}, "observed": OBSERVED}
    check = check_seal(result({}, seal), tmp_path)
    assert check.invalid is not None and "unreadable" in check.invalid


# -- an external CLI's session, observed -------------------------------------------------------------


def test_claude_code_session_observed_commands_errors_and_the_quoted_verification() -> None:
    run = claude_code.collect(SESSIONS / "claude_code" / "normal.jsonl", SESSIONS / "reports" / "valid.json")
    seen = observe_session(run, run.report)
    assert (seen["commands_run"], seen["commands_failed"]) == (3, 1)
    # `pip install .` failed, then `pip install . && ...` succeeded: the same program, fixed
    assert (seen["errors_encountered"], seen["errors_fixed"]) == (1, 1)
    assert seen["install_ok"] and seen["ran_ok"] and seen["verified"]
    assert seen["verify_command"].startswith('python3 -c "import wave;')


def test_codex_commands_are_read_without_its_shell_wrapper() -> None:
    run = codex.collect(SESSIONS / "codex" / "normal.jsonl", None)
    said = {
        "verified_how": "`python3 -c 'import wave; print(wave.open(\"out/tone.wav\").getnframes())'` "
        "gave 44100"
    }
    seen = observe_session(run, said)
    assert (seen["commands_run"], seen["errors_encountered"], seen["errors_fixed"]) == (4, 1, 1)
    assert seen["verified"] and seen["verify_command"].startswith("python3 -c 'import wave;")


def test_a_verification_the_session_never_ran_is_not_observed() -> None:
    run = claude_code.collect(SESSIONS / "claude_code" / "normal.jsonl", None)
    seen = observe_session(run, {"verified_how": "ffprobe out/tone.wav shows 1.0 s of audio"})
    assert seen["verified"] is False and seen["verify_command"] is None
    # a report's own count never lowers what the log shows
    assert seen["errors_encountered"] == 1


def test_a_session_log_changed_after_the_cli_ended_observes_nothing() -> None:
    run = claude_code.collect(SESSIONS / "claude_code" / "normal.jsonl", None)
    seen = observe_session(run, None, sealed_intact=False)
    assert seen["source"] == "session_log" and seen.get("install_ok") is None and seen.get("verified") is None


def test_a_cut_session_log_says_its_counts_are_lower_bounds() -> None:
    run = claude_code.collect(SESSIONS / "claude_code" / "truncated_midline.jsonl", None)
    assert "lower bounds" in observe_session(run, None)["note"]


def test_init_and_the_harness_agree_on_the_seal_channel() -> None:
    """init.py is mounted alone and imports nothing: its copy of the channel's values must be seal.py's."""
    from argusic.harness import init, seal

    assert (init.SEAL_FD, init.SEAL_MAX_BYTES) == (seal.SEAL_FD, seal.SEAL_MAX_BYTES)


def test_a_put_back_report_is_the_harness_bytes_even_outside_ascii(tmp_path: Path) -> None:
    report = REPORT | {"final_state": "Décodé: 440 Hz ✓"}
    written = {"report.json": report_bytes(report)}
    landed = {"report.json": b"{}"}
    land(tmp_path, landed)
    seal = {"seal": 1, "files": {"report.json": sha(written["report.json"])}, "report": report,
            "observed": OBSERVED}  # fmt: skip
    check_seal(result(landed, seal), tmp_path)
    assert (tmp_path / "report.json").read_bytes() == written["report.json"]
