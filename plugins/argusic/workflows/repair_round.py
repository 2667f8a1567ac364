"""What the repair steps of the DAGs call (``argusic_items``, and the repair attempts of ``argusic_cycle``):
find the items manifests of a pool's projects, build and validate their items, plan repair attempts,
find the grades of repair records for ingest. Airflow is never imported here; every value in and out
is a plain string, number, list or dict (XCom-safe)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from argusic.attempts.agents import driver_for
from argusic.attempts.environment import ensure_pin
from argusic.attempts.repair_run import GRADE_FILE, STANDINS
from argusic.core.evidence import EvidenceStore
from argusic.core.layout import pool_path_for
from argusic.core.record import RecordFile, load_record_file
from argusic.core.runs_store import local_path
from argusic.core.settings import PACKAGE_DIR, forge_dir
from argusic.core.spec import write_spec
from argusic.cycle.plan import budget_scale_for, demo_runs, plan_repair_specs
from argusic.cycle.run import run_with_reruns
from argusic.cycle.tally import read_run_records
from argusic.repair import item_store
from argusic.repair.grader import validate_item
from argusic.repair.items import (
    build_items,
    items_dir,
    load_item,
    load_manifest,
    load_stored_item,
    write_record,
)
from argusic.sources.forge import build_repair_forge
from argusic.sources.pool import load_pool
from argusic.warehouse.load_repair import ingest_repair_task

log = logging.getLogger(__name__)

MANIFESTS_ENV = "ARGUSIC_REPAIR_MANIFESTS"
FORGE_PREFIX = "forge/"  # a manifest's repository under the demo forge (the forge's own folder here)


def manifests_dir() -> Path:
    """ARGUSIC_REPAIR_MANIFESTS, default the person-written manifests in the package
    (``plugins/argusic/repair/manifests/<project_id>.toml``)."""
    return Path(os.environ.get(MANIFESTS_ENV) or PACKAGE_DIR / "repair" / "manifests")


def pool_project_ids(cycle_id: str | None) -> list[str] | None:
    """The projects of a cycle's recorded pool, None when no cycle is named or it has no pool yet."""
    if not cycle_id:
        return None

    path = pool_path_for(cycle_id)
    if not path.is_file():
        return None
    return [entry.project_id for entry in load_pool(path).entries]


def find_manifests(projects: list[str] | None = None, cycle_id: str | None = None) -> list[dict]:
    """[{"project_id", "manifest"}] of the projects that have an items manifest: the projects named,
    else the cycle's pool projects, else every manifest there is. A named project without a manifest
    is refused (ValueError naming it and where manifests are looked for)."""
    folder = manifests_dir()
    found = {}
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        if path.is_symlink():
            continue
        found[load_manifest(path).project_id] = str(path)
    if projects:
        missing = [p for p in projects if p not in found]
        if missing:
            raise ValueError(f"no items manifest for {', '.join(missing)} in {folder} ({MANIFESTS_ENV})")
        wanted = list(projects)
    else:
        pool = pool_project_ids(cycle_id)
        wanted = sorted(found) if pool is None else [p for p in pool if p in found]
    return [{"project_id": p, "manifest": found[p]} for p in wanted]


def manifest_repository(manifest_path: Path) -> str | None:
    """The repository to build from when the manifest's own needs resolving here: a relative
    ``forge/<…>`` names the demo forge (ARGUSIC_FORGE_DIR; the repair fixtures are built there when
    missing). None: the manifest's repository as it is."""
    repository = load_manifest(manifest_path).repository
    if not repository.startswith(FORGE_PREFIX):
        return None
    target = forge_dir() / repository[len(FORGE_PREFIX) :]
    if not target.exists():
        build_repair_forge(forge_dir())
    return str(target)


def build_project_items(manifest: str) -> list[str]:
    """Build (and store, write-once per revision) every item of one manifest; their paths."""
    path = Path(manifest)
    items = build_items(path, items_dir(), manifest_repository(path))
    return [str(items_dir() / item.project_id / f"{item.item_id}.json") for item in items]


def validate_project_items(item_paths: list[str]) -> dict:
    """Validate each item's grader (gold ×3, empty ×1, partial gold for split items); the validation
    records are written beside the items. Returns the counts and each unusable item's problems."""
    usable, unusable = [], {}
    validations = []
    for path in item_paths:
        item = load_item(Path(path))
        validation = validate_item(item, out_dir=items_dir())
        validations.append(str(items_dir() / item.project_id / f"{item.item_id}.validation.json"))
        if validation.usable:
            usable.append(item.item_id)
        else:
            unusable[item.item_id] = list(validation.problems)
            log.warning("%s: not usable: %s", item.item_id, "; ".join(validation.problems))
    return {"usable": usable, "unusable": unusable, "items": list(item_paths), "validations": validations}


def ingest_items(paths: list[str]) -> dict:
    """Load items and validation records into the warehouse
    (``argusic.warehouse.load_repair.ingest_repair_task``)."""
    return ingest_repair_task(list(paths))


# --- the cycle's repair attempts -------------------------------------------------------------------


def write_repair_plan(
    pool_path: str,
    agents: list[str],
    projects: list[str] | None = None,
    demo: bool = False,
    budget_scale: float | None = None,
    executor=None,
) -> list[str]:
    """Write one spec per repair attempt (agent × usable item of the pool's projects, or of
    `projects`) and return their paths (``argusic.core.spec.write_spec``); pins the cycle's
    environment for the agents' images like the board plan does. An empty list: nothing to repair."""
    pool = load_pool(local_path(pool_path))
    project_ids = list(projects) if projects else [e.project_id for e in pool.entries]
    demo, scale = budget_scale_for(demo, budget_scale)  # as the board's plan: a scaled budget is a demo
    specs = plan_repair_specs(
        pool.cycle_id, project_ids, agents, demo=demo, budget_scale=scale, attempts_per_item=demo_runs(demo)
    )
    if not specs:
        log.warning("cycle %s: no usable repair item for %s", pool.cycle_id, ", ".join(project_ids))
        return []
    roles = {"agents" if driver_for(agent).external else "runner" for agent in agents}
    ensure_pin(pool.cycle_id, executor, roles, specs[0].demo, specs[0].budget_scale)
    return [write_spec(spec) for spec in specs]


def grade_files(record_paths: Sequence[str | RecordFile]) -> list[str]:
    """The grade records of the repair run records among `record_paths`, as files for ingest: the
    attempt folder's own copy when it holds the referenced bytes, else fetched from the evidence store
    (another host graded it) and checked against the record's sha256. Records without a grade (invalid,
    not graded) have none."""
    found = []
    store = None
    for measured in read_run_records(record_paths):
        record_path, record = measured.path, measured.record
        if record.repair is None or record.repair.grade is None:
            continue
        ref = record.repair.grade
        local = Path(record_path).parent / GRADE_FILE
        if not (local.is_file() and not local.is_symlink() and _sha256(local) == ref.sha256):
            store = store or EvidenceStore()
            data = store.read(ref.uri)
            if hashlib.sha256(data).hexdigest() != ref.sha256:
                raise ValueError(f"{ref.uri}: does not hold the grade {record.attempt_id} references")
            tmp = local.with_name(f".{local.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(local)
        found.append(str(local))
    return found


def repair_ingest_paths(record_paths: Sequence[str | RecordFile]) -> list[str]:
    """What ingest loads for the repair attempts among `record_paths`: their grade records, and the
    items folder of each project they repaired (items and validations: a grade is refused unless its
    item revision is loaded with it or before, so a cycle never depends on argusic_items having run)."""
    records = read_run_records(record_paths)  # each parsed once, for both
    grades = grade_files(records)
    projects = set()
    for record in (r.record for r in records):
        if record.repair is not None and record.repair.grade is not None:
            projects.add(record.project_id)
            pull_stored_item(record.project_id, record.repair.item_id, record.repair.item_revision)
    folders = [str(items_dir() / p) for p in sorted(projects) if (items_dir() / p).is_dir()]
    return [*folders, *grades] if grades else []


def pull_stored_item(project_id: str, item_id: str, revision: str) -> None:
    """On a cluster, bring an item revision and its validation from the runs store into this host's
    items folder when it lacks them (the host that built them may be another): the revision as the
    items folder keeps it (``<project>/revisions/<item>/<revision>.json``, never replaced) and the
    validation beside the item when there is none. Single machine: nothing to do."""
    if item_store.active() is None:
        return
    folder = items_dir() / project_id
    kept = folder / "revisions" / item_id / f"{revision}.json"
    if not kept.is_file():
        load_stored_item(project_id, item_id, revision)  # refused unless sha256 and revision agree
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_record(kept, item_store.read_item_bytes(project_id, item_id, revision).decode())
    validation = folder / f"{item_id}.validation.json"
    if not validation.exists():
        raw = item_store.read_validation_bytes(project_id, item_id, revision)
        if raw is not None:
            write_record(validation, raw.decode())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- one repair round without Airflow (the demo's way) ----------------------------------------------


def repair_round(
    cycle_id: str,
    projects: list[str],
    agents: list[str] | None = None,
    executor=None,
    demo: bool = True,
) -> dict:
    """Build and validate the items of `projects` (their manifests), plan and run one repair attempt
    per agent × usable item (default agents: the demo stand-ins), and return what happened:
    {"items": {project: [usable item ids]}, "unusable": {item: problems}, "records": [paths],
    "grades": [paths], "verdicts": {attempt id: verdict or None}}. What `argusic demo` can call to
    show the repair track end to end; resumable like every attempt (measured attempts are not rerun)."""
    agents = list(agents or sorted(STANDINS))
    usable: dict[str, list[str]] = {}
    unusable: dict[str, list[str]] = {}
    for found in find_manifests(projects):
        validated = validate_project_items(build_project_items(found["manifest"]))
        usable[found["project_id"]] = validated["usable"]
        unusable |= validated["unusable"]
    records: list[str] = []
    planned = plan_repair_specs(
        cycle_id, list(projects), agents, demo=demo, budget_scale=1 / 360, attempts_per_item=demo_runs(demo)
    )
    for spec in planned:
        records += [str(p) for p in run_with_reruns(spec, executor)]
    grades = grade_files(records)
    verdicts = {}
    for path in records:
        record = load_record_file(Path(path))
        grade = Path(path).parent / "grade.json"
        verdicts[record.attempt_id] = (
            json.loads(grade.read_bytes()).get("verdict") if record.repair.grade and grade.is_file() else None
        )
    return {"items": usable, "unusable": unusable, "records": records, "grades": grades, "verdicts": verdicts}
