"""The attempt spec and the plan files that carry it from the planner to the attempt task."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from argusic.core.layout import plan_dir
from argusic.core.record import IdPart, Sha256
from argusic.core.runs_store import RunsStoreConflict, local_path, push, push_many
from argusic.core.safe_io import write_atomic


class RepairItemRef(BaseModel):
    """The repair item an attempt of purpose `repair` works on: found as
    `<items dir>/<project_id>/<item_id>.json` by the host that runs it, and refused there unless it
    is this revision (an item rebuilt since the plan is another item)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: IdPart
    revision: Sha256
    track: Literal["basic", "spec"]


class AttemptSpec(BaseModel):
    """Everything needed to run one attempt; small enough to travel through XCom."""

    model_config = ConfigDict(frozen=True)

    # The attempt id's parts (run record contract): they name folders and containers too.
    cycle_id: IdPart
    purpose: Literal["board", "verdict", "repair"] = "board"
    agent_id: IdPart
    project_id: IdPart
    repo_url: str
    commit: str
    tier: Literal["standard", "heavy", "gpu"]
    attempt_no: int = Field(ge=1)
    rerun_no: int = Field(0, ge=0)
    demo: bool = False
    budget_scale: float = Field(1.0, gt=0, le=1)
    # Purpose repair only (and required there): the item; project_id stays the pool project.
    item: RepairItemRef | None = None

    @model_validator(mode="after")
    def _item_with_repair(self) -> AttemptSpec:
        if (self.purpose == "repair") != (self.item is not None):
            raise ValueError("item: an attempt of purpose 'repair' names its item, and only such an attempt")
        return self

    @property
    def attempt_id(self) -> str:
        base = f"{self.cycle_id}.{self.purpose}.{self.agent_id}.{self.project_id}.a{self.attempt_no}"
        return base if self.rerun_no == 0 else f"{base}.r{self.rerun_no}"

    @property
    def label(self) -> str:
        """How ops find the attempt in the Airflow UI."""
        rerun = f" (rerun {self.rerun_no})" if self.rerun_no else ""
        item = f" / item {self.item.item_id}" if self.item is not None else ""
        return f"{self.agent_id} / {self.project_id}{item} / attempt {self.attempt_no}{rerun}"

    def rerun(self) -> AttemptSpec:
        return self.model_copy(update={"rerun_no": self.rerun_no + 1})

    @property
    def rerun_of(self) -> str | None:
        if self.rerun_no == 0:
            return None
        return self.model_copy(update={"rerun_no": self.rerun_no - 1}).attempt_id


def write_spec(spec: AttemptSpec) -> str:
    """Write one planned attempt's spec (runs/<cycle>/plan/<attempt id>.json) and return what XCom
    carries to its attempt task: the local path, or on a cluster its URI in the runs store (the attempt
    runs on another host: argusic.core.runs_store)."""
    path = plan_dir(spec.cycle_id) / f"{spec.attempt_id}.json"
    write_atomic(path, spec.model_dump_json(indent=1) + "\n")
    return push(path)


class SpecConflict(RunsStoreConflict):
    """A planned attempt's spec already holds another spec: a plan never replaces one."""


def write_specs(specs: list[AttemptSpec]) -> list[str]:
    """Write a plan's specs write-once, in one batch, and return what XCom carries, in order.

    Each spec goes to runs/<cycle>/plan/<attempt id>.json unless that file already holds the same
    bytes (a rerun of the plan changes nothing); a file holding another spec is refused by name
    (SpecConflict), before anything is written. A new file appears whole (written aside, then linked
    into place: never over another). On a cluster the files then go to the runs store in one batch of
    conditional puts with one manifest (runs_store.push_many): a spec there is never replaced either."""
    paths: list[Path] = []
    todo: list[tuple[Path, bytes]] = []
    conflicts: list[str] = []
    for spec in specs:
        path = plan_dir(spec.cycle_id) / f"{spec.attempt_id}.json"
        data = (spec.model_dump_json(indent=1) + "\n").encode()
        paths.append(path)
        try:
            held = path.read_bytes()
        except FileNotFoundError:
            todo.append((path, data))
            continue
        if held != data:
            conflicts.append(spec.attempt_id)
    if conflicts:
        more = f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
        raise SpecConflict(
            f"{len(conflicts)} planned attempt(s) already have another spec: "
            f"{', '.join(conflicts[:5])}{more}; a plan never replaces a spec (plan the changed "
            "attempts as a new cycle or a rerun)"
        )
    for folder in {path.parent for path, _ in todo}:
        folder.mkdir(parents=True, exist_ok=True)
    for path, data in todo:
        _create_file(path, data)
    folders = {spec.cycle_id for spec in specs}
    manifest = f"{folders.pop()}/plan" if len(folders) == 1 else None
    return push_many(paths, manifest)


def _create_file(path: Path, data: bytes) -> None:
    """`data` at `path` whole and only if nothing is there (another writer's same bytes are fine)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        if path.read_bytes() != data:
            raise SpecConflict(
                f"{path.stem}: another spec was written meanwhile; refusing to replace it"
            ) from None
    finally:
        tmp.unlink(missing_ok=True)


def read_spec(spec_path: str | Path) -> AttemptSpec:
    """The spec an XCom reference names: a local path, or a runs store URI (pulled into this host's
    runs folder first)."""
    return AttemptSpec.model_validate_json(local_path(spec_path).read_text())


def attempt_label(spec_path: str | Path) -> str:
    """`agent / project / attempt N` for the Airflow UI's map index; falls back to the file name."""
    try:
        return read_spec(spec_path).label
    except (OSError, ValueError):
        return label_of_attempt_id(Path(str(spec_path)).stem)


_ATTEMPT_ID = re.compile(
    r"^[^.]+\.[^.]+\.(?P<agent>[^.]+)\.(?P<project>[^.]+)\.a(?P<no>\d+)(?:\.r(?P<rerun>\d+))?$"
)


def label_of_attempt_id(attempt_id: str) -> str:
    """The label of an attempt from its id alone (`<cycle>.<purpose>.<agent>.<project>.a<N>`), the same
    as AttemptSpec.label: what the scheduler shows for an attempt that has not started yet (it reads
    the plan's paths, never the spec files). Anything else is returned as it is."""
    match = _ATTEMPT_ID.match(attempt_id)
    if not match:
        return attempt_id[:MAP_LABEL_MAX]
    rerun = f" (rerun {match['rerun']})" if match["rerun"] else ""
    return f"{match['agent']} / {match['project']} / attempt {int(match['no'])}{rerun}"[:MAP_LABEL_MAX]


MAP_LABEL_MAX = 250  # Airflow's rendered_map_index column
