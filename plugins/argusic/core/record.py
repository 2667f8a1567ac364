"""The run record contract `argusic.run_record/1`: one JSON document per attempt.

Facts only: what ran, how it ended, where the evidence is and what the agent reported. Scores and
verdicts are derived later, in dbt. A record that breaks the schema is refused with a message that
names the field.

A record is hostile input until checked: its ids follow one grammar (every id part from
`[A-Za-z0-9_-]`; the attempt id is `<cycle_id>.<purpose>.<agent_id>.<project_id>.a<attempt_no>`,
`.r<n>` for the n-th rerun, and agrees with those fields and with `rerun_of`), and a record file is
read with a size cap (`MAX_RECORD_BYTES`), as strict UTF-8 JSON. Where its evidence may live is
checked against the store by `argusic.core.evidence.record_evidence_problems`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

SCHEMA_ID = "argusic.run_record/1"

# Records are a few KB; anything above this is refused before it is read (a record is loaded whole).
MAX_RECORD_BYTES = 1 << 20

ID_PART = r"[A-Za-z0-9_-]{1,128}"
ID_PART_RE = re.compile(rf"^{ID_PART}$")
ATTEMPT_ID_GRAMMAR = "<cycle_id>.<purpose>.<agent_id>.<project_id>.a<attempt_no>[.r<rerun>]"
ATTEMPT_ID_RE = re.compile(
    rf"^(?P<cycle_id>{ID_PART})\.(?P<purpose>{ID_PART})\.(?P<agent_id>{ID_PART})"
    rf"\.(?P<project_id>{ID_PART})\.a(?P<attempt_no>[1-9][0-9]{{0,8}})(?:\.r(?P<rerun_no>[1-9][0-9]{{0,8}}))?$"
)


def _id_part(value: str) -> str:
    if not ID_PART_RE.fullmatch(value):
        raise ValueError(f"{_shown(value)} is not an id part: 1-128 characters of A-Z a-z 0-9 _ -")
    return value


def _attempt_id(value: str) -> str:
    if not ATTEMPT_ID_RE.fullmatch(value):
        raise ValueError(
            f"{_shown(value)} does not follow {ATTEMPT_ID_GRAMMAR} (each part 1-128 characters of "
            "A-Z a-z 0-9 _ -; attempt and rerun numbers from 1)"
        )
    return value


def _shown(value: str, limit: int = 80) -> str:
    """A hostile value, quoted and cut short enough to print in a message."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"... ({len(value)} characters)"


Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
IdPart = Annotated[str, AfterValidator(_id_part)]
AttemptId = Annotated[str, AfterValidator(_attempt_id)]


def parse_attempt_id(attempt_id: str) -> dict[str, str | int]:
    """The parts of an attempt id (ValueError when it does not follow the grammar); rerun_no 0 when
    the id has no `.r<n>` suffix."""
    match = ATTEMPT_ID_RE.fullmatch(_attempt_id(attempt_id))
    assert match is not None
    parts: dict[str, str | int] = dict(match.groupdict())
    parts["attempt_no"] = int(parts["attempt_no"])
    parts["rerun_no"] = int(parts["rerun_no"] or 0)
    return parts


def make_attempt_id(
    cycle_id: str, purpose: str, agent_id: str, project_id: str, attempt_no: int, rerun_no: int = 0
) -> str:
    base = f"{cycle_id}.{purpose}.{agent_id}.{project_id}.a{attempt_no}"
    return base if rerun_no == 0 else f"{base}.r{rerun_no}"


Tier = Literal["standard", "heavy", "gpu"]
EndReason = Literal["completed", "timeout", "cancelled", "emergency_stop", "harness_error"]
TestDepth = Literal["tier1_real", "tier2_mock", "tier3_none"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EvidenceRef(_Strict):
    sha256: Sha256
    uri: str = Field(min_length=1)
    bytes: int = Field(ge=0)


class Evidence(_Strict):
    log: EvidenceRef | None
    recording: EvidenceRef | None
    report: EvidenceRef | None
    # Optional, added for issue #30: the raw session video of the virtual display (a desktop
    # application's pixels; argusic.attempts.video), and why a video the container left was not kept
    # (over its cap, not a Matroska file). Written only when there is one: every other record stays
    # byte for byte what it was, and older records stay valid.
    display_video: EvidenceRef | None = None
    display_video_problem: str | None = Field(default=None, max_length=500)
    # Optional, added for issue #31 (seed 002): an external CLI's raw session file (session.jsonl, what
    # the record's tool calls, final output and observation were read from), fingerprinted like the
    # log. Raw evidence: never served (it is not masked), audited like the rest.
    session_log: EvidenceRef | None = None

    @model_serializer(mode="wrap")
    def _contract_shape(self, handler):  # noqa: ANN001, ANN202 - pydantic's serializer protocol
        data = handler(self)
        for optional in ("display_video", "display_video_problem", "session_log"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data


# Free text an agent (or its CLI's session log) writes into a record is bounded, so that no attempt can
# push its record past MAX_RECORD_BYTES and block its cycle's ingest; the whole text stays in the
# report evidence object. `bound_texts` cuts longer texts, saying so.
REPORT_TEXT_MAX = 8_000
LABEL_MAX = 200


# Seed 002's comparison conditions: the harness before a change (baseline), after it (variant), or an
# external harness run on the same task the same way (external-<name>).
CONDITION_PATTERN = r"^(baseline|variant|external-[a-z0-9][a-z0-9-]{0,62})$"
Condition = Annotated[str, StringConstraints(pattern=CONDITION_PATTERN)]
MAX_TOOL_CALLS = 2000  # kept in a record; the session log (evidence) has them all
TOOL_ARGUMENTS_MAX = 300
# The kept calls' share of a record (MAX_RECORD_BYTES is 1 MiB): calls past it are counted, not kept.
TOOL_CALLS_MAX_BYTES = 256 * 1024


def default_condition(harness: str | None, external: bool) -> str:
    """The condition of an attempt whose plan names none: an external harness is ``external-<name>``,
    ours the baseline."""
    return f"external-{harness}" if external and harness else "baseline"


class ToolCall(_Strict):
    """One tool call in the order the session log shows it (seed 002: order, common category, the
    harness's own name, arguments, success)."""

    order: int = Field(ge=1)
    category: Literal["read", "search", "edit", "exec", "other"]
    name: str = Field(max_length=LABEL_MAX)
    target: str | None = Field(default=None, max_length=TOOL_ARGUMENTS_MAX)
    arguments: str = Field(max_length=TOOL_ARGUMENTS_MAX)  # canonical JSON, cut (cut_text)
    ok: bool | None  # None: the log never says how it ended


class ToolCalls(_Strict):
    """The attempt's tool calls, read once from the CLI's session log by its collector: the first ones
    kept (at most ``MAX_TOOL_CALLS``, within ``TOOL_CALLS_MAX_BYTES`` as JSON), ``total`` counting
    all. The raw session log stays in the evidence."""

    source: Literal["session_log"]
    total: int = Field(ge=0)
    calls: list[ToolCall] = Field(max_length=MAX_TOOL_CALLS)


class FinalOutput(_Strict):
    """The agent's final message as its session log shows it (seed 002's "final output"): the text
    (cut to ``REPORT_TEXT_MAX``), its length and the sha256 of the whole text, so an exact comparison
    holds whatever its length."""

    text: str = Field(max_length=REPORT_TEXT_MAX)
    chars: int = Field(ge=0)
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class Report(_Strict):
    install_ok: bool
    ran_ok: bool
    errors_encountered: int = Field(ge=0)
    # May exceed errors_encountered: such a run is kept and rejected by the scoring rules, not here.
    errors_fixed: int = Field(ge=0)
    test_depth: TestDepth
    verified_how: str = Field(max_length=REPORT_TEXT_MAX)
    final_state: str = Field(max_length=REPORT_TEXT_MAX)


class Observed(_Strict):
    """What our harness observed, beside the agent's report (its claim); issue #25, edition 1.7.
    source harness: the reference harness's own commands and decodes (sealed); session_log: the
    external CLI's session log, read by its collector. None in a field: the harness could not tell."""

    source: Literal["harness", "session_log"]
    install_ok: bool | None = None
    ran_ok: bool | None = None
    errors_encountered: int | None = Field(default=None, ge=0)
    errors_fixed: int | None = Field(default=None, ge=0)
    verified: bool | None = None
    verify_command: str | None = Field(default=None, max_length=REPORT_TEXT_MAX)
    commands_run: int | None = Field(default=None, ge=0)
    commands_failed: int | None = Field(default=None, ge=0)
    note: str | None = Field(default=None, max_length=2000)


class Seal(_Strict):
    """Whether the landed /out is what the harness sealed (argusic.attempts.sealing). intact: every
    sealed file landed with its digest; altered: the files named changed after the harness wrote them
    (a replaced report is kept as report.landed.json and the sealed one is the record's report);
    missing: the harness had a channel but sent nothing; no_channel: the executor gave it none."""

    status: Literal["intact", "altered", "missing", "no_channel"]
    altered: list[Annotated[str, StringConstraints(max_length=200)]] = Field(
        default_factory=list, max_length=32
    )
    report_replaced: bool = False


class Measure(_Strict):
    value: float | None
    status: Literal["measured", "derived", "unavailable"]

    @model_validator(mode="after")
    def _unavailable_has_no_value(self) -> Measure:
        if self.status == "unavailable" and self.value is not None:
            raise ValueError("status 'unavailable' requires value null")
        if self.status != "unavailable" and self.value is None:
            raise ValueError(f"status {self.status!r} requires a value")
        return self


class Usage(_Strict):
    input_tokens: Measure | None = None
    output_tokens: Measure | None = None
    model_calls: Measure | None = None
    cost_usd: Measure | None = None
    duration_seconds: Measure | None = None


# Seed 002's comparison grade of an external harness: run with the model of our experiment
# (same-model: the harness's difference can be read), or only with another one (reference: for
# reference only). Derived by our collector from the models the session log shows answering, never
# from what the agent says.
ComparisonGrade = Literal["same-model", "reference"]


class Harness(_Strict):
    name: str = Field(max_length=LABEL_MAX)
    version: str = Field(max_length=LABEL_MAX)
    # Optional, added for issue #31 (seed 002): the comparison grade and what it was derived from.
    # Written only when there is one (external harnesses): every other record stays byte for byte
    # what it was, and older records stay valid.
    grade: ComparisonGrade | None = None
    grade_basis: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _basis_with_grade(self) -> Harness:
        if (self.grade is None) != (self.grade_basis is None):
            raise ValueError("grade and grade_basis go together (a grade says what it was derived from)")
        return self

    @model_serializer(mode="wrap")
    def _contract_shape(self, handler):  # noqa: ANN001, ANN202 - pydantic's serializer protocol
        data = handler(self)
        for optional in ("grade", "grade_basis"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data


SETTING_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"


class Setting(_Strict):
    """One model setting with its status (seed 002 "unknown values"): measured (read from the launch
    the harness passed or the session log), derived (computed from other values), unavailable (this
    harness neither takes nor reports it: value null). ``source`` says where it was read."""

    value: str | int | float | bool | None
    status: Literal["measured", "derived", "unavailable"]
    source: str = Field(min_length=1, max_length=LABEL_MAX)

    @field_validator("value")
    @classmethod
    def _short(cls, value):  # noqa: ANN001, ANN206 - a value of any of the types above
        if isinstance(value, str) and len(value) > LABEL_MAX:
            raise ValueError(f"at most {LABEL_MAX} characters")
        return value

    @model_validator(mode="after")
    def _unavailable_has_no_value(self) -> Setting:
        if self.status == "unavailable" and self.value is not None:
            raise ValueError("status 'unavailable' requires value null")
        if self.status != "unavailable" and self.value is None:
            raise ValueError(f"status {self.status!r} requires a value")
        return self


SettingName = Annotated[str, StringConstraints(pattern=SETTING_NAME)]


class ModelSettings(_Strict):
    """The model settings of an attempt (issue #31, seed 002's "model: settings"): the sampling and
    length settings, the auxiliary models (the variables naming the model of a CLI's side calls) and
    every other setting the harness passes to the model, each with its status; ``answered`` lists the
    models the session log shows answering (main loop and side calls), as the grade read them."""

    temperature: Setting
    max_output_tokens: Setting
    reasoning_effort: Setting
    auxiliary_models: dict[SettingName, Setting] = Field(default_factory=dict, max_length=8)
    passed: dict[SettingName, Setting] = Field(default_factory=dict, max_length=16)
    answered: list[Annotated[str, StringConstraints(max_length=LABEL_MAX)]] = Field(
        default_factory=list, max_length=16
    )


class Model(_Strict):
    requested: str | None = Field(max_length=LABEL_MAX)
    responded: str | None = Field(max_length=LABEL_MAX)
    # Optional, added for issue #31 (seed 002): the settings the model ran with. Written only when
    # known (external harnesses): every other record stays byte for byte what it was.
    settings: ModelSettings | None = None

    @model_serializer(mode="wrap")
    def _contract_shape(self, handler):  # noqa: ANN001, ANN202 - pydantic's serializer protocol
        data = handler(self)
        if data.get("settings") is None:
            data.pop("settings", None)
        return data


def cut_text(value: str, limit: int) -> str:
    """`value` if it fits in `limit` characters, else its start and how much was cut."""
    if len(value) <= limit:
        return value
    keep = limit - 40
    return f"{value[:keep]} [... {len(value) - keep} characters cut]"


def bound_report(report: object) -> object:
    """A report document with its free-text fields cut to REPORT_TEXT_MAX (other values as they are:
    validation judges them)."""
    if not isinstance(report, dict):
        return report
    return {
        k: cut_text(v, REPORT_TEXT_MAX) if k in ("verified_how", "final_state") and isinstance(v, str) else v
        for k, v in report.items()
    }


def bound_texts(doc: dict) -> dict:
    """A record document whose agent-written texts (report, harness and model names) are bounded."""
    out = dict(doc)
    out["report"] = bound_report(doc.get("report"))
    for part in ("harness", "model"):
        if isinstance(doc.get(part), dict):
            out[part] = {
                k: cut_text(v, 2000 if k == "grade_basis" else LABEL_MAX) if isinstance(v, str) else v
                for k, v in doc[part].items()
            }
    return out


class Key(_Strict):
    kind: Literal["per_run", "shared", "none"]
    limit_usd: float | None
    # What the gateway counted against a per-run key, read just before it was deleted (None: not a
    # per-run key, a broker that cannot say, or a record written before it was kept).
    gateway_spend_usd: float | None = None
    # Why that count could not be read (the gateway did not answer before nor after the deletion):
    # a spend that is unknown is said so, never taken for one under the limit.
    gateway_spend_unread: str | None = Field(default=None, max_length=LABEL_MAX)

    @model_serializer(mode="wrap")
    def _contract_shape(self, handler):  # noqa: ANN001, ANN202 - pydantic's serializer protocol
        # DESIGN.md's contract is {kind, limit_usd}: the gateway's count (or why it is unknown) is
        # written only when there is one, so every other record stays byte for byte what it was.
        data = handler(self)
        for optional in ("gateway_spend_usd", "gateway_spend_unread"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data


class Presentation(_Strict):
    """The served (presentation-layer) copies derived from the raw evidence before publication."""

    masking_applied: bool
    withheld: bool
    withheld_reason: str | None
    log: EvidenceRef | None
    recording: EvidenceRef | None
    # Fingerprints of private-key bodies the project itself generated (redacted in served copies).
    private_key_sha256: list[Sha256] = Field(default_factory=list)


Digest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]


class ImageIdentity(_Strict):
    """An image the attempt ran in: its role, the name it was asked for by, and its content digest
    (the image id, `sha256:<64 hex>`: content-addressed, unlike the tag, which is rebuilt in place)."""

    role: Literal["runner", "agents"]
    reference: str = Field(max_length=LABEL_MAX)
    digest: Digest


class InstructionsIdentity(_Strict):
    """The standard instructions the harness handed the agent (the template, before rendering)."""

    version: str = Field(max_length=LABEL_MAX)
    sha256: Sha256


class Limits(_Strict):
    """The container limits the attempt ran under (budget included). Null limits: none was set (the
    local executor, development only, runs without a container)."""

    cpus: float | None = Field(gt=0)
    memory_bytes: int | None = Field(gt=0)
    pids: int | None = Field(gt=0)
    disk_bytes: int | None = Field(gt=0)  # the writable areas together (/out plus the work area)
    network: str = Field(min_length=1, max_length=LABEL_MAX)  # a Docker network mode; "host" locally
    # variable -> URL of the package indexes the operator pointed the attempt at ({}: the public ones)
    package_indexes: dict[str, str] = Field(default_factory=dict, max_length=8)
    budget_seconds: int = Field(gt=0)  # what the attempt was actually allowed (a scaled budget in demos)


class Display(_Strict):
    """The virtual display (Xvfb) the attempt had, as the harness found it running."""

    kind: Literal["xvfb"]
    width: int = Field(gt=0, le=16384)
    height: int = Field(gt=0, le=16384)
    depth: int = Field(gt=0, le=32)


class Environment(_Strict):
    """Everything the attempt ran under that the agent did not choose (issue #15): equal for every
    attempt of a cycle. Records written before it carry none (these facts are unavailable for them)."""

    harness_edition: str = Field(max_length=LABEL_MAX)  # the harness changelog's edition
    scaffold_sha256: Sha256  # the harness files given to the container, hashed together
    images: list[ImageIdentity] = Field(max_length=8)  # empty for the local executor (no images)
    instructions: InstructionsIdentity
    limits: Limits
    display: Display | None = None


Track = Literal["basic", "spec"]


class Preparation(_Strict):
    """How a repair item's working copy was prepared before the agent's clock started (issue #31,
    seed 001: dependencies installed, dependent packages built; argusic.repair.prepare): the item's
    setup command, run once per item in the attempt's image with the attempts' network, its log as
    evidence and its exit status. A failed preparation makes the attempt invalid (ours), never the
    agent's failure. ``reused``: made by an earlier attempt and copied for this one."""

    status: Literal["prepared", "failed"]
    command: list[Annotated[str, StringConstraints(max_length=4096)]] = Field(min_length=1, max_length=200)
    network: str = Field(min_length=1, max_length=LABEL_MAX)
    exit_code: int | None
    seconds: float | None = Field(ge=0)
    log: EvidenceRef | None
    tree_commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40,64}$")] | None
    added_files: int = Field(ge=0)
    excluded: list[Annotated[str, StringConstraints(max_length=4096)]] = Field(max_length=64)
    reverted: list[Annotated[str, StringConstraints(max_length=4096)]] = Field(max_length=32)
    reused: bool
    detail: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _failed_says_why(self) -> Preparation:
        if self.status == "failed" and not self.detail:
            raise ValueError("a failed preparation says why (detail)")
        if self.status == "prepared" and (self.exit_code != 0 or self.tree_commit is None):
            raise ValueError("a prepared tree has exit code 0 and its commit")
        return self


class Repair(_Strict):
    """What a repair attempt (purpose `repair`, issue #13) worked on and how its patch was judged.

    The attempt id's project part stays the pool project (`project_id`); the item is named here. Its
    attempt numbers count the (agent, project)'s repair attempts across that project's items, in the
    order of the plan (`argusic.cycle.plan.plan_repair_specs`), so they are only meaningful
    together with `item_id`, which a resumed attempt must agree with."""

    item_id: IdPart
    item_revision: Sha256  # the item record's revision (sha256 of its canonical JSON)
    track: Track
    patch: EvidenceRef | None  # the collected patch (git diff --cached --binary base); None: none collected
    grade: EvidenceRef | None  # the grade record (argusic.repair_grade/1); None: not graded
    # Which limit fixed before the results ended the agent: time, turns (from the CLI's result
    # subtype, never its turn count), or none.
    limit_hit: Literal["time", "turns", "spend"] | None = None
    # Tool calls the CLI refused for want of permission (Claude Code's result permission_denials,
    # seed 001); None: the CLI does not say (Codex, the demo stand-ins, older records).
    permission_denials: int | None = Field(default=None, ge=0)
    # Optional, added for issue #31: the working copy's preparation (an item with a setup command).
    # Written only when there is one: every other record stays byte for byte what it was.
    preparation: Preparation | None = None

    @model_serializer(mode="wrap")
    def _contract_shape(self, handler):  # noqa: ANN001, ANN202 - pydantic's serializer protocol
        data = handler(self)
        if data.get("preparation") is None:
            data.pop("preparation", None)
        return data


def utc_timestamp(value: datetime) -> datetime:
    """A record's timestamps are UTC: anything else is refused, naming the rule."""
    if value.tzinfo is None or value.utcoffset() != UTC.utcoffset(None):
        raise ValueError("must be an ISO-8601 timestamp in UTC (ending in Z or +00:00)")
    return value


class Timing(_Strict):
    """Where the attempt's wall time went (issue #29), as the executor observed it: the budget clock
    ran from ``agent_started_at`` (the container, or the local process, started) to
    ``agent_ended_at`` (it exited, or was killed at the budget or from outside). The rest of
    ``started_at`` .. ``ended_at`` is our overhead: before, the scratch areas, the pinned commit's
    copy and the container's creation; after, waiting for it to be gone. Records written before it
    carry none (their duration is the whole wall time, overhead included)."""

    agent_started_at: datetime
    agent_ended_at: datetime

    @field_validator("agent_started_at", "agent_ended_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return utc_timestamp(value)

    @model_validator(mode="after")
    def _ordered(self) -> Timing:
        if self.agent_ended_at < self.agent_started_at:
            raise ValueError("agent_ended_at is before agent_started_at")
        return self

    @property
    def agent_seconds(self) -> float:
        return (self.agent_ended_at - self.agent_started_at).total_seconds()


class RunRecord(_Strict):
    schema_: Literal["argusic.run_record/1"] = Field(alias="schema")
    attempt_id: AttemptId
    cycle_id: IdPart
    purpose: Literal["board", "verdict", "repair"]
    agent_id: IdPart
    project_id: IdPart
    commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,64}$")]
    tier: Tier
    attempt_no: int = Field(ge=1)
    methodology_version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+$")]
    started_at: datetime
    ended_at: datetime
    budget_seconds: int = Field(gt=0)
    end_reason: EndReason
    # Our tooling failed (daemon, fetch, gateway): the attempt is invalid, rerun, never scored.
    invalid_reason: str | None
    evidence: Evidence
    report: Report | None
    # Optional parts of the contract.
    usage: Usage | None = None
    harness: Harness | None = None
    model: Model | None = None
    key: Key | None = None
    # Optional, added by this pipeline: which executor ran it, whether the cycle is a demo with
    # scaled-down budgets (budget_seconds stays the real budget), and which attempt this one reruns.
    executor: Literal["docker", "local"] | None = None
    demo: bool = False
    effective_budget_seconds: int | None = Field(default=None, gt=0)
    rerun_of: AttemptId | None = None
    image: str | None = None
    presentation: Presentation | None = None
    # Optional, added for issue #15: what the attempt ran under, and (only in a reproduction, which is
    # never loaded into the warehouse) the published attempt it reproduces.
    environment: Environment | None = None
    reproduces: AttemptId | None = None
    # Only in a repair attempt's record (purpose repair), and required there: the item and the grade.
    repair: Repair | None = None
    # Optional, added for issue #25: what the container (agent or project) did that cut its own
    # measurement short -- the harness killed, /out refused at landing, the report or evidence missing
    # or unreadable, a served copy that could not be shown. Not our tooling's failure: the attempt is
    # valid, counted as a measured failure with this reason (0 points), and never rerun.
    container_fault: str | None = Field(default=None, max_length=2000)
    # Optional, added for issue #25 (edition 1.7): what the harness observed (points come from it;
    # the report is the agent's claim) and whether the landed files are what the harness sealed.
    observed: Observed | None = None
    seal: Seal | None = None
    # Optional, added for issue #31 (seed 002): the comparison condition it ran under, and the tool
    # calls its session log shows (external harnesses), so that readers need not parse the log again.
    condition: Condition | None = None
    tool_calls: ToolCalls | None = None
    final_output: FinalOutput | None = None
    # Optional, added for issue #29: the part of the wall time the budget clock ran (agent time),
    # the rest being our overhead (container start, evidence collection).
    timing: Timing | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return utc_timestamp(value)

    @model_validator(mode="after")
    def _consistent(self) -> RunRecord:
        if self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        parts = parse_attempt_id(self.attempt_id)
        for name in ("cycle_id", "purpose", "agent_id", "project_id", "attempt_no"):
            if parts[name] != getattr(self, name):
                raise ValueError(
                    f"attempt_id: {self.attempt_id!r} says {name} {parts[name]!r} but the record's "
                    f"{name} is {getattr(self, name)!r}"
                )
        if (self.purpose == "repair") != (self.repair is not None):
            raise ValueError(
                "repair: a record of purpose 'repair' needs its repair block (item, patch, grade)"
                if self.repair is None
                else f"repair: only a record of purpose 'repair' has a repair block, not {self.purpose!r}"
            )
        if self.timing is not None and not (
            self.started_at <= self.timing.agent_started_at and self.timing.agent_ended_at <= self.ended_at
        ):
            raise ValueError(
                "timing: the agent's time must lie within started_at .. ended_at (the attempt's wall time)"
            )
        rerun_no = int(parts["rerun_no"])
        if self.rerun_of is not None:
            if rerun_no == 0:
                raise ValueError(
                    f"rerun_of: {self.rerun_of!r} but attempt_id {self.attempt_id!r} has no .r<n> suffix"
                )
            rerun_of = make_attempt_id(
                self.cycle_id, self.purpose, self.agent_id, self.project_id, self.attempt_no, rerun_no - 1
            )
            if self.rerun_of != rerun_of:
                raise ValueError(
                    f"rerun_of: {self.rerun_of!r} disagrees with attempt_id {self.attempt_id!r}: "
                    f"rerun {rerun_no} reruns {rerun_of!r}"
                )
        return self

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)

    @property
    def wall_seconds(self) -> float:
        """started_at .. ended_at: the agent's time and our overhead together."""
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def agent_seconds(self) -> float | None:
        """The time the budget clock ran (None: a record written before timings were kept)."""
        return None if self.timing is None else self.timing.agent_seconds

    @property
    def overhead_seconds(self) -> float | None:
        """Our overhead: the wall time outside the agent's time (None when the record has no timing)."""
        return None if self.timing is None else max(0.0, self.wall_seconds - self.timing.agent_seconds)

    @property
    def allowed_seconds(self) -> int:
        """The budget this attempt was actually allowed (the scaled one in a demo cycle)."""
        return self.effective_budget_seconds or self.budget_seconds


class RecordError(ValueError):
    """A run record that breaks the schema; the message names the source and the field."""


def _describe(err: ValidationError, source: str) -> str:
    parts = []
    for e in err.errors():
        message = e["msg"].removeprefix("Value error, ")
        if e["loc"]:
            parts.append(".".join(str(p) for p in e["loc"]) + f": {message}")
        else:  # a check across fields: its message names them
            parts.append(message)
    return f"{source}: invalid run record: " + "; ".join(parts)


def parse_record(data: dict | str | bytes, source: str = "<record>") -> RunRecord:
    """Validate one record; raise RecordError naming the offending field(s)."""
    try:
        if isinstance(data, (str, bytes)):
            return RunRecord.model_validate_json(data)
        return RunRecord.model_validate(data)
    except ValidationError as err:
        raise RecordError(_describe(err, source)) from None


def read_record_bytes(path: Path, limit: int = MAX_RECORD_BYTES) -> bytes:
    """A record file's bytes, refused (RecordError naming the file) when it is not a regular file,
    is a symbolic link, or is larger than `limit`: the size is checked before anything is read, and
    the read itself stops at `limit` + 1 bytes (a file that grows meanwhile is refused too)."""
    try:
        # O_NOFOLLOW: never a link; O_NONBLOCK: a FIFO cannot hang the open.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RecordError(
                f"{path}: is a symbolic link; run records are read without following links"
            ) from None
        raise RecordError(f"{path}: cannot be read: {err.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecordError(f"{path}: not a regular file")
        too_big = f"{path}: a run record is at most {limit} bytes"
        if info.st_size > limit:
            raise RecordError(f"{too_big}; this file has {info.st_size}: refused unread")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise RecordError(f"{too_big}; this file grew past it while read: refused")
    return data


def load_record_file(path: Path) -> RunRecord:
    """Read (size-capped), decode (strict UTF-8), parse (JSON) and validate one record file; every
    refusal is a RecordError that names the file and what is wrong."""
    data = read_record_bytes(Path(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecordError(f"{path}: not UTF-8 (byte {err.start} is {data[err.start]:#04x})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(f"{path}: not JSON: {err}") from None
    except RecursionError:
        raise RecordError(f"{path}: not JSON this pipeline reads: nested too deeply") from None
    if not isinstance(doc, dict):
        raise RecordError(f"{path}: invalid run record: (document): a JSON object is expected")
    return parse_record(text, source=str(path))


@dataclass(frozen=True)
class RecordFile:
    """A run record parsed once, with the file that holds it: what one step of a task hands the next
    (the attempt to its reruns, hints and story; ingest's checks to its load), so that no step parses
    the file again."""

    path: Path
    record: RunRecord

    @classmethod
    def load(cls, path: Path | str) -> RecordFile:
        """Read, check and parse a record file (load_record_file): RecordError names what is wrong."""
        return cls(Path(path), load_record_file(Path(path)))


def utc_now_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
