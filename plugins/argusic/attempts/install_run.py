"""One attempt as a transaction: execute → land evidence (fingerprinted, write-once) → run record.

Per-attempt folder `runs/<cycle_id>/<attempt_id>/` holds the landed harness output (`out/`: what the
container left in /out, regular files only, capped, the attempt's key redacted; ``argusic.sandbox.landing``;
with `out/artifacts/`: the project folder's files matching the task's artifact globs, hints' input,
never evidence) and the run record (`run_record.json`). An attempt whose record already exists is
not run again (resumable, keyed by attempt_id), so retrying a task never adds a second measurement.
"""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path

from argusic.attempts.agents import driver_for, side_call_env
from argusic.attempts.common import (
    CHANGES_PURPOSES,
    EVIDENCE_FILES,
    _base_doc,
    _broker_for,
    _model_answered,
    _read_report,
    artifact_globs,
    cli_error,
    final_output_part,
    key_spent,
    presentation_secrets,
    spend_unknown,
    title_recording,
    tool_calls_part,
    with_presentation,
)
from argusic.attempts.environment import attempt_display, attempt_environment, check_pinned_image, ensure_pin
from argusic.attempts.identity import IDENTITY_WORDS, agent_pins, identity_name, recording_title
from argusic.attempts.keys import IssuedKey, KeyBroker, key_for_attempt
from argusic.attempts.live_log import LiveLog
from argusic.attempts.sealing import SealCheck, check_seal, observe_session
from argusic.attempts.video import display_video_evidence
from argusic.core.evidence import EvidenceStore
from argusic.core.layout import attempt_dir
from argusic.core.record import (
    Environment,
    RecordError,
    RecordFile,
    RunRecord,
    bound_texts,
    load_record_file,
    parse_record,
)
from argusic.core.safe_io import write_atomic
from argusic.core.settings import orchestrator_config
from argusic.core.spec import AttemptSpec
from argusic.external import SESSION_LOG, claude_code, codex
from argusic.external.collect import record_parts
from argusic.harness.readme_runner import HARNESS_VERSION
from argusic.sandbox.executor import DaemonUnreachable, get_executor
from argusic.sandbox.launch import ExecutionResult, Executor
from argusic.sources.mirror import attempt_source

log = logging.getLogger(__name__)


def build_record(
    spec: AttemptSpec,
    result: ExecutionResult,
    out_dir: Path,
    store: EvidenceStore,
    key_record: dict | None = None,
    environment: Environment | None = None,
    agent_name: str = IDENTITY_WORDS,
) -> RunRecord:
    # First, before anything reads or stores /out: is it what the harness sealed? (a replaced
    # reference report is put back here, the landed one kept as report.landed.json)
    sealed = check_seal(result, out_dir)
    if sealed.seal["status"] == "altered":
        log.warning("%s: the landed output differs from the harness's seal: %s", spec.attempt_id,
                    ", ".join(sealed.seal["altered"]))  # fmt: skip
    # Titled outside the container, under the agent's neutral identity (never its maker's name).
    title = recording_title(agent_name, spec.project_id, spec.attempt_no, spec.rerun_no)
    title_recording(out_dir / EVIDENCE_FILES["recording"], title)
    evidence: dict[str, dict | None] = {}
    for name, filename in EVIDENCE_FILES.items():
        path = out_dir / filename
        evidence[name] = store.put_file(path).as_ref() if path.exists() else None
    evidence.update(display_video_evidence(out_dir, store))  # the display's video, when it had one

    driver = driver_for(spec.agent_id)
    if driver.external and (out_dir / SESSION_LOG).exists():
        # the raw session the record's tool calls, final output and observation come from,
        # fingerprinted like the log (seed 002): a reader can check every one of them against it
        evidence["session_log"] = store.put_file(out_dir / SESSION_LOG).as_ref()
    if driver.external:
        return _build_external_record(
            spec, result, out_dir, evidence, driver, key_record, environment, sealed
        )

    report, report_problem = _read_report(out_dir / EVIDENCE_FILES["report"])
    if result.stopped is not None:  # ended from outside: on record with its reason, not scored
        end_reason, report = result.stopped, None
    elif result.timed_out:
        end_reason = "timeout"
        report = None  # the agent did not finish: a timeout scores 0 whatever was written
    elif result.error is not None or result.exit_code != 0:
        end_reason = "harness_error"
    else:
        end_reason = "completed"

    invalid_reason, container_fault = _fault_of(result, end_reason, report, report_problem, evidence)
    invalid_reason, container_fault = _with_seal(invalid_reason, container_fault, sealed)

    doc = _base_doc(spec, result, evidence, environment) | {
        "end_reason": end_reason,
        "invalid_reason": invalid_reason,
        "container_fault": container_fault,
        "observed": sealed.observed,
        "seal": sealed.seal,
        "report": report,
        "usage": {
            "input_tokens": {"value": None, "status": "unavailable"},
            "output_tokens": {"value": None, "status": "unavailable"},
            "model_calls": {"value": 0, "status": "measured"},  # a deterministic harness calls no model
            "cost_usd": {"value": 0, "status": "measured"},
            "duration_seconds": {
                "value": round((result.ended_at - result.started_at).total_seconds(), 3),
                "status": "measured",
            },
        },
        "harness": {"name": driver.harness_name, "version": HARNESS_VERSION},
        "model": {"requested": None, "responded": None},
        "key": key_record or {"kind": driver.key_kind, "limit_usd": None},
    }
    return parse_record(bound_texts(doc), source=spec.attempt_id)


def _with_seal(
    invalid_reason: str | None, container_fault: str | None, sealed: SealCheck
) -> tuple[str | None, str | None]:
    """The seal's verdict joined to the others: a lost seal is ours (invalid); evidence changed after
    the harness wrote it is the container's (a measured failure), unless a reason already stands."""
    if invalid_reason is not None:
        return invalid_reason, None
    if sealed.invalid is not None:
        return sealed.invalid, None
    return None, container_fault or sealed.fault


def _missing_evidence(evidence: dict) -> str | None:
    missing = [n for n in ("log", "recording") if evidence[n] is None]
    return f"incomplete evidence: no {' and no '.join(missing)}" if missing else None


def _fault_of(
    result: ExecutionResult, end_reason: str, report: dict | None, report_problem: str | None, evidence: dict
) -> tuple[str | None, str | None]:
    """(invalid_reason, container_fault) of the reference harness's attempt: whose failure cut it.

    Ours (invalid, rerun): the executor's error -- the daemon, the container's start, the fetch of
    the pinned commit. The container's (a measured failure, 0 points, never rerun; METHODOLOGY.md §7's
    "cut by the pipeline's own tooling" is the invalid case, and everything below happens inside the
    container, within reach of the agent and the project): /out refused at landing, the harness
    exiting non-zero (killed from inside), a report missing or unreadable, a log or recording missing.
    A rerun would hand the code under test a veto over its own result."""
    if result.stopped is not None:  # an operator's cancel or emergency stop: ours, whatever the rest
        return result.stop_reason or result.stopped, None
    if result.error is not None:
        return f"executor error: {result.error}", None
    if result.refused is not None:
        fault = result.refused
    elif end_reason == "harness_error":
        fault = f"harness exited with code {result.exit_code}"
    elif end_reason == "completed" and report_problem:
        fault = report_problem
    elif end_reason == "completed" and report is None:
        fault = "report missing: the harness ended without writing report.json"
    else:
        fault = None
    return None, fault or _missing_evidence(evidence)


def external_outcome(
    result: ExecutionResult, run, evidence: dict, key: dict | None = None
) -> tuple[str, str | None, str | None, bool]:
    """(end_reason, invalid_reason, container_fault, keep_report) of an external harness's attempt.

    Decided (METHODOLOGY.md §7: a complete attempt is one the agent worked until it stopped or hit
    the time limit; one cut by the pipeline's own tooling is invalid, kept with its reason). Ours
    (invalid, rerun):

    - executor error (daemon, fetch): harness_error;
    - the session log never shows the model answering (gateway or key unusable, network down, CLI
      failed to start): the agent never got to work, whatever the ending (harness_error, or timeout
      when it was still retrying at the budget);
    - the CLI ended in error (its own error event: the model API or the gateway failed mid-run),
      unless the gateway says the attempt's key had reached its spend limit (below).

    The container's (a measured failure, 0 points, never rerun: all of it happens inside the
    container, where a project or the agent could cause it to veto its result):

    - the session log ends without the CLI's closing event (the CLI killed or its log cut), or the CLI
      exited non-zero without an error event: harness_error;
    - the CLI closed its session normally but its report is missing or unreadable: completed;
    - a log or recording missing, or /out refused at landing;
    - the CLI ended in error after the gateway counted the key's spend up to its limit: the agent's
      own model use spent it, inside the test machine (v1.6). Were it ours, an agent (or project code
      reading the key from its environment) could throw away a run it was losing by burning the key.

    Time limit hit after the agent worked: timeout, valid, no report (a timeout scores 0).
    """
    if result.stopped is not None:  # an operator's cancel or emergency stop: ours, not scored
        return result.stopped, result.stop_reason or result.stopped, None, False
    if result.error is not None:
        return "harness_error", f"executor error: {result.error}", None, False
    if not _model_answered(run):
        detail = run.end_detail or "no session events"
        why = f"the agent never reached its model ({run.end_state}: {detail})"
        return ("timeout" if result.timed_out else "harness_error"), why, None, False
    invalid = fault = None
    if result.timed_out:
        end_reason = "timeout"
    elif run.end_state == "error" and (spent := key_spent(key, run.end_detail)):
        end_reason, fault = "harness_error", f"{spent}; {cli_error(run.end_detail)}"
    elif run.end_state == "error":
        end_reason, invalid = "harness_error", cli_error(run.end_detail) + spend_unknown(key)
    elif run.end_state == "truncated":
        end_reason = "harness_error"
        fault = (
            f"session log ends without the CLI's closing event ({run.end_detail}); "
            f"exit code {result.exit_code}"
        )
    elif result.exit_code != 0:
        end_reason, fault = "harness_error", f"agent CLI exited with code {result.exit_code}"
    else:
        end_reason, fault = "completed", run.report_problem
    if invalid is None:
        fault = result.refused or fault or _missing_evidence(evidence)
    keep_report = end_reason == "completed" and run.report is not None and fault is None
    return end_reason, invalid, fault, keep_report


def agent_launch(
    harness: str, model: str | None, max_retries: int | None = None, gateway: bool = False
) -> tuple[list[str], dict[str, str]]:
    """The agent's argument vector and environment (no key) as ``argusic.attempts.agents`` launches
    `harness` for an install-and-run attempt: made by the driver's own functions, so the settings read
    from them are what the CLI was handed."""
    if harness == "codex":
        argv = codex.agent_argv(
            "/project", model or "", "/out", gateway_url="http://gateway" if gateway else None,
            max_retries=max_retries,
        )  # fmt: skip
        return argv, {}
    if harness != claude_code.HARNESS_NAME:
        return [], {}
    env = claude_code.build_env({claude_code.KEY_ENV: "unused"}, max_retries=max_retries)
    env |= side_call_env(harness, model)
    return claude_code.agent_argv(model or ""), {
        k: v for k, v in env.items() if k not in claude_code.ALLOWED_KEY_ENV
    }


def _build_external_record(
    spec: AttemptSpec,
    result: ExecutionResult,
    out_dir: Path,
    evidence: dict,
    driver,
    key_record: dict | None,
    environment: Environment | None = None,
    sealed: SealCheck | None = None,
) -> RunRecord:
    sealed = sealed or SealCheck({"status": "no_channel"})
    run = driver.collect(out_dir)
    outcome = external_outcome(result, run, evidence, key_record)
    end_reason, invalid_reason, container_fault, keep_report = outcome
    invalid_reason, container_fault = _with_seal(invalid_reason, container_fault, sealed)
    session_intact = "session.jsonl" not in sealed.seal.get("altered", [])
    key = key_record or {"kind": driver.key_kind, "limit_usd": None}
    # the agent's command and environment (no key) as agents._ExternalLaunch made them: the settings
    agent_argv, agent_env = agent_launch(
        driver.harness_name, driver.model, driver.max_retries, gateway=key["kind"] == "per_run"
    )
    parts = record_parts(
        run,
        key_kind=key["kind"],
        key_limit_usd=key["limit_usd"],
        harness_version=run.harness_version or driver.harness_version(),
        wall_seconds=(result.ended_at - result.started_at).total_seconds(),
        argv=agent_argv,
        env=agent_env,
    )
    doc = _base_doc(spec, result, evidence, environment) | {
        "end_reason": end_reason,
        "invalid_reason": invalid_reason,
        "container_fault": container_fault,
        "report": parts["report"] if keep_report else None,
        "observed": observe_session(run, parts["report"], session_intact),
        "seal": sealed.seal,
        "usage": parts["usage"],
        "harness": parts["harness"],
        "model": parts["model"],
        "key": key,
        "tool_calls": tool_calls_part(run),
        "final_output": final_output_part(run),
    }
    log.info(
        "%s: %s session %s (%s), %d tool call(s)",
        spec.attempt_id, driver.harness_name, run.end_state, run.end_detail or "-", len(run.tool_calls),
    )  # fmt: skip
    return parse_record(bound_texts(doc), source=spec.attempt_id)


def run_install_attempt(
    spec: AttemptSpec,
    executor: Executor | None = None,
    store: EvidenceStore | None = None,
    base_dir: Path | None = None,
    broker: KeyBroker | None = None,
    live_log: bool = False,
) -> RecordFile:
    """Run one install-and-run attempt (purpose board or verdict; attempts.run.measure_attempt
    dispatches) unless its record exists already, and return its run record, parsed, with its path."""
    if driver_for(spec.agent_id).harness_name == "repair-demo-stand-in":
        raise ValueError(f"{spec.agent_id} is a repair demo stand-in: it makes repair attempts only")
    folder = attempt_dir(spec, base_dir)
    record_path = folder / "run_record.json"
    if record_path.exists():
        try:
            return RecordFile(record_path, load_record_file(record_path))
        except RecordError:
            record_path.unlink()  # a damaged record from a crashed try: measure again
    # Same conditions for the whole cycle: refused here (EnvironmentRefused), before anything starts or
    # is written, when the harness, instructions or limits differ from the cycle's pin; the attempt
    # runs in the pinned image, by digest.
    artifacts = artifact_globs(spec)  # a broken task definition is refused before anything starts
    # The executor the configuration names (docker by default); local only when named, for a demo.
    executor = executor or get_executor(demo=spec.demo)
    role = "agents" if driver_for(spec.agent_id).external else "runner"
    pin = ensure_pin(
        spec.cycle_id, executor, [role], spec.demo, spec.budget_scale, base=base_dir,
        agents=agent_pins([spec.agent_id]),
    )  # fmt: skip
    daemon_error = None
    try:
        pinned_image = check_pinned_image(pin, role) if pin.executor == "docker" else None
    except DaemonUnreachable as err:  # our side failed: recorded invalid ("executor error"), rerun
        pinned_image, daemon_error = None, str(err)
    # The local bare repository the container fetches the pinned commit from: the host's mirror of
    # a remote URL, or the local repository. SourceUnavailable: the attempt does not start (retried).
    repo_path = attempt_source(spec.repo_url, spec.commit)
    out_dir = folder / "out"
    if out_dir.exists():
        shutil.rmtree(out_dir)  # partial output of a crashed try never mixes with a new one
    folder.mkdir(parents=True, exist_ok=True)
    store = store or EvidenceStore()
    if daemon_error is not None:
        at = datetime.now(UTC)
        result, key_record = ExecutionResult(executor.name, at, at, None, False, daemon_error), None
        key = None
    else:
        result, key = _execute(spec, executor, repo_path, out_dir, artifacts, pinned_image, broker, live_log)
        key_record = key.record()  # after the key's deletion: with the spend the gateway counted
    environment = attempt_environment(pin, role, spec.tier, attempt_display(pin, out_dir))
    record = with_presentation(
        build_record(
            spec, result, out_dir, store, key_record, environment, identity_name(pin, spec.agent_id)
        ),
        store,
        key,
    )
    write_atomic(record_path, record.to_json() + "\n")
    return RecordFile(record_path, record)


def _execute(
    spec: AttemptSpec,
    executor: Executor,
    repo_path: Path,
    out_dir: Path,
    artifacts: tuple[str, ...],
    pinned_image: str | None,
    broker: KeyBroker | None,
    live_log: bool,
) -> tuple[ExecutionResult, IssuedKey]:
    """Run the attempt under a key made for it alone: (what the executor saw, the key, deleted)."""
    driver = driver_for(spec.agent_id)
    budget = orchestrator_config().budget_seconds(spec.tier)
    effective = max(1.0, budget * spec.budget_scale) if spec.demo else float(budget)
    with key_for_attempt(
        driver.key_kind,
        spec.attempt_id,
        broker=_broker_for(driver.key_kind, broker),
        shared_env_var=driver.shared_env_var,
        ttl_seconds=int(effective) + 600,  # the gateway expires it even if every deletion path failed
    ) as key:
        key_env = key.container_env(driver.key_env_var, driver.base_url_env_var)
        run_kwargs: dict = {}
        # Nothing the container is handed names the agent, project, attempt or rerun: the recording
        # gets its title on the host once landed (title_recording).
        harness_args = list(driver.harness_args)
        if driver.external:  # the key goes through the driver's own environment (build_env)
            run_kwargs = {"launch": driver.launch(key_env)}
            key_env = {}
        if pinned_image is not None:
            run_kwargs["image"] = pinned_image
        if live_log:
            log.info(
                "%s: running (budget %.0f s); its log, masked, follows as it grows", spec.label, effective
            )
            shown = LiveLog(
                redactions=key.redactions(), secrets=presentation_secrets(key), budget_seconds=effective
            )
            run_kwargs["watch"] = shown.watch
        # The key's value is replaced in every file while the output is landed (streaming); a
        # cancelled or crashed attempt lands nothing, and its raw output area is deleted unread.
        result = executor.run(
            attempt_id=spec.attempt_id,
            repo_path=repo_path,
            commit=spec.commit,
            harness_args=harness_args,
            out_dir=out_dir,
            budget_seconds=effective,
            env=key_env,
            redactions=key.redactions(),
            artifacts=artifacts,
            changes=spec.purpose in CHANGES_PURPOSES,
            **run_kwargs,
        )
        # the key object outlives its deletion at the gateway: its value stays a known value of the
        # masker of the served copies (with_presentation), which run after the attempt
        return result, key
