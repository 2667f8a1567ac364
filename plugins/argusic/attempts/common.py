"""What every kind of attempt shares: the evidence files, the record on a cluster (existing_record,
share_record), the task's artifact globs, the report reader, the record's common fields, the key broker
and the served copies. install_run and repair_run both build on it."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from pathlib import Path

from argusic.attempts.agents import DRIVERS, driver_for
from argusic.attempts.keys import IssuedKey, KeyBroker, LiteLLMKeyBroker
from argusic.core.evidence import EvidenceStore
from argusic.core.layout import RECORD_FILE, attempt_dir
from argusic.core.record import (
    LABEL_MAX,
    MAX_TOOL_CALLS,
    REPORT_TEXT_MAX,
    SCHEMA_ID,
    TOOL_ARGUMENTS_MAX,
    TOOL_CALLS_MAX_BYTES,
    Environment,
    EvidenceRef,
    Presentation,
    Report,
    RunRecord,
    bound_report,
    cut_text,
    default_condition,
    utc_now_iso,
)
from argusic.core.runs_store import pull, push
from argusic.core.settings import orchestrator_config
from argusic.core.spec import AttemptSpec
from argusic.sandbox.landing import check_globs
from argusic.sandbox.launch import ExecutionResult

log = logging.getLogger(__name__)


EVIDENCE_FILES = {"log": "log.txt", "recording": "recording.cast", "report": "report.json"}


# Install-and-run attempts: the executor lands the agent's changes to the project
# (argusic.sandbox.changes) for the change-similarity hint; a repair attempt collects its patch
# itself, in its container.
CHANGES_PURPOSES = ("board", "verdict")


def existing_record(spec: AttemptSpec, base: Path | None = None) -> Path | None:
    """The attempt's run record if it was measured before: in this host's runs folder, or on a cluster
    in the runs store (pulled here first: a retry on another host finds it and measures nothing twice)."""
    if base is None:
        found = pull(f"{spec.cycle_id}/{spec.attempt_id}/{RECORD_FILE}")
        return found if found is not None and found.is_file() else None
    path = attempt_dir(spec, base) / RECORD_FILE
    return path if path.is_file() else None


def share_record(path: Path, base: Path | None = None) -> None:
    """On a cluster, land a run record in the runs store as soon as it is written (write-once: a
    record already there with other bytes is refused, RunsStoreConflict)."""
    if base is None:
        push(path, write_once=True)


def artifact_globs(spec: AttemptSpec) -> tuple[str, ...]:
    """The artifact globs of the attempt's task (``argusic.core.tasks``): which files of the project
    folder the executor lands into out/artifacts. None (an empty tuple) where that package is not
    installed; a broken task definition (TaskDefinitionError) or a glob that is absolute or holds
    `..` (ValueError, ``argusic.sandbox.landing.check_globs``) raises before the attempt starts."""
    try:
        # deferred: looked up when called; where the task definitions cannot be imported, no artifacts
        from argusic.core.tasks import task_for
    except ImportError:
        return ()
    return check_globs(task_for(spec.purpose, spec.project_id).artifacts)


REPORT_MAX_BYTES = 1024**2  # a report is seven short fields; anything bigger is not read


def _read_report(path: Path) -> tuple[dict | None, str | None]:
    if not path.exists():
        return None, None
    try:
        with open(path, "rb") as handle:
            raw = handle.read(REPORT_MAX_BYTES + 1)
        if len(raw) > REPORT_MAX_BYTES:
            return None, f"report unreadable: {path.name} is over {REPORT_MAX_BYTES} bytes"
        return Report.model_validate(bound_report(json.loads(raw))).model_dump(), None
    except Exception as err:  # any unreadable report is our tooling's failure, kept with its reason
        return None, f"report unreadable: {str(err).splitlines()[0]}"


RECORDING_HEADER_MAX_BYTES = 64 * 1024  # an asciicast header is a few hundred bytes


def title_recording(path: Path, title: str) -> bool:
    """Give the landed recording its title (``<agent> / <project> / attempt N``) from outside: the
    container is never told which agent, project or attempt it is (issue #25: a project that knows
    who is measuring it can target one agent). The header line's "title" is set before the recording
    is fingerprinted; a recording that is missing, a link, or whose header is not an asciicast object
    within 64 KiB is left as it is (masking then withholds what no player can read). True when set."""
    if not path.is_file() or path.is_symlink():
        return False
    with path.open("rb") as raw:
        line = raw.readline(RECORDING_HEADER_MAX_BYTES + 1)
        if not line.endswith(b"\n") or len(line) > RECORDING_HEADER_MAX_BYTES:
            return False
        try:
            header = json.loads(line)
        except ValueError:
            return False
        if not isinstance(header, dict) or header.get("version") not in (2, 3):
            return False
        header["title"] = title
        partial = path.with_name(f".{path.name}.titled")
        try:
            with partial.open("wb") as titled:
                titled.write(json.dumps(header, ensure_ascii=False).encode() + b"\n")
                shutil.copyfileobj(raw, titled, 1024 * 1024)
        except BaseException:
            partial.unlink(missing_ok=True)  # the landed recording stays as it was, nothing half-written
            raise
    partial.replace(path)
    return True


def _base_doc(
    spec: AttemptSpec, result: ExecutionResult, evidence: dict, environment: Environment | None = None
) -> dict:
    config = orchestrator_config()
    budget = config.budget_seconds(spec.tier)
    return {
        "schema": SCHEMA_ID,
        "attempt_id": spec.attempt_id,
        "cycle_id": spec.cycle_id,
        "purpose": spec.purpose,
        "agent_id": spec.agent_id,
        "project_id": spec.project_id,
        "commit": spec.commit,
        "tier": spec.tier,
        "attempt_no": spec.attempt_no,
        "methodology_version": config.methodology_version,
        "started_at": utc_now_iso(result.started_at),
        "ended_at": utc_now_iso(result.ended_at),
        "budget_seconds": budget,
        "evidence": evidence,
        "executor": result.executor,
        "demo": spec.demo,
        "effective_budget_seconds": max(1, round(budget * spec.budget_scale)) if spec.demo else None,
        "rerun_of": spec.rerun_of,
        # The image by the name people know it by; what ran, by digest, is in environment.images.
        "image": environment.images[0].reference if environment and environment.images else result.image,
        "environment": None if environment is None else environment.model_dump(),
        "condition": spec.condition or _default_condition(spec.agent_id),
        "timing": timing_of(result),
    }


def timing_of(result: ExecutionResult) -> dict | None:
    """The record's ``timing`` (issue #29): the agent's time as the executor saw it, within the
    attempt's wall time; None when what was to run never started."""
    start, end = result.agent_started_at, result.agent_ended_at
    if start is None or end is None:
        return None
    start = min(max(start, result.started_at), result.ended_at)
    end = min(max(end, start), result.ended_at)
    return {"agent_started_at": utc_now_iso(start), "agent_ended_at": utc_now_iso(end)}


def _default_condition(agent_id: str) -> str:
    driver = driver_for(agent_id)
    return default_condition(driver.harness_name, driver.external)


def final_output_part(run) -> dict | None:
    """The record's ``final_output`` (optional): the CLI's last message, cut, with its length and
    the sha256 of the whole text (None when the session shows none)."""
    text = getattr(run, "final_text", None) if run is not None else None
    if not isinstance(text, str):
        return None
    return {
        "text": cut_text(text, REPORT_TEXT_MAX),
        "chars": len(text),
        "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
    }


def tool_calls_part(run) -> dict | None:
    """The record's ``tool_calls`` (argusic.run_record/1, optional) from a collected session: order,
    category, the harness's own name, target, arguments (canonical JSON, cut) and outcome; the first
    calls that fit ``TOOL_CALLS_MAX_BYTES`` (as escaped JSON: a record stays under its cap)."""
    if run is None:
        return None
    calls: list[dict] = []
    used = 2  # the list's brackets
    for order, call in enumerate(run.tool_calls[:MAX_TOOL_CALLS], start=1):
        entry = {
            "order": order,
            "category": call.category,
            "name": cut_text(call.name, LABEL_MAX),
            "target": None if call.target is None else cut_text(call.target, TOOL_ARGUMENTS_MAX),
            "arguments": cut_text(
                json.dumps(dict(call.arguments), sort_keys=True, default=str, ensure_ascii=False),
                TOOL_ARGUMENTS_MAX,
            ),
            "ok": call.ok,
        }
        used += len(json.dumps(entry)) + 2  # ensure_ascii: the longest form; ", " between entries
        if used > TOOL_CALLS_MAX_BYTES:
            break
        calls.append(entry)
    return {"source": "session_log", "total": len(run.tool_calls), "calls": calls}


def _model_answered(run) -> bool:
    """Whether the session log shows the model ever answering (a closed turn, a model name, a tool
    call or text of the agent's). Without it the agent never got to work."""
    return bool(run.end_state == "completed" or run.model_responded or run.tool_calls or run.final_text)


def _broker_for(key_kind: str, broker: KeyBroker | None) -> KeyBroker | None:
    if key_kind != "per_run" or broker is not None:
        return broker
    return LiteLLMKeyBroker.from_env()  # raises KeyUnavailable when no routing layer is configured


def presentation_secrets(key: IssuedKey | None = None) -> list[str]:
    """Live credential values the orchestrator holds: every shared key an agent may be given, and the
    attempt's own key. Landing replaced the per-run key only as typed; the code under test can print
    it reversed, encoded or split, which only a masker that knows the value finds."""
    names = {d.shared_env_var for d in DRIVERS.values() if d.shared_env_var}
    shared = [os.environ[name] for name in sorted(names) if os.environ.get(name)]
    own = key.masking_values() if key is not None else []
    return [*own, *(v for v in shared if v not in own)]


def with_presentation(record: RunRecord, store: EvidenceStore, key: IssuedKey | None = None) -> RunRecord:
    """Derive the served copies (credentials masked, generated private keys redacted, vendor banners
    hidden), the attempt's `key` among the known values. A copy that cannot be shown free of live
    credentials is withheld: the attempt is a measured failure with that reason (the container's
    doing), kept and never rerun; one withheld because our evidence store failed is invalid and rerun."""
    # Only an attempt whose output is presented needs the masking engine, which imports numpy.
    # deferred: masking pulls in numpy, about as slow to import as docker
    from argusic.attempts.presentation import present_attempt

    if record.evidence.log is None and record.evidence.recording is None:
        return record
    shown = present_attempt(record, store, presentation_secrets(key))
    served = {k: (None if v is None else EvidenceRef(sha256=v.sha256, uri=v.uri, bytes=v.bytes))
              for k, v in shown.served.items()}  # fmt: skip
    update: dict = {
        "presentation": Presentation(
            masking_applied=shown.masking_applied,
            withheld=shown.withheld,
            withheld_reason=shown.withheld_reason,
            log=served.get("log"),
            recording=served.get("recording"),
            private_key_sha256=sorted({k["sha256"] for k in shown.private_keys}),
        )
    }
    if shown.withheld and shown.withheld_by_our_tooling and record.invalid_reason is None:
        # our evidence store failed: invalid, rerun
        update["invalid_reason"] = f"served copy withheld: {shown.withheld_reason}"
    elif shown.withheld and record.invalid_reason is None and record.container_fault is None:
        # What the container printed could not be shown free of live credentials: its doing (a leaked
        # key, or output shaped to defeat the masker), so a measured failure, never a rerun (a rerun
        # would let it veto its own result).
        update["container_fault"] = f"served copy withheld: {shown.withheld_reason}"
    # The record was validated when it was built; only its presentation (validated just above) and
    # invalid_reason or container_fault change, so it is copied rather than parsed again.
    return record.model_copy(update=update)


# LiteLLM's refusal of a key at its max_budget (1.108.7: ProxyException type "budget_exceeded",
# message "Budget has been exceeded! ..."), as a CLI repeats it in its error event.
_BUDGET_REFUSAL = re.compile(r"budget_exceeded|Budget has been exceeded", re.IGNORECASE)


def key_spent(key: dict | None, cli_detail: str | None = None) -> str | None:
    """Why the attempt's key could no longer be used, or None.

    Spent when the gateway counted its spend up to the key's limit (the run record's ``key``:
    ``gateway_spend_usd`` against ``limit_usd``). When that count is unknown (``gateway_spend_unread``:
    the gateway answered neither before nor after the deletion), the CLI's own error (``cli_detail``,
    from its sealed session log) showing the gateway's budget refusal counts instead: an unknown count
    never passes for one under the limit on its own (that would let an agent that burned its key on a
    failing gateway have its run thrown away)."""
    key = key or {}
    spend, limit = key.get("gateway_spend_usd"), key.get("limit_usd")
    if spend is not None and limit is not None and spend >= limit:
        return (
            f"the attempt's model key reached its spend limit ({spend:g} of {limit:g} USD, "
            "as the gateway counted)"
        )
    if spend is None and key.get("gateway_spend_unread") and _BUDGET_REFUSAL.search(cli_detail or ""):
        return (
            "the attempt's model key was refused for its spend limit (the CLI's error shows the "
            "gateway's budget refusal; the gateway's count could not be read)"
        )
    return None


def spend_unknown(key: dict | None) -> str:
    """The words added to an invalid reason when the key's spend is unknown ('' when it is known)."""
    unread = (key or {}).get("gateway_spend_unread")
    return f" (the key's spend is unknown: {unread})" if unread else ""


# A gateway's error names the key: LiteLLM's "Key=<alias> (sk-...<last 4>)". Its alias carries the
# operator's agent and project ids (published ids never do: issue 32), its tail part of a value.
_KEY_NAMES = re.compile(r"argusic-attempt:[^\s()\"',]*|\bsk-[^\s()\"',]*")


def cli_error(detail: str | None) -> str:
    """`agent CLI ended in error: <the CLI's own words>`, for a record's published reason: the words
    kept, a key's alias or value (or its visible tail) named by neither."""
    return f"agent CLI ended in error: {_KEY_NAMES.sub('[the attempt key]', detail or '')}"
