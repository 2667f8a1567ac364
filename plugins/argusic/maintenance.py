"""Scheduled upkeep, called by the `argusic_maintenance` DAG: orphaned attempt containers, the
evidence audit (and, with a key broker configured, the sweep of keys of no running attempt)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from argusic.audit import audit_warehouse
from argusic.settings import runs_dir, warehouse_path


def remove_orphaned_containers(at: datetime) -> list[str]:
    """Containers that outlived their budget (plus grace) at `at`: their worker is gone."""
    from argusic.executor import DockerExecutor, docker_available

    if not docker_available():
        return []
    return DockerExecutor().remove_orphans(now_epoch=at.timestamp())


def audit_evidence(run_day: str) -> dict:
    """Re-hash every evidence object the warehouse knows; the report lands in runs/audit/<day>.json.
    Raises when anything no longer matches, so the failure is visible in the UI."""
    if not warehouse_path().exists():
        return {"checked": 0, "ok": True, "report": None}
    out = runs_dir() / "audit" / f"{run_day}.json"
    report = audit_warehouse(out=out)
    if not report.ok:
        problems = "; ".join(f"{f.attempt_id} {f.kind}: {f.problem}" for f in report.findings[:20])
        raise RuntimeError(
            f"evidence audit: {len(report.findings)} object(s) do not match: {problems} (see {out})"
        )
    return {"checked": report.checked, "ok": True, "report": str(Path(out))}
