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
from pathlib import Path

from argusic.attempts.agents import driver_for
from argusic.attempts.common import (
    CHANGES_PURPOSES,
    EVIDENCE_FILES,
    _base_doc,
    _broker_for,
    _model_answered,
    _read_report,
    artifact_globs,
    presentation_secrets,
    with_presentation,
)
from argusic.attempts.environment import attempt_display, attempt_environment, check_pinned_image, ensure_pin
from argusic.attempts.keys import KeyBroker, key_for_attempt
from argusic.attempts.live_log import LiveLog
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
from argusic.external.collect import record_parts
from argusic.harness.readme_runner import HARNESS_VERSION
from argusic.sandbox.executor import get_executor
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
) -> RunRecord:
    evidence: dict[str, dict | None] = {}
    for name, filename in EVIDENCE_FILES.items():
        path = out_dir / filename
        evidence[name] = store.put_file(path).as_ref() if path.exists() else None

    driver = driver_for(spec.agent_id)
    if driver.external:
        return _build_external_record(spec, result, out_dir, evidence, driver, key_record, environment)

    report, report_problem = _read_report(out_dir / EVIDENCE_FILES["report"])
    if result.timed_out:
        end_reason = "timeout"
        report = None  # the agent did not finish: a timeout scores 0 whatever was written
    elif result.error is not None or result.exit_code != 0:
        end_reason = "harness_error"
    else:
        end_reason = "completed"

    invalid_reason = None
    if result.error is not None:
        invalid_reason = f"executor error: {result.error}"
    elif result.refused is not None:
        invalid_reason = result.refused
    elif end_reason == "harness_error":
        invalid_reason = f"harness exited with code {result.exit_code}"
    elif end_reason == "completed" and report_problem:
        invalid_reason = report_problem
    elif end_reason == "completed" and report is None:
        invalid_reason = "report missing: the harness ended without writing report.json"
    if invalid_reason is None and (evidence["log"] is None or evidence["recording"] is None):
        missing = [n for n in ("log", "recording") if evidence[n] is None]
        invalid_reason = f"incomplete evidence: no {' and no '.join(missing)}"

    doc = _base_doc(spec, result, evidence, environment) | {
        "end_reason": end_reason,
        "invalid_reason": invalid_reason,
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


def external_outcome(result: ExecutionResult, run, evidence: dict) -> tuple[str, str | None, bool]:
    """(end_reason, invalid_reason, keep_report) of an external harness's attempt.

    Decided (METHODOLOGY.md §7: a complete attempt is one the agent worked until it stopped or hit
    the time limit; one cut by the pipeline's own tooling is invalid, kept with its reason):

    - executor error (daemon, fetch): harness_error, invalid;
    - the session log never shows the model answering (gateway or key unusable, network down, CLI
      failed to start): the agent never got to work, a failure of our tooling: invalid, whatever the
      ending (harness_error, or timeout when it was still retrying at the budget);
    - time limit hit after the agent worked: timeout, valid, no report (a timeout scores 0);
    - the CLI ended in error or its log ends without the CLI's closing event (API failure mid-run,
      a crash): harness_error, invalid (the harness, CLI included, is our measuring tool);
    - the CLI closed its session normally: completed. Its report must be readable: a missing or
      unreadable report is "the harness could not read the agent's report", invalid and rerun, even
      when the agent stopped of its own accord;
    - a log or recording missing: invalid (incomplete evidence).
    """
    if result.error is not None:
        return "harness_error", f"executor error: {result.error}", False
    if not _model_answered(run):
        detail = run.end_detail or "no session events"
        why = f"the agent never reached its model ({run.end_state}: {detail})"
        return ("timeout" if result.timed_out else "harness_error"), why, False
    if result.timed_out:
        end_reason, invalid = "timeout", None
    elif run.end_state == "error":
        end_reason, invalid = "harness_error", f"agent CLI ended in error: {run.end_detail}"
    elif run.end_state == "truncated":
        end_reason = "harness_error"
        invalid = (
            f"session log ends without the CLI's closing event ({run.end_detail}); "
            f"exit code {result.exit_code}"
        )
    elif result.exit_code != 0:
        end_reason, invalid = "harness_error", f"agent CLI exited with code {result.exit_code}"
    else:
        end_reason, invalid = "completed", run.report_problem
    if invalid is None and (evidence["log"] is None or evidence["recording"] is None):
        missing = [n for n in ("log", "recording") if evidence[n] is None]
        invalid = f"incomplete evidence: no {' and no '.join(missing)}"
    return end_reason, invalid, end_reason == "completed" and run.report is not None


def _build_external_record(
    spec: AttemptSpec,
    result: ExecutionResult,
    out_dir: Path,
    evidence: dict,
    driver,
    key_record: dict | None,
    environment: Environment | None = None,
) -> RunRecord:
    run = driver.collect(out_dir)
    end_reason, invalid_reason, keep_report = external_outcome(result, run, evidence)
    if result.error is None and result.refused is not None:
        invalid_reason = result.refused
    key = key_record or {"kind": driver.key_kind, "limit_usd": None}
    parts = record_parts(
        run,
        key_kind=key["kind"],
        key_limit_usd=key["limit_usd"],
        harness_version=run.harness_version or driver.harness_version(),
        wall_seconds=(result.ended_at - result.started_at).total_seconds(),
    )
    doc = _base_doc(spec, result, evidence, environment) | {
        "end_reason": end_reason,
        "invalid_reason": invalid_reason,
        "report": parts["report"] if keep_report else None,
        "usage": parts["usage"],
        "harness": parts["harness"],
        "model": parts["model"],
        "key": key,
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
    executor = executor or get_executor()
    role = "agents" if driver_for(spec.agent_id).external else "runner"
    pin = ensure_pin(spec.cycle_id, executor, [role], spec.demo, spec.budget_scale, base=base_dir)
    pinned_image = check_pinned_image(pin, role) if pin.executor == "docker" else None
    # The local bare repository the container fetches the pinned commit from: the host's mirror of
    # a remote URL, or the local repository. SourceUnavailable: the attempt does not start (retried).
    repo_path = attempt_source(spec.repo_url, spec.commit)
    out_dir = folder / "out"
    if out_dir.exists():
        shutil.rmtree(out_dir)  # partial output of a crashed try never mixes with a new one
    folder.mkdir(parents=True, exist_ok=True)
    executor = executor or get_executor()
    store = store or EvidenceStore()
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
        harness_args = list(driver.recording_args(spec.label))  # the recording's title names the attempt
        if driver.external:  # the key goes through the driver's own environment (build_env)
            run_kwargs = {"launch": driver.launch(key_env, title=spec.label)}
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
        key_record = key.record()
    environment = attempt_environment(pin, role, spec.tier, attempt_display(pin, out_dir))
    record = with_presentation(
        build_record(spec, result, out_dir, store, key_record, environment), store, key
    )
    write_atomic(record_path, record.to_json() + "\n")
    return RecordFile(record_path, record)
