"""The cycle's judge step (issue #28): what the cycle DAG's ``judge`` and ``ingest_judgements`` tasks
call (argusic.judging.pipeline judges and moves the judgements; this reads the plan and loads the
warehouse)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from argusic.cycle.run import records_of_plan
from argusic.judging.judges import JUDGES
from argusic.judging.pipeline import judge_records, pull_judgements
from argusic.warehouse.load_runs import ingest_cycle_records

log = logging.getLogger("argusic.judging")


class JudgeStepRefused(ValueError):
    """The judge step's params cannot work (an unknown judge, a scripts or replay folder that is not
    one): a retry cannot help."""


def judge_step(cycle_id: str, spec_paths: Sequence[str], params: dict) -> dict:
    """The cycle's ``judge`` task (after ingest): the judges of param ``judges`` (none: nothing to do)
    on every valid attempt of the plan, with the judgement scripts of param ``judge_scripts`` (a
    folder on the workers: the real CLIs against the model double) or, without it, through the routing
    gateway. Counts and the attempts not judged (each with its reason; they do not fail the step:
    judges are advice). JudgeStepRefused for params that cannot work."""

    judge_ids = [str(j).strip() for j in params.get("judges") or [] if str(j).strip()]
    if not judge_ids:
        return {"judgements": 0, "not_judged": 0, "skipped_invalid": 0, "written": []}
    unknown = [j for j in judge_ids if j not in JUDGES]
    if unknown:
        raise JudgeStepRefused(f"unknown judges {unknown} (known: {', '.join(JUDGES)})")
    scripts = params.get("judge_scripts")
    scripts_dir = Path(scripts) if scripts else None
    if scripts_dir is not None and (
        not scripts_dir.is_absolute() or scripts_dir.is_symlink() or not scripts_dir.is_dir()
    ):
        raise JudgeStepRefused(f"judge_scripts {scripts!r}: not an absolute path of a folder on this worker")
    record_paths, _missing = records_of_plan(list(spec_paths))
    done = judge_records(record_paths, judge_ids, scripts_dir=scripts_dir)
    log.info("cycle %s: %s", cycle_id, done.counts())
    return {**done.counts(), "written": done.written}


def ingest_judgements_step(cycle_id: str, spec_paths: Sequence[str], judged: dict) -> dict[str, int]:
    """The cycle's ``ingest_judgements`` task: the judgements of the judge step, pulled beside their
    records (on a cluster), loaded with them (the records are already loaded: left as they are)."""

    if not judged or not judged.get("written"):
        return {"judgements": 0}
    record_paths, _missing = records_of_plan(list(spec_paths))
    for record_path in record_paths:
        pull_judgements(record_path)
    return ingest_cycle_records(cycle_id, record_paths)


__all__ = ["JudgeStepRefused", "ingest_judgements_step", "judge_step"]
