"""The cycle's judge step (issue #28): what the cycle DAG's ``judge`` and ``ingest_judgements`` tasks
call (argusic.judging.pipeline judges and moves the judgements; this reads the plan and loads the
warehouse)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from argusic.attempts.agents import known_agents
from argusic.cycle.run import records_of_plan
from argusic.judging.judges import JUDGES
from argusic.judging.pipeline import judge_records, pull_judgements
from argusic.warehouse.load_runs import ingest

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
        return {"judges": [], "judgements": 0, "not_judged": 0, "skipped_invalid": 0, "written": []}
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
    return {"judges": judge_ids, **done.counts(), "written": done.written}


def ingest_judgements_step(cycle_id: str, spec_paths: Sequence[str], judged: dict) -> dict[str, int]:
    """The cycle's ``ingest_judgements`` task: the judgements of the judges the judge step ran (``judged``,
    its result), pulled beside their records from the runs store on a cluster (also those written by
    ``argusic judge`` on the host that ran an attempt), loaded with the records (already loaded: left as
    they are). Nothing to do when the step ran no judge."""
    judge_ids = list((judged or {}).get("judges") or [])
    if not judge_ids:
        return {"judgements": 0}
    record_paths, _missing = records_of_plan(list(spec_paths))
    for record_path in record_paths:
        pull_judgements(record_path, judge_ids)
    result = ingest(record_paths, known_agents=known_agents())  # the cycle's ingest checked the records
    return {**result.counts(), "judgements": result.judgements}


__all__ = ["JudgeStepRefused", "ingest_judgements_step", "judge_step"]
