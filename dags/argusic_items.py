"""Repair items (issue #13): for the projects that have an items manifest, build the items from their
merged pull requests, validate the grader on each, and load items and validations into the warehouse.
Thin: scheduling, fan-out and wiring only; the work is in argusic.repair (dag_tasks, items, grader)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from argusic.orchestration.dag_support import ATTEMPT_TASK_ARGS, WAREHOUSE_TASK_ARGS, retry_delay
from argusic.orchestration.dag_support import fail_at_once as _fail_at_once

DOC_MD = """
### Argusic repair items (manual)

Turns the merged pull requests named in a project's items manifest
(`plugins/argusic/repair/manifests/<project>.toml`, written by a person) into repair items, and
validates the grader on each before any agent sees it.

1. **find_manifests** — the projects named in `projects`, else the pool projects of `cycle_id`, else
   every manifest; a named project without a manifest fails at once.
2. **build_items** — one task per project (attempt workers: tests run in grader containers, networking
   off): base, test and gold patches, fail-to-pass and pass-to-pass from the three test states, split
   items for bundled pull requests. Written once per revision under `ARGUSIC_ITEMS_DIR`.
3. **validate_items** — per project: the gold patch three times (resolved), the empty patch once
   (unresolved), a split item's partial gold patch (resolved). Only usable items reach agents
   (`argusic_cycle` with `repair: true`); the others are kept with their problems.
4. **ingest** — items and validation records into `raw.repair_items` / `raw.repair_validations`
   (one-slot warehouse pool).
"""

# Building and validating run test containers: on the attempt workers (the hosts with a Docker
# engine), with the attempt tasks' retries; labelled by what they work on.
CONTAINER_TASK_ARGS = {k: v for k, v in ATTEMPT_TASK_ARGS.items() if k != "map_index_template"}


@dag(
    dag_id="argusic_items",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["argusic", "repair"],
    doc_md=DOC_MD,
    default_args={"owner": "argusic", "retries": 2, "retry_delay": retry_delay(timedelta(minutes=1))},
    params={
        "cycle_id": Param(
            None,
            type=["null", "string"],
            title="Cycle id",
            description="Build items for this cycle's pool projects that have an items manifest. Empty "
            "(and no projects named): every manifest.",
        ),
        "projects": Param(
            None,
            type=["null", "array"],
            items={"type": "string"},
            title="Projects",
            description="Project ids whose manifests to build (plugins/argusic/repair/manifests/<id>.toml, "
            "or ARGUSIC_REPAIR_MANIFESTS), e.g. repairkit. Empty: the pool's, or every manifest.",
        ),
    },
)
def argusic_items():
    @task
    def find_manifests(params: dict) -> list[str]:
        from argusic.repair.items import ItemError
        from argusic.workflows.repair_round import find_manifests as manifests

        try:
            return [m["manifest"] for m in manifests(params.get("projects"), params.get("cycle_id"))]
        except (ItemError, ValueError) as err:
            raise _fail_at_once(err) from None  # a bad manifest or name: no retry helps

    @task(**CONTAINER_TASK_ARGS, map_index_template="{{ task.op_kwargs['manifest'].rsplit('/', 1)[-1] }}")
    def build_items(manifest: str) -> list[str]:
        from argusic.repair.items import ItemError
        from argusic.workflows.repair_round import build_project_items

        try:
            return build_project_items(manifest)
        except ItemError as err:  # the manifest or the repository's history refuses: a person fixes it
            raise _fail_at_once(err) from None

    @task(**CONTAINER_TASK_ARGS)
    def validate_items(item_paths: list[str]) -> dict:
        from argusic.workflows.repair_round import validate_project_items

        return validate_project_items(item_paths)

    @task(**WAREHOUSE_TASK_ARGS)
    def ingest(validated: list[dict]) -> dict:
        from argusic.workflows.repair_round import ingest_items

        paths = [p for v in validated for p in (*v["items"], *v["validations"])]
        return ingest_items(paths)

    built = build_items.expand(manifest=find_manifests())
    ingest(validate_items.expand(item_paths=built))


argusic_items()
