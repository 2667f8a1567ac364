"""Scheduled upkeep, called by the `argusic_maintenance` DAG: orphaned attempt containers, debris of
killed runs (scratch folders, mounts, loop devices), the evidence audit (and, with a key broker
configured, the sweep of keys of no running attempt). Every step touches only this installation's
objects (``argusic.core.settings.installation_id()``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from argusic.attempts.keys import LiteLLMKeyBroker
from argusic.attempts.leases import lease_alive
from argusic.core.runs_store import shared
from argusic.core.settings import runs_dir, warehouse_path
from argusic.publication.audit import audit_warehouse
from argusic.sandbox import containment, executor


def remove_orphaned_containers(at: datetime) -> list[str]:
    """This installation's containers that outlived their budget (plus grace) at `at`: their worker
    is gone."""
    if not executor.docker_available():
        return []
    return executor.DockerExecutor().remove_orphans(now_epoch=at.timestamp())


def sweep_debris() -> list[str]:
    """Scratch folders (mounts, loop devices, images, their containers) of this installation's runs
    whose orchestrator and reaper are both gone."""
    return containment.sweep_debris()


def running_attempt_ids(candidates: Iterable[str] = (), at: datetime | None = None) -> set[str]:
    """Attempts that may still hold a key: a live container of this installation, or a folder
    without its run record yet (starting, or its worker died before writing it — those keys expire
    at the gateway anyway). On a cluster this host sees only its own containers and folders: each of
    `candidates` (the attempts the keys name) also counts as running while its lease in the runs
    store is valid at `at` (``argusic.attempts.leases``: renewed every minute by the attempt's
    process, valid five); a killed worker's lease runs out, and its key goes at the next sweep."""
    running: set[str] = set()
    if executor.docker_available():
        import docker  # deferred: the Docker SDK loads only when an engine answers

        for container in executor.installation_containers(docker.from_env()):
            running.add(container.labels[executor.LABEL])
    # cycles' attempt folders, and reproductions' (runs/reproductions/<repro cycle>/<attempt>)
    for folder in [*runs_dir().glob("*/*"), *runs_dir().glob("reproductions/*/*")]:
        if (folder / "out").is_dir() and not (folder / "run_record.json").exists():
            running.add(folder.name)
    if shared() is not None:
        if at is None:
            raise ValueError("on a cluster the sweep needs the time it runs for (`at`) to read leases")
        running |= {a for a in candidates if lease_alive(a, at.timestamp())}
    return running


def sweep_model_keys(at: datetime | None = None) -> dict:
    """Delete every per-run key that belongs to no running attempt. Skipped (None) when no routing
    layer is configured (LITELLM_BASE_URL unset): then no per-run key can exist either. `at`: the time
    of the run (its data interval's end), against which leases are read."""
    if not os.environ.get("LITELLM_BASE_URL"):
        return {"configured": False, "deleted": []}
    broker = LiteLLMKeyBroker.from_env()
    named = {ref.attempt_id for ref in broker.list_attempt_keys() if ref.attempt_id}
    deleted = broker.sweep(running_attempt_ids(named, at))
    return {"configured": True, "deleted": [ref.alias for ref in deleted]}


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
