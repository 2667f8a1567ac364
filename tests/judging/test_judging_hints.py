"""Layer 1 hints (argusic.judging.hints): needles, tool order, rendering assembly, hostile evidence."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import sys
import types
from pathlib import Path

import pytest
from argusic.cli.main import app
from argusic.core.record import parse_record
from argusic.core.tasks import Needle, load_task, task_for
from argusic.judging import hints as H
from argusic.judging import needles as N
from argusic.judging.tool_order import classify_command, is_subsequence, steps_from_runner
from conftest import VALID_RECORD, write_record
from typer.testing import CliRunner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WEATHER = FIXTURES / "judging" / "weatherfetch_readme_runner"
SESSIONS = FIXTURES / "sessions"


def _record(**changes) -> object:
    doc = copy.deepcopy(VALID_RECORD)
    doc.update(changes)
    doc["attempt_id"] = f"{doc['cycle_id']}.{doc['purpose']}.{doc['agent_id']}.{doc['project_id']}.a1"
    return parse_record(doc)


def _weather_attempt(tmp_path: Path, *, artifact: bool = True) -> tuple[Path, object]:
    attempt = tmp_path / "2026-12" / "attempt"
    out = attempt / "out"
    out.mkdir(parents=True)
    for name in ("log.txt", "report.json", "harness.json"):
        shutil.copy(WEATHER / name, out / name)
    if artifact:
        (out / "artifacts" / "out").mkdir(parents=True)
        shutil.copy(WEATHER / "forecast.json", out / "artifacts" / "out" / "forecast.json")
    report = json.loads((WEATHER / "report.json").read_text())
    return attempt, _record(project_id="weatherfetch", report=report)


def _external_attempt(
    tmp_path: Path, session: Path, harness: str = "claude-code", **changes
) -> tuple[Path, object]:
    attempt = tmp_path / "ext"
    (attempt / "out").mkdir(parents=True)
    shutil.copy(session, attempt / "out" / "session.jsonl")
    record = _record(agent_id=harness, harness={"name": harness, "version": "1.0.0"}, **changes)
    return attempt, record


def _no_render(pages: list[Path]) -> list:
    raise AssertionError("no HTML page expected")


# --- the reference agent's real weatherfetch run --------------------------------------------------


def test_weatherfetch_reference_run_all_needles_in_order(tmp_path: Path) -> None:
    attempt, record = _weather_attempt(tmp_path)
    task = task_for("board", "weatherfetch")
    hints = H.compute_hints(attempt, record, task, renderer=_no_render)
    assert hints["task_revision"] == task.revision and hints["task_version"] == "1/1"
    needles = hints["needles"]
    assert (needles["score"], needles["status"], needles["missing"]) == (1.0, "measured", [])
    assert set(needles["found"]) == {n.id for n in task.needles}
    assert needles["sources"] == ["log", "report", "artifacts"]
    assert hints["rendering"]["status"] == "not_applicable" and hints["rendering"]["score"] is None
    logic = hints["agent_logic"]
    assert logic["source"] == "readme-runner steps"
    assert logic["steps"] == ["read", "install", "test", "exec", "report"]
    assert (logic["score"], logic["in_order"], logic["succeeded"]) == (1.0, True, True)
    path = H.write_hints(attempt, hints)
    assert json.loads(path.read_text()) == hints


def test_a_needle_in_an_artifact_not_landed_is_undetermined(tmp_path: Path) -> None:
    # "umbrella": true is cut from the report (the decoder shortens it), so only the artifact shows it
    attempt, record = _weather_attempt(tmp_path, artifact=False)
    hint = H.compute_hints(attempt, record, task_for("board", "weatherfetch"), renderer=_no_render)["needles"]
    assert hint["status"] == "unavailable" and hint["score"] is None
    assert "umbrella-true" in hint["detail"] and "no artifact files were landed" in hint["detail"]


def _task_with(*needles: Needle, tool_order: tuple[str, ...] = ()) -> object:
    return dataclasses.replace(load_task("install_and_run"), needles=needles, tool_order=tool_order)


LOG_NEEDLE = Needle("tests-ran", None, r"\bRan 1 test\b", ("log",))
REPORT_NEEDLE = Needle("mock", "mock_server.py", None, ("report",))
ABSENT = Needle("absent", "no such words anywhere", None, ("log", "report"))


@pytest.mark.parametrize(
    ("needles", "score"),
    [((LOG_NEEDLE, REPORT_NEEDLE), 1.0), ((LOG_NEEDLE, ABSENT), 0.5), ((ABSENT,), 0.0)],
)
def test_needles_all_some_none(tmp_path: Path, needles: tuple, score: float) -> None:
    attempt, record = _weather_attempt(tmp_path)
    hint = H.compute_hints(attempt, record, _task_with(*needles), renderer=_no_render)["needles"]
    assert (hint["score"], hint["status"]) == (score, "measured")


def test_no_needles_is_not_applicable(tmp_path: Path) -> None:
    attempt, record = _weather_attempt(tmp_path)
    hint = H.compute_hints(attempt, record, _task_with(), renderer=_no_render)["needles"]
    assert (hint["score"], hint["status"]) == (None, "not_applicable")


# --- hostile evidence ----------------------------------------------------------------------------


def test_symlinked_log_is_not_followed(tmp_path: Path) -> None:
    attempt, record = _weather_attempt(tmp_path)
    log = attempt / "out" / "log.txt"
    secret = tmp_path / "secret.txt"
    secret.write_text("Ran 1 test\n")
    log.unlink()
    os.symlink(secret, log)
    hint = H.compute_hints(attempt, record, _task_with(LOG_NEEDLE), renderer=_no_render)["needles"]
    assert hint["status"] == "unavailable" and "log.txt is a symbolic link" in hint["detail"]
    # the other needles still decide when they can: some found, some surely missing
    absent = Needle("absent", "no such words anywhere", None, ("report",))
    task = _task_with(LOG_NEEDLE, REPORT_NEEDLE, absent)
    hint = H.compute_hints(attempt, record, task, renderer=_no_render)
    assert hint["needles"]["score"] == 0.5 and hint["needles"]["status"] == "measured"


def test_oversize_and_missing_logs_are_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    attempt, record = _weather_attempt(tmp_path)
    monkeypatch.setattr(N, "LOG_MAX_BYTES", 100)
    hint = H.compute_hints(attempt, record, _task_with(LOG_NEEDLE), renderer=_no_render)["needles"]
    assert hint["status"] == "unavailable" and "over the 100-byte cap: not read" in hint["detail"]
    monkeypatch.undo()
    (attempt / "out" / "log.txt").unlink()
    hint = H.compute_hints(attempt, record, _task_with(LOG_NEEDLE), renderer=_no_render)["needles"]
    assert hint["status"] == "unavailable" and "log.txt is missing" in hint["detail"]


def test_bad_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    attempt, record = _weather_attempt(tmp_path)
    log = attempt / "out" / "log.txt"
    log.write_bytes(b"\xff\xfe garbage \xc3\x28\n" + log.read_bytes())
    hint = H.compute_hints(attempt, record, _task_with(LOG_NEEDLE), renderer=_no_render)["needles"]
    assert (hint["score"], hint["status"]) == (1.0, "measured")


def test_artifact_links_and_oversize_files_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    attempt, record = _weather_attempt(tmp_path)
    artifacts = attempt / "out" / "artifacts"
    os.symlink("/etc/passwd", artifacts / "passwd")
    needle = Needle("umbrella", None, r'"umbrella":\s*true', ("artifacts",))
    hint = H.compute_hints(attempt, record, _task_with(needle), renderer=_no_render)["needles"]
    assert hint["score"] == 1.0  # found in a file that was read: the link does not matter then
    absent = Needle("root", "root:x:0:0", None, ("artifacts",))
    hint = H.compute_hints(attempt, record, _task_with(absent), renderer=_no_render)["needles"]
    assert hint["status"] == "unavailable" and "artifacts/passwd is a symbolic link" in hint["detail"]
    (artifacts / "passwd").unlink()
    monkeypatch.setattr(N, "ARTIFACT_MAX_BYTES", 10)
    hint = H.compute_hints(attempt, record, _task_with(needle), renderer=_no_render)["needles"]
    assert hint["status"] == "unavailable" and "over the 10-byte cap" in hint["detail"]


# --- agent logic from recorded sessions ---------------------------------------------------------


@pytest.mark.parametrize(
    ("harness", "session", "score", "in_order"),
    [
        ("claude-code", SESSIONS / "claude_code" / "normal.jsonl", 1.0, True),
        ("claude-code", FIXTURES / "judging" / "claude_code_read_last.jsonl", 0.5, False),
        ("codex", SESSIONS / "codex" / "normal.jsonl", 1.0, True),
        ("codex", FIXTURES / "judging" / "codex_read_last.jsonl", 0.5, False),
    ],
)
def test_agent_logic_from_sessions(
    tmp_path: Path, harness: str, session: Path, score: float, in_order: bool
) -> None:
    attempt, record = _external_attempt(tmp_path, session, harness)
    hint = H.compute_hints(attempt, record, load_task("install_and_run"), renderer=_no_render)["agent_logic"]
    assert (hint["score"], hint["in_order"], hint["succeeded"], hint["status"]) == (
        score,
        in_order,
        True,
        "measured",
    )
    assert hint["source"] == f"{harness} session" and hint["required"] == ["read", "exec", "report"]


def test_weatherfetch_order_needs_tests(tmp_path: Path) -> None:
    # Codex's wavgen session never runs tests: out of the weatherfetch order (read, test, exec, report)
    attempt, record = _external_attempt(tmp_path, SESSIONS / "codex" / "normal.jsonl", "codex")
    hint = H.agent_logic_hint(attempt, record, task_for("board", "weatherfetch"))
    assert (hint["score"], hint["in_order"]) == (0.5, False)


def test_failed_runs_score_zero_whatever_the_order(tmp_path: Path) -> None:
    attempt, record = _external_attempt(
        tmp_path, SESSIONS / "claude_code" / "normal.jsonl", end_reason="timeout"
    )
    hint = H.agent_logic_hint(attempt, record, load_task("install_and_run"))
    assert (hint["score"], hint["succeeded"]) == (0.0, False) and "timeout" in hint["detail"]
    report = dict(VALID_RECORD["report"], ran_ok=False)
    attempt2, record2 = _weather_attempt(tmp_path / "b")
    record2 = record2.model_copy(update={"report": record2.report.model_copy(update=report)})
    assert H.agent_logic_hint(attempt2, record2, load_task("install_and_run"))["score"] == 0.0


def test_symlinked_or_missing_session_is_unavailable(tmp_path: Path) -> None:
    attempt, record = _external_attempt(tmp_path, SESSIONS / "claude_code" / "normal.jsonl")
    session = attempt / "out" / "session.jsonl"
    target = tmp_path / "elsewhere.jsonl"
    session.rename(target)
    os.symlink(target, session)
    hint = H.agent_logic_hint(attempt, record, load_task("install_and_run"))
    assert hint["status"] == "unavailable" and "links are not followed" in hint["detail"]
    session.unlink()
    hint = H.agent_logic_hint(attempt, record, load_task("install_and_run"))
    assert hint["status"] == "unavailable" and "session.jsonl is missing" in hint["detail"]
    # with no required order, success alone decides (steps not needed)
    no_order = dataclasses.replace(load_task("install_and_run"), tool_order=())
    assert H.agent_logic_hint(attempt, record, no_order)["score"] == 1.0


def test_truncated_session_still_gives_its_steps(tmp_path: Path) -> None:
    attempt, record = _external_attempt(tmp_path, SESSIONS / "claude_code" / "truncated_midline.jsonl")
    steps, problem, _ = H.agent_steps(attempt / "out", record)
    assert problem is None and steps[:2] == ["read", "install"]


def test_repair_success_is_its_grade(tmp_path: Path) -> None:
    attempt = tmp_path / "r"
    (attempt / "out").mkdir(parents=True)
    block = {"item_id": "i1", "item_revision": "0" * 64, "track": "basic", "patch": None, "grade": None}
    record = _record(purpose="repair", report=None, project_id="repairkit", repair=block)
    task = task_for("repair", "repairkit")
    assert H.agent_logic_hint(attempt, record, task)["detail"].startswith("no grade: grade.json is missing")
    (attempt / "grade.json").write_text(json.dumps({"verdict": "resolved"}))
    ok, why = H.succeeded(attempt, record)
    assert ok and why is None
    (attempt / "grade.json").write_text(json.dumps({"verdict": "unresolved"}))
    assert H.succeeded(attempt, record) == (False, "graded 'unresolved'")


# --- tool order ----------------------------------------------------------------------------------


def test_is_subsequence() -> None:
    assert is_subsequence(["read", "exec"], ["search", "read", "edit", "exec"])
    assert is_subsequence(["read", "exec"], ["read", "install"])  # install is a kind of exec
    assert not is_subsequence(["read", "install"], ["read", "exec"])
    assert not is_subsequence(["read", "exec"], ["exec", "read"])
    assert is_subsequence([], [])
    assert not is_subsequence(["read"], [])


@pytest.mark.parametrize(
    ("command", "steps"),
    [
        ("bash -lc 'cat README.md'", ["read"]),
        ("pip install . && python3 -m wavgen out/tone.wav", ["install", "exec"]),
        ("python3 -m pytest -q", ["test"]),
        ("npm ci && npm test", ["install", "test"]),
        ("sudo apt-get -y install libfoo", ["install"]),
        ("make && make check", ["exec", "test"]),
        ("rg -n version setup.cfg | head", ["search", "read"]),
        ("sed -n 1,80p src/x.py", ["read"]),
        ("python3 -m unittest discover -s tests", ["test"]),
    ],
)
def test_classify_command(command: str, steps: list[str]) -> None:
    assert classify_command(command) == steps


def test_runner_steps_from_report_details() -> None:
    details = json.loads((WEATHER / "harness.json").read_text())
    assert steps_from_runner(details, report_written=False) == ["read", "install", "test", "exec"]
    assert steps_from_runner({"steps": "junk"}, report_written=True) == ["report"]


# --- rendering assembly --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FakePage:
    path: str
    outcome: str
    console_errors: tuple[str, ...] = ()
    screenshots: tuple[Path, ...] = ()
    detail: str = ""


def _html_attempt(tmp_path: Path) -> tuple[Path, object]:
    attempt, record = _weather_attempt(tmp_path)
    (attempt / "out" / "artifacts" / "index.html").write_text("<p>hi</p>")
    (attempt / "out" / "artifacts" / "docs").mkdir()
    (attempt / "out" / "artifacts" / "docs" / "b.htm").write_text("<p>b</p>")
    return attempt, record


def test_rendering_takes_the_lowest_page(tmp_path: Path) -> None:
    attempt, record = _html_attempt(tmp_path)
    shot = tmp_path / "s.png"
    shot.write_bytes(b"\x89PNG fake")
    seen: list[list[Path]] = []

    def renderer(pages: list[Path]) -> list:
        seen.append(pages)
        return [
            FakePage("docs/b.htm", "clean", screenshots=(shot,)),
            FakePage("index.html", "console_errors", ("TypeError: x is undefined",), (shot, shot)),
        ]

    hint = H.compute_hints(attempt, record, load_task("install_and_run"), renderer=renderer)["rendering"]
    assert [p.name for p in seen[0]] == ["b.htm", "index.html"]
    assert (hint["score"], hint["status"]) == (0.5, "measured")
    assert hint["pages"][1]["console_errors"] == ["TypeError: x is undefined"]
    assert len(hint["pages"][1]["screenshots"]) == 2 and len(hint["pages"][1]["screenshots"][0]) == 64
    timeout = H.rendering_hint(
        attempt, lambda pages: [FakePage(str(pages[1]), "timeout", detail="draw loop")]
    )
    assert timeout["score"] == 0.0 and timeout["pages"][0]["path"] == "index.html"


def test_rendering_unavailable_when_the_renderer_is_missing_or_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempt, record = _html_attempt(tmp_path)
    monkeypatch.setitem(sys.modules, "argusic.judging.render", None)  # not importable
    hint = H.rendering_hint(attempt, None)
    assert hint["status"] == "unavailable" and "rendering is not installed here" in hint["detail"]

    def broken(pages: list[Path]) -> list:
        raise RuntimeError("image argusic-render:bookworm is missing")

    hint = H.rendering_hint(attempt, broken)
    assert hint["status"] == "unavailable" and "image argusic-render:bookworm is missing" in hint["detail"]


# --- the document and the CLI --------------------------------------------------------------------


def test_write_hints_refuses_a_document_that_breaks_the_schema(tmp_path: Path) -> None:
    attempt, record = _weather_attempt(tmp_path)
    hints = H.compute_hints(attempt, record, task_for("board", "weatherfetch"), renderer=_no_render)
    bad = copy.deepcopy(hints)
    bad["needles"]["score"] = 0.7
    with pytest.raises(H.HintsError, match="needles"):
        H.write_hints(attempt, bad)
    bad = copy.deepcopy(hints)
    bad["agent_logic"]["status"] = "unavailable"  # unavailable with a score
    with pytest.raises(H.HintsError, match="agent_logic"):
        H.write_hints(attempt, bad)
    assert not (attempt / "hints.json").exists()


def test_cli_hints_compute_writes_every_attempt_of_a_cycle(isolated: Path, tmp_path: Path) -> None:
    cycle = isolated / "runs" / "2026-12"
    for project in ("weatherfetch", "tonegen-sh"):
        doc = copy.deepcopy(VALID_RECORD)
        doc["project_id"] = project
        doc["attempt_id"] = f"2026-12.board.readme-runner.{project}.a1"
        folder = cycle / doc["attempt_id"]
        (folder / "out").mkdir(parents=True)
        for name in ("log.txt", "report.json", "harness.json"):
            shutil.copy(WEATHER / name, folder / "out" / name)
        write_record(folder, doc)
    (cycle / "running-still").mkdir()  # no record yet: skipped
    result = CliRunner().invoke(app, ["hints", "compute", "--cycle", "2026-12"])
    assert result.exit_code == 0, result.output
    assert "2 hints written, 0 attempts not computed" in result.output
    written = json.loads((cycle / "2026-12.board.readme-runner.weatherfetch.a1" / "hints.json").read_text())
    assert written["schema"] == "argusic.hints/1" and written["task_version"] == "1/1"
    one = CliRunner().invoke(app, ["hints", "compute", "--cycle", "2026-12", "--attempt", "nope"])
    assert one.exit_code == 1 and "not an attempt folder" in one.output
    assert CliRunner().invoke(app, ["hints", "compute", "--cycle", "missing"]).exit_code == 2


def test_store_hint_evidence_keeps_only_named_regular_files(tmp_path: Path) -> None:
    import hashlib

    from argusic.core.evidence import EvidenceStore
    from argusic.judging.hints import store_hint_evidence

    attempt_dir = tmp_path / "attempt"
    shots = attempt_dir / "render"
    shots.mkdir(parents=True)
    named, other = b"\x89PNG named page", b"\x89PNG not in the hints"
    (shots / "page00-load.png").write_bytes(named)
    (shots / "page00-1s.png").write_bytes(other)
    secret = tmp_path / "host-secret.png"
    secret.write_bytes(b"host file")
    (shots / "page00-3s.png").symlink_to(secret)
    wanted = [hashlib.sha256(b).hexdigest() for b in (named, b"host file")]
    (attempt_dir / "hints.json").write_text(json.dumps({"rendering": {"pages": [{"screenshots": wanted}]}}))
    store = EvidenceStore(f"file://{tmp_path / 'store'}")

    uris = store_hint_evidence(attempt_dir, store)

    assert uris == [store.uri_for(store.key_for(wanted[0]))]
    assert store.read(uris[0]) == named  # the link to a host file was not followed
    assert store_hint_evidence(attempt_dir, store) == uris  # write-once: the same bytes again are a no-op


def test_changes_hint_fingerprints_the_landed_patch(tmp_path: Path) -> None:
    import hashlib

    attempt, record = _weather_attempt(tmp_path)
    assert H.changes_hint(attempt, record)["status"] == "unavailable"  # not collected
    patch = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    (attempt / "out" / "changes.patch").write_bytes(patch)
    hint = H.compute_hints(attempt, record, task_for("board", "weatherfetch"), renderer=_no_render)["changes"]
    assert hint == {"status": "measured", "sha256": hashlib.sha256(patch).hexdigest(), "bytes": len(patch),
                    "files": 1}  # fmt: skip
    (attempt / "out" / "changes.patch").unlink()
    (attempt / "out" / "changes.patch").symlink_to(tmp_path / "elsewhere.patch")
    assert H.changes_hint(attempt, record)["status"] == "unavailable"  # a link: never followed
    repair = types.SimpleNamespace(purpose="repair")
    assert H.changes_hint(attempt, repair)["status"] == "not_applicable"  # its patch is in its record
