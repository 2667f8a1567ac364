"""Model judges (issue #14, Layer 2): the blinded evidence folder, verdict parsing and checking on
recorded judge sessions (written by hand in the CLIs' formats: no model ran), the judgement document
and, slow, run_judge in a real container of the agents image with replayed sessions."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from argusic.core.tasks import load_task
from argusic.judging import judges as J
from argusic.judging.evidence import (
    MANIFEST,
    EvidenceError,
    build_evidence_folder,
    evidence_sha256,
    read_manifest,
)
from conftest import VALID_RECORD, write_record

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judging"
HTML = FIXTURES / "html"
SESSIONS = FIXTURES / "judge_sessions"
CRITERIA = ("code_structure", "logic_correctness")


def S(code_structure: int, logic_correctness: int) -> dict:
    return {"code_structure": code_structure, "logic_correctness": logic_correctness}


AGENT = "claude-code"
MODEL_REQUESTED = "claude-sonnet-4-5"
MODEL_RESPONDED = "claude-sonnet-4-5-20250929"
# A tiny PNG (1x1): a binary screenshot.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8ffff3f0005fe02fea7d6a4e20000000049454e44ae426082"
)


def record_doc(purpose: str = "board", agent: str = AGENT) -> dict:
    doc = copy.deepcopy(VALID_RECORD)
    doc.update(purpose=purpose, agent_id=agent, project_id="wavgen",
               harness={"name": "claude-code", "version": "2.1.332"},
               model={"requested": MODEL_REQUESTED, "responded": MODEL_RESPONDED})  # fmt: skip
    if purpose == "repair":
        doc.update(report=None, repair={"item_id": "i1", "item_revision": "0" * 64, "track": "basic",
                                        "patch": None, "grade": None})  # fmt: skip
    doc["attempt_id"] = f"{doc['cycle_id']}.{purpose}.{agent}.wavgen.a1"
    return doc


def make_attempt(root: Path, doc: dict | None = None, *, patch: str | None = None) -> Path:
    """An attempt folder: the clean HTML page landed as an artifact (with its script and style), a log
    that names the agent, its model and the attempt, and a screenshot."""
    doc = doc or record_doc()
    attempt = root / doc["cycle_id"] / doc["attempt_id"]
    write_record(attempt, doc)
    artifacts = attempt / "out" / "artifacts"
    artifacts.mkdir(parents=True)
    page = (
        (HTML / "clean.html").read_text().replace("</body>", f"<!-- made by {doc['agent_id']} -->\n</body>")
    )
    (artifacts / "index.html").write_text(page)
    shutil.copy(HTML / "app.js", artifacts / "app.js")
    shutil.copy(HTML / "style.css", artifacts / "style.css")
    (attempt / "out" / "log.txt").write_text(
        f"attempt {doc['attempt_id']} by {doc['agent_id'].upper()} (Claude-Code {MODEL_RESPONDED})\n"
        f"model {MODEL_REQUESTED} installed wavgen\nran it: It works\n"
    )
    if patch is not None:
        (attempt / "out" / "patch.diff").write_text(patch)
    (attempt / "render").mkdir()
    (attempt / "render" / "page00-load.png").write_bytes(PNG)
    return attempt


@pytest.fixture
def attempt(tmp_path: Path) -> Path:
    return make_attempt(tmp_path / "runs")


@pytest.fixture
def evidence(attempt: Path, tmp_path: Path) -> Path:
    return build_evidence_folder(attempt, tmp_path / "evidence")


# --- the blinded evidence folder ----------------------------------------------------------------------


def test_the_evidence_folder_holds_what_a_judge_reads(evidence: Path) -> None:
    manifest = read_manifest(evidence)
    paths = [f["path"] for f in manifest["files"]]
    assert paths == [
        "artifacts/app.js", "artifacts/index.html", "artifacts/style.css",
        "screenshots/page00-load.png", "task.md", "trace.txt",
    ]  # fmt: skip
    assert manifest["task_id"] == "install_and_run" and manifest["withheld"] == []
    assert (evidence / "screenshots/page00-load.png").read_bytes() == PNG
    task = (evidence / "task.md").read_text()
    assert "code_structure" in task and "logic_correctness" in task
    assert len(evidence_sha256(evidence)) == 64
    for entry in manifest["files"]:
        assert (evidence / entry["path"]).stat().st_size == entry["bytes"]


def test_no_file_of_the_folder_names_the_agent_harness_model_or_attempt(
    attempt: Path, evidence: Path
) -> None:
    doc = record_doc()
    secrets = [doc["attempt_id"], doc["agent_id"], "claude-code", MODEL_REQUESTED, MODEL_RESPONDED]
    for path in evidence.rglob("*"):
        assert not any(s.lower() in str(path.relative_to(evidence)).lower() for s in secrets)
        if path.is_file():
            text = path.read_bytes().decode("latin-1").lower()
            assert not [s for s in secrets if s.lower() in text], path
    trace = (evidence / "trace.txt").read_text()
    assert trace.startswith("attempt ATTEMPT by AGENT (AGENT AGENT)") and "It works" in trace
    assert "<!-- made by AGENT -->" in (evidence / "artifacts/index.html").read_text()


def test_links_binary_names_and_oversize_files_are_left_out(attempt: Path, tmp_path: Path) -> None:
    artifacts = attempt / "out" / "artifacts"
    (artifacts / "secret.txt").symlink_to("/etc/passwd")
    (artifacts / "linked").symlink_to(tmp_path, target_is_directory=True)
    (artifacts / "blob.bin").write_bytes(b"\x00\xff" + AGENT.encode() + b"\xfe")
    (artifacts / "claude-code-notes.txt").write_text("named after the harness")
    evidence = build_evidence_folder(attempt, tmp_path / "ev")
    manifest = read_manifest(evidence)
    paths = {f["path"] for f in manifest["files"]}
    assert "artifacts/secret.txt" not in paths and not any(p.startswith("artifacts/linked") for p in paths)
    assert "artifacts/AGENT-notes.txt" in paths
    assert manifest["withheld"] == ["artifacts/blob.bin: a binary file naming who made it"]
    with pytest.raises(EvidenceError, match="not an empty folder"):
        build_evidence_folder(attempt, evidence)


def test_a_repair_attempt_brings_its_patch(tmp_path: Path) -> None:
    patch = "diff --git a/src/wav.py b/src/wav.py\n+frames = read_frames(path)  # claude-code\n"
    attempt = make_attempt(tmp_path / "runs", record_doc("repair"), patch=patch)
    evidence = build_evidence_folder(attempt, tmp_path / "ev")
    assert (evidence / "patch.diff").read_text().endswith("read_frames(path)  # AGENT\n")
    assert read_manifest(evidence)["task_id"] == "repair"


def test_an_install_and_run_attempt_brings_its_landed_changes(attempt: Path, tmp_path: Path) -> None:
    (attempt / "out" / "changes.patch").write_text("diff --git a/setup.cfg b/setup.cfg\n+version = 0.1.0\n")
    evidence = build_evidence_folder(attempt, tmp_path / "ev")
    assert (evidence / "patch.diff").read_text().endswith("+version = 0.1.0\n")
    (attempt / "out" / "changes.patch").write_text("")  # no change: no patch file
    assert not (build_evidence_folder(attempt, tmp_path / "ev2") / "patch.diff").exists()


# --- verdict checks -------------------------------------------------------------------------------


def verdict(scores=None, quotes=(), summary="fine", **extra) -> str:
    doc = {"schema": "argusic.judge-verdict/1", "scores": scores or S(2, 2),
           "quotes": list(quotes), "summary": summary, **extra}  # fmt: skip
    return json.dumps(doc)


QUOTE = {
    "criterion": "logic_correctness",
    "file": "artifacts/app.js",
    "quote": 'console.warn("nor   is a warning")',
}


def test_a_good_verdict_is_valid_fenced_or_not(evidence: Path) -> None:
    plain = J.check_verdict(verdict(), CRITERIA, evidence)
    assert (plain.status, plain.reason, plain.scores) == (
        "valid",
        None,
        S(2, 2),
    )
    low = verdict(S(2, 1), [QUOTE])  # whitespace runs normalised
    fenced = J.check_verdict(f"```json\n{low}\n```\n", CRITERIA, evidence)
    assert fenced.status == "valid" and fenced.quotes == [QUOTE]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("I think it is fine.", "message: not a JSON object"),
        ('{"schema": "argusic.judge-verdict/1", "scores": {"code_structure": NaN}}', "message: not a JSON"),
        (verdict(extra_key=1), "schema: (verdict): Additional properties"),
        (verdict({"code_structure": 3, "logic_correctness": 2}), "schema: scores.code_structure"),
        (verdict({"code_structure": 2.0, "logic_correctness": 2}), "schema: scores.code_structure"),
        (verdict({"code_structure": True, "logic_correctness": 2}), "schema: scores.code_structure"),
        (verdict({"code_structure": 2}), "scores: not the task's criteria (missing ['logic_correctness']"),
        (verdict({"code_structure": 2, "logic_correctness": 2, "look": 2}), "not judged here ['look']"),
        (verdict(S(2, 1)), "quotes: logic_correctness scored 1 without"),
        (verdict(S(0, 2), [QUOTE]), "code_structure scored 0 without"),
        (verdict(quotes=[{**QUOTE, "criterion": "look"}]), "quotes: criterion 'look' is not a criterion"),
        (verdict(quotes=[{**QUOTE, "file": "../../etc/passwd"}]), "quotes.0.file: '../../etc/passwd' is not"),
        (verdict(quotes=[{**QUOTE, "file": MANIFEST}]), "quotes.0.file"),
        (verdict(quotes=[{**QUOTE, "quote": "not in the file at all"}]), "quotes.0.quote: not found"),
        (verdict(quotes=[{**QUOTE, "quote": "short"}]), "schema: quotes.0.quote"),
        (verdict(quotes=[{**QUOTE, "quote": "x" * 501}]), "schema: quotes.0.quote"),
        (verdict(quotes=[QUOTE] * 21), "schema: quotes"),
        (verdict(summary="s" * 2001), "schema: summary"),
        ("{" + " " * (64 * 1024) + "}", "message: over 65536 bytes"),
    ],
)  # fmt: skip
def test_a_verdict_failing_a_check_is_refused_naming_it(evidence: Path, message: str, reason: str) -> None:
    checked = J.check_verdict(message, CRITERIA, evidence)
    assert checked.status == "refused" and checked.reason is not None
    assert reason in checked.reason, checked.reason


def test_no_message_is_no_verdict(evidence: Path) -> None:
    for message in (None, "", "  \n"):
        assert J.check_verdict(message, CRITERIA, evidence).status == "no_verdict"


# --- recorded sessions: final messages and verdicts ---------------------------------------------------


RECORDED = {
    # file: (judge, status, scores, reason words)
    "claude_agree.jsonl": ("judge-claude", "valid", S(2, 2), None),
    "claude2_agree.jsonl": ("judge-claude-2", "valid", S(2, 1), None),
    "codex_agree.jsonl": ("judge-codex", "valid", S(2, 2), None),
    "codex_disagree_zero.jsonl": ("judge-codex", "valid", S(0, 0), None),
    "claude_off_rails.jsonl": ("judge-claude", "refused", S(0, 2),
                               "quotes.0.quote: not found verbatim in artifacts/index.html"),
    "claude_no_quote.jsonl": ("judge-claude-2", "refused", S(2, 1),
                              "logic_correctness scored 1 without a quote"),
    "claude_no_verdict.jsonl": ("judge-claude", "no_verdict", {}, "no final message"),
    "codex_no_verdict.jsonl": ("judge-codex", "no_verdict", {}, "no final message"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_sessions_give_their_verdicts(evidence: Path, tmp_path: Path, name: str) -> None:
    judge_id, status, scores, words = RECORDED[name]
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(SESSIONS / name, out / J.SESSION_FILE)
    checked = J.read_verdict(judge_id, out, evidence, CRITERIA)
    assert (checked.status, checked.scores) == (status, scores), checked
    if words:
        assert words in (checked.reason or "")


def test_codex_last_message_file_wins_over_the_session(evidence: Path, tmp_path: Path) -> None:
    shutil.copy(SESSIONS / "codex_disagree_zero.jsonl", tmp_path / J.SESSION_FILE)
    (tmp_path / J.LAST_MESSAGE_FILE).write_text(verdict())
    assert J.final_message("codex", tmp_path) == verdict()
    assert J.read_verdict("judge-codex", tmp_path, evidence, CRITERIA).scores["code_structure"] == 2


def test_the_judge_prompt_is_the_generated_file() -> None:
    task = load_task("install_and_run")
    generated = Path(J.__file__).with_name("generated") / "install_and_run.judge.md"
    assert generated.read_text() == task.judge_prompt()
    assert set(J.JUDGES) >= {"judge-claude", "judge-codex", "judge-claude-2"}
    assert {J.JUDGES[j].harness_name for j in J.JUDGES} == {"claude-code", "codex"}
    assert J.JUDGES["judge-claude"].model != J.JUDGES["judge-claude-2"].model


def test_a_real_judge_without_a_key_refuses_to_start(attempt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITELLM_BASE_URL", raising=False)
    monkeypatch.delenv("LITELLM_MASTER_KEY", raising=False)
    with pytest.raises(J.JudgeError, match="no model key .*LITELLM_BASE_URL is not set"):
        J.judge_attempt(attempt, ["judge-claude"])
    assert not (attempt / "judging").exists()
    with pytest.raises(J.JudgeError, match="unknown"):
        J.judge_attempt(attempt, ["judge-nobody"], {})


# --- the CLI ------------------------------------------------------------------------------------------


def test_cli_judge_refuses_unknown_judges_and_real_judges_without_a_key(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argusic.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.delenv("LITELLM_BASE_URL", raising=False)
    monkeypatch.delenv("LITELLM_MASTER_KEY", raising=False)
    attempt = make_attempt(isolated / "runs")
    result = CliRunner().invoke(app, ["judge", "--cycle", "2026-12", "--judges", "judge-nobody"])
    assert result.exit_code == 2 and "unknown judges ['judge-nobody']" in result.output
    assert CliRunner().invoke(app, ["judge", "--cycle", "../etc"]).exit_code == 2
    result = CliRunner().invoke(app, ["judge", "--cycle", "2026-12", "--judges", "judge-codex"])
    assert result.exit_code == 1 and "no model key" in result.output
    assert "0 judgements written, 1 attempts not judged" in result.output
    assert not (attempt / "judging").exists()


@pytest.mark.slow
def test_cli_judge_replays_recorded_sessions_per_attempt(isolated: Path, tmp_path: Path) -> None:
    from argusic.cli.main import app
    from typer.testing import CliRunner

    attempt = make_attempt(isolated / "runs")
    replay = tmp_path / "replay"
    (replay / attempt.name).mkdir(parents=True)
    shutil.copy(SESSIONS / "codex_agree.jsonl", replay / "judge-codex.jsonl")
    shutil.copy(SESSIONS / "claude_agree.jsonl", replay / "judge-claude.jsonl")
    shutil.copy(SESSIONS / "claude_no_quote.jsonl", replay / attempt.name / "judge-claude.jsonl")  # wins
    result = CliRunner().invoke(
        app,
        ["judge", "--cycle", "2026-12", "--judges", "judge-claude,judge-codex", "--replay-dir", str(replay)],
    )
    assert result.exit_code == 0, result.output
    assert "2 judgements written (replayed recorded sessions: no model ran)" in result.output
    claude = json.loads((attempt / "judging" / "judge-claude.json").read_text())
    codex = json.loads((attempt / "judging" / "judge-codex.json").read_text())
    assert (claude["status"], codex["status"]) == ("refused", "valid")


# --- a real judge's container (no model here: the Docker client is a stand-in) -----------------------


class FakeBroker:
    def __init__(self) -> None:
        self.created: list[str] = []
        self.deleted: list[object] = []

    def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None):
        from argusic.attempts.keys import IssuedKey

        self.created.append(attempt_id)
        return IssuedKey(
            value="sk-judge-secret",
            kind="per_run",
            attempt_id=attempt_id,
            base_url="http://gateway.invalid:4000",
        )

    def delete(self, key) -> bool:
        self.deleted.append(key)
        return True


class FakeContainer:
    def __init__(self, outcome: int) -> None:
        self.outcome = outcome

    def wait(self, timeout: float) -> dict:
        return {"StatusCode": self.outcome}

    def logs(self, stdout: bool, stderr: bool) -> bytes:
        return b"cannot reach the gateway\n"

    def remove(self, force: bool) -> None:
        self.removed = True


class FakeDocker:
    def __init__(self, outcome: int) -> None:
        self.runs: list[tuple[tuple, dict]] = []
        self.images = self
        self.containers = self
        self.outcome = outcome

    def get(self, name: str) -> object:
        return object()

    def run(self, *args, **kwargs) -> FakeContainer:
        self.runs.append((args, kwargs))
        return FakeContainer(self.outcome)


@pytest.mark.parametrize("judge_id", ["judge-claude", "judge-codex"])
def test_a_real_judge_runs_its_cli_on_a_per_run_key_deleted_after(
    evidence: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge_id: str
) -> None:
    import docker

    fake = FakeDocker(outcome=1)
    monkeypatch.setattr(docker, "from_env", lambda: fake)
    broker = FakeBroker()
    with pytest.raises(J.JudgeError, match="container exited 1: cannot reach the gateway"):
        J.run_judge(judge_id, evidence, tmp_path / "out", broker=broker)
    ((args, kwargs),) = fake.runs
    command = " ".join(args[1])
    assert ("claude -p" in command) if judge_id == "judge-claude" else ("codex exec" in command)
    assert "/judge/prompt.md" in command and "/out/session.jsonl" in command
    assert "sk-judge-secret" in kwargs["environment"].values()
    assert "network_mode" not in kwargs  # the CLI reaches the gateway
    assert kwargs["read_only"] and kwargs["cap_drop"] == ["ALL"] and kwargs["working_dir"] == "/evidence"
    assert kwargs["volumes"][str(evidence.resolve())] == {"bind": "/evidence", "mode": "ro"}
    assert len(broker.created) == 1 and broker.created[0].startswith(f"judge.{judge_id}.")
    assert len(broker.deleted) == 1  # deleted however the run ended


def test_a_replay_has_no_network_and_no_key(
    evidence: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docker

    fake = FakeDocker(outcome=0)
    monkeypatch.setattr(docker, "from_env", lambda: fake)
    J.run_judge("judge-codex", evidence, tmp_path / "out", replay=SESSIONS / "codex_agree.jsonl")
    ((args, kwargs),) = fake.runs
    assert kwargs["network_mode"] == "none" and kwargs["network_disabled"] is True
    assert not any("KEY" in name for name in kwargs["environment"])
    assert "codex exec" not in " ".join(args[1])


def test_a_real_cli_that_ended_badly_still_gives_its_session(
    evidence: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docker

    class WritingDocker(FakeDocker):
        def run(self, *args, **kwargs) -> FakeContainer:
            out = next(src for src, bind in kwargs["volumes"].items() if bind["bind"] == "/out")
            shutil.copy(SESSIONS / "claude_no_verdict.jsonl", Path(out) / J.SESSION_FILE)  # max turns
            return super().run(*args, **kwargs)

    monkeypatch.setattr(docker, "from_env", lambda: WritingDocker(outcome=1))
    out = J.run_judge("judge-claude", evidence, tmp_path / "out", broker=FakeBroker())
    assert J.read_verdict("judge-claude", out, evidence, CRITERIA).status == "no_verdict"


def test_a_long_trace_keeps_its_head_and_tail(attempt: Path, tmp_path: Path) -> None:
    from argusic.judging.evidence import MAX_TRACE_BYTES

    (attempt / "out" / "log.txt").write_text("first line\n" + "x" * (3 * MAX_TRACE_BYTES) + "\nlast line\n")
    trace = (build_evidence_folder(attempt, tmp_path / "ev") / "trace.txt").read_text()
    assert trace.startswith("first line") and trace.endswith("last line\n") and "bytes cut" in trace
    assert len(trace.encode()) < MAX_TRACE_BYTES + 100
