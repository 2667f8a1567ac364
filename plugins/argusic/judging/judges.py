"""Model judges (issue #14, seed 004, Layer 2): advisory scores of an attempt's evidence by several
coding-agent CLIs, never part of a score, a verdict, a rate or the board.

One judge run (``run_judge``) is one container of the agents image (``argusic.core.settings.agents_image()``)
with the blinded evidence folder (``argusic.judging.evidence``) mounted read-only at ``/evidence`` (its
working directory), ``/out`` writable and the judge prompt (``Task.judge_prompt()``, generated as
``judging/generated/<task_id>.judge.md``) on stdin; locked down like the render container. With
``replay`` (a recorded judge session) the container runs no CLI: with networking off it tees the
recorded session to ``/out/session.jsonl`` (Codex: and its last message to ``/out/last_message.txt``),
so the container, the collection and the verdict checks run for real on recorded sessions (written by
hand in the CLIs' formats: tests/fixtures/judging/judge_sessions). With a *judgement script*
(``argusic.judging.double``, issue #28) the judge's real CLI runs in its container against the model
double, which answers from the script on an internal network of its own with a per-run key: the
session, the final message and the checks are the real CLI's; only the model is scripted (the
judgement's ``model`` then names the double and the script, ``model-double/<sha256>``).

The judge's final message (Claude Code: the stream-json ``result`` message's ``result``; Codex:
``last_message.txt``, else its last ``agent_message``) is parsed as JSON (a ```json fence allowed) and
checked (``check_verdict``) against ``schemas/judge-verdict-1.schema.json`` and a strict pydantic
model: exactly the task's criteria, integers 0..2; every score below 2 has a quote for its criterion;
every quote's ``file`` is a file of the evidence folder and its ``quote`` occurs in it verbatim
(whitespace runs normalised). A verdict failing a check is kept with ``status = "refused"`` and a
``reason`` naming the check; a session without a final message is ``no_verdict``.

The result is ``<attempt_dir>/judging/<judge_id>.json`` (``argusic.judgement/1``), written atomically,
loaded by ``argusic ingest`` into raw.judge_verdicts (``argusic.warehouse.load_judging``); on a cluster
it is also an object of the runs store (``argusic.judging.pipeline``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import requests
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from argusic.attempts.keys import KeyUnavailable, LiteLLMKeyBroker, attempt_key
from argusic.core.record import load_record_file
from argusic.core.settings import agents_image
from argusic.core.tasks import PACKAGE_DIR, Task, load_task, task_for
from argusic.external import claude_code, codex
from argusic.judging.double import SCRIPTED_HARNESSES, DoubleBroker, JudgeScriptError
from argusic.judging.evidence import MANIFEST, build_evidence_folder, evidence_sha256, read_manifest
from argusic.sandbox.containment import AGENT_GID, AGENT_HOME, AGENT_UID, locked_container_options

VERDICT_SCHEMA = "argusic.judge-verdict/1"
JUDGEMENT_SCHEMA = "argusic.judgement/1"
SCHEMA_FILE = PACKAGE_DIR / "schemas" / "judge-verdict-1.schema.json"
JUDGING_DIR = "judging"  # <attempt_dir>/judging/<judge_id>.json (not under out/, which the agent writes)
SESSION_FILE = "session.jsonl"
LAST_MESSAGE_FILE = "last_message.txt"
MAX_MESSAGE_BYTES = 64 * 1024
MAX_QUOTES = 20
MAX_QUOTE_CHARS = 500
MIN_QUOTE_CHARS = 8
MAX_SUMMARY_CHARS = 2000
MAX_SESSION_BYTES = 16 * 1024 * 1024
MAX_QUOTED_FILE_BYTES = 4 * 1024 * 1024
CONTAINER_LABEL = "argusic.judge"
MEMORY = "2g"
PIDS = 256
DEFAULT_TIMEOUT_SECONDS = 900
CONTAINER_MARGIN_SECONDS = 30

Status = Literal["valid", "refused", "no_verdict"]
CriterionId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]


class JudgeError(RuntimeError):
    """A judge could not be run at all (no key, no image, Docker unavailable); nothing was written."""


@dataclass(frozen=True)
class JudgeDriver:
    judge_id: str
    harness_name: Literal["claude-code", "codex"]
    model: str

    @property
    def module(self) -> Any:
        """The external driver of the harness (``agent_argv``/``build_command``/``build_env``/``collect``)."""
        return claude_code if self.harness_name == "claude-code" else codex


JUDGES: dict[str, JudgeDriver] = {
    "judge-claude": JudgeDriver("judge-claude", "claude-code", "claude-sonnet-4-5"),
    "judge-codex": JudgeDriver("judge-codex", "codex", "gpt-5-codex"),
    "judge-claude-2": JudgeDriver("judge-claude-2", "claude-code", "claude-opus-4-1"),
}


def judge_driver(judge_id: str) -> JudgeDriver:
    try:
        return JUDGES[judge_id]
    except KeyError:
        raise JudgeError(f"judge {judge_id!r}: unknown (known: {', '.join(JUDGES)})") from None


# --- the verdict ------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Quote(_Strict):
    criterion: CriterionId
    file: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    quote: Annotated[str, StringConstraints(min_length=MIN_QUOTE_CHARS, max_length=MAX_QUOTE_CHARS)]


class Verdict(_Strict):
    """``argusic.judge-verdict/1`` (the JSON Schema in schemas/judge-verdict-1.schema.json)."""

    schema_: Literal["argusic.judge-verdict/1"] = Field(alias="schema")
    scores: dict[CriterionId, Annotated[int, Field(ge=0, le=2)]] = Field(min_length=1, max_length=8)
    quotes: list[Quote] = Field(max_length=MAX_QUOTES)
    summary: Annotated[str, StringConstraints(max_length=MAX_SUMMARY_CHARS)]

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)


@dataclass(frozen=True)
class Checked:
    status: Status
    reason: str | None
    scores: dict[str, int]
    quotes: list[dict]
    summary: str


@functools.lru_cache(maxsize=1)
def _schema_validator():
    # deferred: jsonschema takes ~0.5 s to import and is needed only to check a document
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*?)\n?```\s*\Z", re.DOTALL)
_SPACES = re.compile(r"\s+")


def _strict_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def normalised(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _salvage(doc: Any) -> tuple[dict[str, int], list[dict], str]:
    """What of a refused verdict is kept as it is well-formed (for the person reading it later)."""
    if not isinstance(doc, dict):
        return {}, [], ""
    scores = doc.get("scores")
    kept_scores = (
        {k: v for k, v in scores.items() if isinstance(k, str) and type(v) is int and 0 <= v <= 2}
        if isinstance(scores, dict) and len(scores) <= 8
        else {}
    )
    quotes = []
    for q in doc.get("quotes", [])[:MAX_QUOTES] if isinstance(doc.get("quotes"), list) else []:
        with contextlib.suppress(ValidationError):
            quotes.append(Quote.model_validate(q).model_dump())
    summary = doc.get("summary") if isinstance(doc.get("summary"), str) else ""
    return kept_scores, quotes, summary[:MAX_SUMMARY_CHARS]


def listed_text(
    folder: Path, relative: str, listed: set[str], limit: int = MAX_QUOTED_FILE_BYTES
) -> str | None:
    """The text (its first ``limit`` bytes) of a file of a judges' folder named in its manifest, never
    through a link; None otherwise."""
    if relative not in listed:
        return None
    path = Path(folder) / relative
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit).decode("utf-8", errors="replace")


def is_verbatim(quote: str, text: str) -> bool:
    """Whether a judge's quote occurs in the text, runs of white space read as one space."""
    return normalised(quote) in normalised(text)


def unquoted(
    quotes: Sequence[Any], folder: Path, listed: set[str], what: str, limit: int = MAX_QUOTED_FILE_BYTES
) -> str | None:
    """Why the first of ``quotes`` (each with ``file`` and ``quote``) is not a verbatim quote of a
    listed file of the folder (``what`` names the folder in the reason); None when all are."""
    for n, quote in enumerate(quotes):
        content = listed_text(folder, quote.file, listed, limit)
        if content is None:
            return f"quotes.{n}.file: {quote.file[:200]!r} is not a file of the {what}"
        if not is_verbatim(quote.quote, content):
            return f"quotes.{n}.quote: not found verbatim in {quote.file[:200]}"
    return None


def parse_final_message(message: str) -> Any:
    """A judge's final message as JSON (one fenced block or the bare text; NaN and Infinity refused);
    ValueError otherwise."""
    text = message.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group("body")
    return json.loads(text, parse_constant=_strict_constant)


def check_verdict(message: str | None, criteria: Sequence[str], evidence_dir: Path) -> Checked:
    """The judge's final message checked; see the module's docs for every check."""
    if message is None or not message.strip():
        return Checked("no_verdict", "the session has no final message", {}, [], "")
    if len(message.encode("utf-8")) > MAX_MESSAGE_BYTES:
        return Checked("refused", f"message: over {MAX_MESSAGE_BYTES} bytes", {}, [], "")
    try:
        doc = parse_final_message(message)
    except ValueError as err:
        return Checked("refused", f"message: not a JSON object ({err})"[:300], {}, [], "")
    scores, quotes, summary = _salvage(doc)

    def refused(reason: str) -> Checked:
        return Checked("refused", reason[:1000], scores, quotes, summary)

    errors = sorted(_schema_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "(verdict)"
        return refused(f"schema: {where}: {first.message}")
    try:
        verdict = Verdict.model_validate(doc)
    except ValidationError as err:
        e = err.errors()[0]
        return refused(f"schema: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}")
    expected = list(criteria)
    if set(verdict.scores) != set(expected):
        missing = sorted(set(expected) - set(verdict.scores))
        extra = sorted(set(verdict.scores) - set(expected))
        return refused(f"scores: not the task's criteria (missing {missing}, not judged here {extra})")
    for quote in verdict.quotes:
        if quote.criterion not in expected:
            return refused(f"quotes: criterion {quote.criterion!r} is not a criterion of the task")
    for criterion in expected:
        if verdict.scores[criterion] < 2 and not any(q.criterion == criterion for q in verdict.quotes):
            return refused(f"quotes: {criterion} scored {verdict.scores[criterion]} without a quote")
    listed = {f["path"] for f in read_manifest(evidence_dir)["files"]}
    if reason := unquoted(verdict.quotes, evidence_dir, listed, "evidence folder"):
        return refused(reason)
    return Checked(
        "valid", None, dict(verdict.scores), [q.model_dump() for q in verdict.quotes], verdict.summary
    )


# --- the session's final message ----------------------------------------------------------------------


def _session_lines(path: Path) -> list[dict]:
    """The JSON objects of a JSONL session (capped; a line that is not JSON, e.g. cut mid-line, skipped)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SESSION_BYTES)
    lines = []
    for raw in data.decode("utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            line = json.loads(raw)
            if isinstance(line, dict):
                lines.append(line)
    return lines


def final_message(harness_name: str, out_dir: Path) -> str | None:
    """The judge's final message in ``out_dir`` (see the module's docs), or None."""
    out_dir = Path(out_dir)
    lines = _session_lines(out_dir / SESSION_FILE)
    if harness_name == "claude-code":
        results = [line for line in lines if line.get("type") == "result"]
        result = results[-1].get("result") if results else None
        return result if isinstance(result, str) and result.strip() else None
    last = out_dir / LAST_MESSAGE_FILE
    if last.is_file() and not last.is_symlink():
        with last.open("rb") as handle:
            text = handle.read(MAX_MESSAGE_BYTES + 1).decode("utf-8", errors="replace")
        if text.strip():
            return text
    for line in reversed(lines):
        item = line.get("item") if line.get("type") == "item.completed" else None
        if (
            isinstance(item, dict)
            and item.get("type") == "agent_message"
            and isinstance(item.get("text"), str)
        ):
            return item["text"] or None
    return None


def read_verdict(judge_id: str, out_dir: Path, evidence_dir: Path, criteria: Sequence[str]) -> Checked:
    """The verdict of the judge session in ``out_dir`` on the evidence folder, checked."""
    return check_verdict(final_message(judge_driver(judge_id).harness_name, out_dir), criteria, evidence_dir)


# --- the container ------------------------------------------------------------------------------------

_REPLAY_SCRIPT = """
import json, sys
prompt = sys.stdin.read()
if not prompt.strip():
    sys.exit("no judge prompt on stdin")
last = None
with open("/judge/replay.jsonl", "rb") as src, open("/out/session.jsonl", "wb") as dst:
    for raw in src:
        dst.write(raw)
        sys.stdout.buffer.write(raw)
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        item = line.get("item") if isinstance(line, dict) else None
        done = isinstance(item, dict) and line.get("type") == "item.completed"
        if done and item.get("type") == "agent_message":
            last = item.get("text")
if sys.argv[1] == "codex" and isinstance(last, str):
    with open("/out/last_message.txt", "w", encoding="utf-8") as out:
        out.write(last)
"""


JUDGE_CONFIG_DIR = "/tmp/argusic-judge-config"  # the CLI's config, fresh per run, never under /out


def _broker(judge_id: str, label: str) -> Any:
    """The routing layer's key broker, or JudgeError: a real judge never runs on a shared key."""
    try:
        return LiteLLMKeyBroker.from_env()
    except KeyUnavailable as err:
        raise JudgeError(
            f"judge {judge_id}: no model key for {label}: {err}; a real judge needs the routing "
            "gateway (scripts/start_litellm.sh); use --replay-dir to run recorded sessions"
        ) from None


def container_plan(
    driver: JudgeDriver, key_env: Mapping[str, str] | None, timeout_seconds: int
) -> tuple[list[str], dict[str, str], bool]:
    """(command, environment, networking on) of a judge container. ``key_env`` None: a replay (no CLI,
    networking off); else the key variables of a per-run key for the harness's external driver."""
    bound = ["timeout", "--kill-after=5", str(int(timeout_seconds))]
    if key_env is None:
        script = f"python3 -I -c {shlex.quote(_REPLAY_SCRIPT)} {shlex.quote(driver.harness_name)}"
        command = ["bash", "-c", f"{shlex.join(bound)} {script} < /judge/prompt.md"]
        return command, {"HOME": AGENT_HOME, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}, False
    module = driver.module
    key_env = {k: v for k, v in key_env.items() if v}
    base_url = key_env.get(module.BASE_URL_ENV)
    if driver.harness_name == "claude-code" and base_url and base_url.rstrip("/").endswith("/v1"):
        # the gateway's OpenAI-style URL ends in /v1; Anthropic clients add /v1/messages themselves
        # (as argusic.attempts.agents does for an attempt)
        key_env[module.BASE_URL_ENV] = base_url.rstrip("/")[: -len("/v1")]
    env = module.build_env(key_env, JUDGE_CONFIG_DIR)
    if driver.harness_name == "codex":
        command = module.build_command(
            "/evidence",
            "/out",
            "/judge/prompt.md",
            driver.model,
            gateway_url=key_env.get(module.BASE_URL_ENV),
        )
    else:
        command = module.build_command("/evidence", "/out", "/judge/prompt.md", driver.model)
    return bound + command, env, True


def run_judge(
    judge_id: str,
    evidence_dir: Path,
    out_dir: Path,
    *,
    replay: Path | None = None,
    task: Task | None = None,
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
    broker: Any = None,
) -> Path:
    """Run one judge over the evidence folder in a locked-down container; returns ``out_dir`` (holding
    ``session.jsonl`` and, for Codex, ``last_message.txt``). ``replay``: a recorded session, teed by
    the container with networking off instead of running a CLI. Without it the judge's CLI runs on a
    per-run key (``argusic.attempts.keys.attempt_key``: created for this run, deleted however it ends) from
    ``broker`` (the routing layer's by default; none configured: JudgeError before anything starts).
    A broker with a ``network`` once its key is made (``argusic.judging.double.DoubleBroker``: the
    model double's internal network) puts the judge's container on that network alone."""
    import docker  # deferred: the Docker SDK loads only when a judge container runs

    driver = judge_driver(judge_id)
    evidence_dir, out_dir = Path(evidence_dir).resolve(), Path(out_dir)
    manifest = read_manifest(evidence_dir)
    task = task or load_task(manifest["task_id"])
    label = f"judge.{judge_id}.{evidence_sha256(evidence_dir)[:16]}"
    if replay is None and broker is None:
        broker = _broker(judge_id, label)
    replay_path = Path(replay) if replay is not None else None
    if replay_path is not None and (replay_path.is_symlink() or not replay_path.is_file()):
        raise JudgeError(f"{replay_path}: not a regular file (recorded sessions are read without links)")
    if replay_path is not None and replay_path.stat().st_size > MAX_SESSION_BYTES:
        raise JudgeError(f"{replay_path}: over {MAX_SESSION_BYTES} bytes")
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in (SESSION_FILE, LAST_MESSAGE_FILE):
        (out_dir / stale).unlink(missing_ok=True)
    if os.geteuid() == 0:
        os.chown(out_dir, AGENT_UID, AGENT_GID)
    else:
        out_dir.chmod(0o777)  # the container's unprivileged user writes here
    stage = Path(tempfile.mkdtemp(prefix="argusic-judge-"))
    keys = contextlib.ExitStack()
    try:
        stage.chmod(0o755)
        (stage / "prompt.md").write_text(task.judge_prompt())
        if replay_path is not None:
            shutil.copyfile(replay_path, stage / "replay.jsonl")
        for name in ("prompt.md", "replay.jsonl"):
            if (stage / name).exists():
                (stage / name).chmod(0o644)
        key_env = None
        if replay_path is None:
            try:
                key = keys.enter_context(attempt_key(broker, label))
            except KeyUnavailable as err:
                raise JudgeError(f"judge {judge_id}: no per-run key: {err}") from None
            key_env = key.container_env(driver.module.KEY_ENV, driver.module.BASE_URL_ENV)
        network = getattr(broker, "network", None) if replay_path is None else None
        command, environment, networking = container_plan(driver, key_env, timeout_seconds)
        try:
            client = docker.from_env()
            client.images.get(agents_image())
        except docker.errors.ImageNotFound:
            raise JudgeError(f"agents image {agents_image()} not found: build it first") from None
        except docker.errors.DockerException as err:
            raise JudgeError(f"docker: {err}") from None
        container = None
        try:
            options = locked_container_options(
                tmpfs={
                    "/tmp": "rw,noexec,nosuid,nodev,size=256m",
                    AGENT_HOME: f"rw,noexec,nosuid,nodev,size=64m,uid={AGENT_UID},gid={AGENT_GID}",
                },
                volumes={
                    str(evidence_dir): {"bind": "/evidence", "mode": "ro"},
                    str(stage): {"bind": "/judge", "mode": "ro"},
                    str(out_dir.resolve()): {"bind": "/out", "mode": "rw"},
                },
                working_dir="/evidence",
                environment=environment,
                memory=MEMORY,
                pids=PIDS,
                cpus=2.0,
            )
            if networking:
                # a real judge needs the network to reach the model gateway (the default network:
                # not yet limited to the gateway, docs/judging.md); a replay keeps none at all
                del options["network_disabled"], options["network_mode"]
                if network:  # the model double's internal network: nothing else is reachable
                    options["network"] = network
            container = client.containers.run(
                agents_image(),
                command,
                detach=True,
                name=f"argusic-judge-{secrets.token_hex(6)}",
                labels={CONTAINER_LABEL: judge_id},
                **options,
            )
            try:
                status = container.wait(timeout=timeout_seconds + CONTAINER_MARGIN_SECONDS)
            except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
                with contextlib.suppress(docker.errors.DockerException):
                    container.kill()
                status = {"StatusCode": 137}
            code = status.get("StatusCode")
            # A CLI that ended badly (turns, budget) may still have left its session: its verdict is
            # then read and checked like any other (no_verdict when it has no final message). A
            # replay that failed, or a run that left no session, is an error of the run itself.
            if code != 0 and (replay_path is not None or not (out_dir / SESSION_FILE).is_file()):
                errors = container.logs(stdout=False, stderr=True)[-2000:].decode(errors="replace").strip()
                raise JudgeError(f"judge {judge_id}: container exited {code}: {errors}")
        except docker.errors.DockerException as err:
            raise JudgeError(f"docker: {err}") from None
        finally:
            if container is not None:
                with contextlib.suppress(docker.errors.DockerException):
                    container.remove(force=True)
    finally:
        keys.close()  # the per-run key is deleted however the run ended
        shutil.rmtree(stage, ignore_errors=True)
    return out_dir


# --- the judgement document ------------------------------------------------------------------------------


def _sha256_of(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def judgement(
    record: Any, task: Task, driver: JudgeDriver, evidence_dir: Path, out_dir: Path, checked: Checked,
    *, replayed: bool, model: str | None = None,
) -> dict:  # fmt: skip
    """The ``argusic.judgement/1`` document of one judge on one attempt (``model``: what answered when
    it is not the judge's own model, e.g. ``model-double/<script sha256>`` for a scripted judge)."""
    return {
        "schema": JUDGEMENT_SCHEMA,
        "attempt_id": record.attempt_id,
        "cycle_id": record.cycle_id,
        "task_id": task.task_id,
        "task_revision": task.revision,
        "judge_id": driver.judge_id,
        "harness": driver.harness_name,
        "model": model or driver.model,
        "evidence_sha256": evidence_sha256(evidence_dir),
        "session_sha256": _sha256_of(Path(out_dir) / SESSION_FILE),
        "status": checked.status,
        "reason": checked.reason,
        "scores": checked.scores,
        "quotes": checked.quotes,
        "summary": checked.summary,
        "replayed": replayed,
    }


def write_judgement(attempt_dir: Path, doc: dict) -> Path:
    """``<attempt_dir>/judging/<judge_id>.json``, written atomically."""
    folder = Path(attempt_dir) / JUDGING_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{doc['judge_id']}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def judge_attempt(
    attempt_dir: Path,
    judge_ids: Sequence[str],
    replay: Mapping[str, Path] | None = None,
    scripts: Mapping[str, Path] | None = None,
) -> list[Path]:
    """Build the attempt's blinded evidence folder (``<attempt_dir>/judging/evidence``, rebuilt) and run
    every judge on it (``replay[judge_id]``: its recorded session, no CLI runs; ``scripts[judge_id]``:
    its judgement script, the real CLI against the model double, ``argusic.judging.double``; else the
    real CLI through the routing gateway); the judgement files written."""
    attempt_dir = Path(attempt_dir)
    record = load_record_file(attempt_dir / "run_record.json")
    task = task_for(record.purpose, record.project_id)
    brokers: dict[str, Any] = {}
    for judge_id in judge_ids:  # every judge checked before anything is built or started
        driver = judge_driver(judge_id)
        if replay is not None and judge_id in replay:
            continue
        if scripts is not None and judge_id in scripts:
            if driver.harness_name not in SCRIPTED_HARNESSES:
                raise JudgeError(
                    f"judge {judge_id}: a judgement script needs a model double that speaks "
                    f"{driver.harness_name}'s API (the double speaks: {', '.join(SCRIPTED_HARNESSES)})"
                )
            try:
                brokers[judge_id] = DoubleBroker(scripts[judge_id])
            except JudgeScriptError as err:
                raise JudgeError(f"judge {judge_id}: {err}") from None
            continue
        brokers[judge_id] = _broker(judge_id, record.attempt_id)
    evidence_dir = attempt_dir / JUDGING_DIR / "evidence"
    if evidence_dir.is_symlink():
        raise JudgeError(f"{evidence_dir}: is a link")
    shutil.rmtree(evidence_dir, ignore_errors=True)
    build_evidence_folder(attempt_dir, evidence_dir)
    assert (evidence_dir / MANIFEST).is_file()
    written = []
    for judge_id in judge_ids:
        driver = judge_driver(judge_id)
        out_dir = attempt_dir / JUDGING_DIR / "sessions" / judge_id
        recorded = (replay or {}).get(judge_id)
        broker = brokers.get(judge_id)
        run_judge(judge_id, evidence_dir, out_dir, replay=recorded, task=task, broker=broker)
        checked = read_verdict(judge_id, out_dir, evidence_dir, task.criteria)
        doc = judgement(
            record, task, driver, evidence_dir, out_dir, checked, replayed=recorded is not None,
            model=broker.model if isinstance(broker, DoubleBroker) else None,
        )  # fmt: skip
        written.append(write_judgement(attempt_dir, doc))
    return written


__all__ = [
    "JUDGEMENT_SCHEMA",
    "JUDGES",
    "VERDICT_SCHEMA",
    "Checked",
    "JudgeDriver",
    "JudgeError",
    "Verdict",
    "check_verdict",
    "final_message",
    "judge_attempt",
    "judgement",
    "read_verdict",
    "run_judge",
    "write_judgement",
]
