"""What a validation found: per table, per expectation, and the report the build gate reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FailedExpectation:
    table: str
    expectation: str  # GX type, e.g. expect_column_values_to_be_unique
    kwargs: dict[str, Any]
    why: str
    observed: dict[str, Any]  # observed_value / unexpected_count / sample / rows / error

    def message(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        obs = self.observed
        if "error" in obs:
            seen = f"could not be evaluated: {obs['error']}"
        elif "unexpected_count" in obs:
            seen = f"{obs['unexpected_count']} unexpected row(s)"
            if obs.get("sample"):
                seen += f", e.g. {obs['sample']}"
            if obs.get("rows"):
                seen += f" at {obs['rows']}"
        else:
            seen = f"observed {obs.get('observed_value')!r}"
        return f"marts.{self.table}: {self.expectation}({args}) failed [{self.why}]: {seen}"


@dataclass
class TableResult:
    table: str
    present: bool
    rows: int = 0
    evaluated: int = 0
    failures: list[FailedExpectation] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # expectations not applicable (column absent)
    note: str = ""

    @property
    def success(self) -> bool:
        return not self.failures


@dataclass
class ValidationReport:
    tables: dict[str, TableResult]
    seconds: float = 0.0

    @property
    def success(self) -> bool:
        return all(t.success for t in self.tables.values())

    @property
    def failures(self) -> list[FailedExpectation]:
        return [f for t in self.tables.values() for f in t.failures]

    @property
    def skipped_tables(self) -> list[str]:
        return [name for name, t in self.tables.items() if not t.present and t.success]

    def failure_messages(self) -> list[str]:
        return [f.message() for f in self.failures]

    def summary(self) -> str:
        lines = []
        for name, t in self.tables.items():
            if not t.present:
                lines.append(f"marts.{name}: {'MISSING' if t.failures else 'skipped'} ({t.note})")
                continue
            state = "ok" if t.success else f"FAILED {len(t.failures)}"
            extra = f"; {len(t.skipped)} not applicable" if t.skipped else ""
            lines.append(f"marts.{name}: {state} ({t.evaluated} expectations on {t.rows} rows{extra})")
        lines.extend(self.failure_messages())
        lines.append(f"expectations {'passed' if self.success else 'FAILED'} in {self.seconds:.2f} s")
        return "\n".join(lines)
