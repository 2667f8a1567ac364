"""The run record contract `argusic.run_record/1`: one JSON document per attempt.

Facts only: what ran, how it ended, where the evidence is and what the agent reported. Scores and
verdicts are derived later, in dbt. A record that breaks the schema is refused with a message that
names the field.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

SCHEMA_ID = "argusic.run_record/1"

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@/+-]+$")]
Tier = Literal["standard", "heavy", "gpu"]
EndReason = Literal["completed", "timeout", "cancelled", "harness_error"]
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


class Report(_Strict):
    install_ok: bool
    ran_ok: bool
    errors_encountered: int = Field(ge=0)
    # May exceed errors_encountered: such a run is kept and rejected by the scoring rules, not here.
    errors_fixed: int = Field(ge=0)
    test_depth: TestDepth
    verified_how: str
    final_state: str


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


class Harness(_Strict):
    name: str
    version: str


class Model(_Strict):
    requested: str | None
    responded: str | None


class Key(_Strict):
    kind: Literal["per_run", "shared", "none"]
    limit_usd: float | None


class Presentation(_Strict):
    """The served (presentation-layer) copies derived from the raw evidence before publication."""

    masking_applied: bool
    withheld: bool
    withheld_reason: str | None
    log: EvidenceRef | None
    recording: EvidenceRef | None
    # Fingerprints of private-key bodies the project itself generated (redacted in served copies).
    private_key_sha256: list[Sha256] = Field(default_factory=list)


class RunRecord(_Strict):
    schema_: Literal["argusic.run_record/1"] = Field(alias="schema")
    attempt_id: Identifier
    cycle_id: Identifier
    purpose: Literal["board", "verdict"]
    agent_id: Identifier
    project_id: Identifier
    commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,64}$")]
    tier: Tier
    attempt_no: int = Field(ge=1)
    methodology_version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+$")]
    started_at: datetime
    ended_at: datetime
    budget_seconds: int = Field(gt=0)
    end_reason: EndReason
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
    rerun_of: Identifier | None = None
    image: str | None = None
    presentation: Presentation | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() != UTC.utcoffset(None):
            raise ValueError("must be an ISO-8601 timestamp in UTC (ending in Z or +00:00)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RunRecord:
        if self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        return self

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


class RecordError(ValueError):
    """A run record that breaks the schema; the message names the source and the field."""


def _describe(err: ValidationError, source: str) -> str:
    parts = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "(document)"
        parts.append(f"{field}: {e['msg']}")
    return f"{source}: invalid run record: " + "; ".join(parts)


def parse_record(data: dict | str | bytes, source: str = "<record>") -> RunRecord:
    """Validate one record; raise RecordError naming the offending field(s)."""
    try:
        if isinstance(data, (str, bytes)):
            return RunRecord.model_validate_json(data)
        return RunRecord.model_validate(data)
    except ValidationError as err:
        raise RecordError(_describe(err, source)) from None


def load_record_file(path: Path) -> RunRecord:
    text = path.read_text()
    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(f"{path}: not JSON: {err}") from None
    return parse_record(text, source=str(path))


def utc_now_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
