"""Dispute corrections: an upheld dispute reruns the attempt as its next run (the same one attempt path
as every planned attempt) and loads what it made."""

from __future__ import annotations

from datetime import UTC, timedelta
from pathlib import Path

from argusic.core.layout import plan_dir
from argusic.core.record import load_record_file, make_attempt_id, parse_attempt_id
from argusic.core.spec import planned_spec_reference, read_spec
from argusic.cycle.run import run_with_reruns
from argusic.review.disputes import DisputeError, get
from argusic.warehouse import decisions
from argusic.warehouse.load_runs import ingest_records


def correction_spec(attempt_id: str):
    """The AttemptSpec of the correction rerun: the disputed attempt's planned spec (the spec the
    cycle's plan holds for the attempt id without .r<n>: in a pack, or a single file of a plan written
    before packs; on a cluster the runs store's plan), as its next run."""
    parts = parse_attempt_id(attempt_id)
    base = make_attempt_id(
        str(parts["cycle_id"]),
        str(parts["purpose"]),
        str(parts["agent_id"]),
        str(parts["project_id"]),
        int(parts["attempt_no"]),
    )
    path = planned_spec_reference(str(parts["cycle_id"]), base)
    if path is None:
        raise DisputeError(
            f"no planned spec for {base} in {plan_dir(str(parts['cycle_id']))}: the attempt cannot be "
            "rerun from its plan"
        )
    spec = read_spec(path).model_copy(update={"rerun_no": int(parts["rerun_no"]) + 1})
    if spec.rerun_of != attempt_id:
        raise DisputeError(f"the planned spec {path} does not rerun {attempt_id}")
    return spec


def correct(dispute_id: str, executor=None, db_path: Path | None = None, live_log: bool = False) -> list[str]:
    """Carry out an environment_at_fault ruling: rerun the attempt (the one attempt path, bounded
    reruns if the rerun itself is invalid), load the records, and record the rerun's id with the
    ruling (a second row of the dispute, at the time the rerun ended). Returns the record paths.
    Idempotent: a rerun measured before is not measured again. The caller builds the warehouse."""
    dispute = get(dispute_id, db_path)
    if dispute.ruling != "environment_at_fault":
        raise DisputeError(
            f"dispute {dispute_id} is {'ruled ' + dispute.ruling if dispute.ruling else 'not ruled yet'}: "
            "only an environment_at_fault ruling is corrected"
        )
    spec = correction_spec(dispute.attempt_id)
    paths = [str(p) for p in run_with_reruns(spec, executor, live_log=live_log)]
    ingest_records(paths)
    first = load_record_file(Path(paths[0]))
    ended = first.ended_at.astimezone(UTC).replace(tzinfo=None)
    decisions.record(
        "dispute_rulings",
        {
            "dispute_id": dispute_id,
            "ruling": "environment_at_fault",
            "rerun_attempt_id": spec.attempt_id,
            "decided_by": dispute.ruled_by,
            # when the correction exists; after the ruling's own row (a key is (dispute, time))
            "decided_at": max(ended, dispute.ruled_at + timedelta(seconds=1)),
            "note": dispute.ruling_note,
        },
        db_path,
    )
    return paths
