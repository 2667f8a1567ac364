"""Model judges as a step of the cycle (issue #28): judging many attempts, and their judgements in
the runs store on a cluster.

What the cycle's tasks call is ``argusic.workflows.judging_step`` (it reads the plan and loads the
warehouse, layers above this package).

- ``judge_records``: run the judges (``argusic.judging.judges.judge_attempt``) on the attempts of
  some run records, each attempt on its own: one that cannot be judged is named with its reason, the
  others are judged. Every judgement written is pushed to the runs store (``push_judgements``).
- On a cluster (ARGUSIC_RUNS_URL set) a judgement is the object ``<cycle>/<attempt>/judging/
  <judge_id>.json`` of the runs store (replaced when a judge runs again: judgements are recomputed,
  run records are write-once); ``pull_judgements`` brings an attempt's judgements beside its pulled
  record, where ingest loads them (``argusic.warehouse.load_runs.ingest``: ``judging/*.json`` beside
  each record). On one machine both are no-ops: the files are where ingest looks.
- An attempt is judged only where its folder is (``out/``, ``render/``: the blinded evidence folder is
  built from them). On a cluster that is the host that ran it; a judge step on another host names
  such attempts as not judged instead of judging an empty folder.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.record import RecordError, load_record_file
from argusic.core.runs_store import RunsStoreError, key_of_local, pull, push
from argusic.core.tasks import TaskDefinitionError
from argusic.judging.double import judge_scripts
from argusic.judging.evidence import EvidenceError
from argusic.judging.judges import JUDGES, JUDGING_DIR, JudgeError, judge_attempt

log = logging.getLogger("argusic.judging")


@dataclass
class JudgeRun:
    """What a judge step did: the judgements written (store URIs on a cluster, else local paths) and the
    attempts it could not judge, each with its reason."""

    written: list[str] = field(default_factory=list)
    not_judged: dict[str, str] = field(default_factory=dict)
    skipped_invalid: int = 0

    def counts(self) -> dict:
        return {
            "judgements": len(self.written),
            "not_judged": len(self.not_judged),
            "skipped_invalid": self.skipped_invalid,
            "not_judged_attempts": dict(list(self.not_judged.items())[:50]),
        }


def push_judgements(paths: Iterable[Path]) -> list[str]:
    """Push judgement files of this host's runs folder to the runs store (replacing an older judgement
    of the same judge); their references. Single machine: the local paths."""
    return [push(path) for path in paths]


def pull_judgements(record_path: str | Path, judge_ids: Iterable[str] | None = None) -> list[Path]:
    """On a cluster, the attempt's judgements (``judging/<judge_id>.json`` of every known judge) from the
    runs store beside its pulled record; the local paths there. None pulled is fine (judges are advice).
    Single machine: the judgements already beside the record."""
    folder = Path(record_path).parent / JUDGING_DIR
    found = []
    for judge_id in judge_ids if judge_ids is not None else JUDGES:
        try:
            path = pull(key_of_local(folder / f"{judge_id}.json"))
        except (RunsStoreError, OSError, ValueError) as err:
            log.warning("%s: judgement of %s not pulled: %s", folder.parent.name, judge_id, err)
            continue
        if path is not None:
            found.append(path)
    return found


def replay_sessions(replay_dir: Path, attempt_id: str, judge_ids: list[str]) -> dict[str, Path]:
    """The recorded session of each judge for this attempt: ``<dir>/<attempt_id>/<judge>.jsonl`` wins
    over ``<dir>/<judge>.jsonl``; links are not followed."""
    found: dict[str, Path] = {}
    for judge_id in judge_ids:
        for candidate in (replay_dir / attempt_id / f"{judge_id}.jsonl", replay_dir / f"{judge_id}.jsonl"):
            if candidate.is_file() and not candidate.is_symlink():
                found[judge_id] = candidate
                break
    return found


def judge_records(
    record_paths: Sequence[str | Path],
    judge_ids: Sequence[str],
    *,
    scripts_dir: Path | None = None,
    replay_dir: Path | None = None,
) -> JudgeRun:
    """Run the judges on the attempt of each run record (see the module's docs). ``scripts_dir``:
    judgement scripts (``argusic.judging.double.judge_scripts``: the real CLI against the model
    double); ``replay_dir``: recorded sessions (no CLI runs); neither: the real CLI through the routing
    gateway. Invalid attempts (measured again by a rerun) are not judged."""
    done = JudgeRun()
    ids = list(judge_ids)
    for record_path in record_paths:
        attempt_dir = Path(record_path).parent
        name = attempt_dir.name
        try:
            record = load_record_file(Path(record_path))
            if record.invalid_reason is not None:
                done.skipped_invalid += 1
                continue
            out = attempt_dir / "out"
            if out.is_symlink() or not out.is_dir():
                raise JudgeError(
                    f"no attempt folder here ({out}): its evidence is on the host that ran it; judge it there"
                )
            replay = replay_sessions(replay_dir, name, ids) if replay_dir is not None else None
            scripts = judge_scripts(scripts_dir, name, ids) if scripts_dir is not None else None
            paths = judge_attempt(attempt_dir, ids, replay, scripts)
        except (JudgeError, EvidenceError, RecordError, TaskDefinitionError, OSError) as err:
            done.not_judged[name] = str(err)[:1000]
            log.warning("%s: not judged: %s", name, err)
            continue
        done.written += push_judgements(paths)
    return done


__all__ = ["JudgeRun", "judge_records", "pull_judgements", "push_judgements", "replay_sessions"]
