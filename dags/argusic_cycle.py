"""One benchmark cycle: pool → plan → (agent × project × attempt) Docker attempts → ingest → build →
publish. Thin: scheduling, fan-out and wiring only; every rule lives in the argusic package."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from argusic.orchestration.dag_support import (
    ATTEMPT_QUEUE,
    ATTEMPT_TASK_ARGS,
    TALLY_TASK_ARGS,
    WAREHOUSE_QUEUE,
    WAREHOUSE_TASK_ARGS,
    budget_params,
    retry_delay,
    run_attempt_task,
    tally_task,
)
from argusic.orchestration.dag_support import attempt_label as _attempt_label
from argusic.orchestration.dag_support import cycle_id_of_context as _cycle_id
from argusic.orchestration.dag_support import fail_at_once as _fail_at_once
from argusic.orchestration.forms import PublicationApproval

DOC_MD = """
### Argusic cycle (manual, one run per cycle — or per agent / shard of a cycle)

**Trigger it with the cycle in the run id**, so every list of runs shows which cycle a run is:
Run ID `cycle__<cycle_id>__<time>` (e.g. `cycle__2026-12-ui__20261201T1200Z`) in the trigger
form's advanced options, `airflow dags trigger argusic_cycle --run-id …`, or `dag_run_id` in the
REST API. A run id that names a cycle sets `cycle_id` when the param is empty; the two may not
disagree. The demo: `{"cycle_id": "2026-12-ui", "demo": true, "pool_size": 3}` (docs/airflow.md).

1. **prepare_pool** — the cycle's pool: param `pool`, else the pool recorded for the cycle (by
   `argusic_pool_rotation`, `argusic demo` or an earlier run), else drawn now from `catalogue`
   (`pool_size` projects): every candidate's repository is mirrored and its pinned commit verified
   first; a candidate that fails is left out with its reason. A bad catalogue, or a pool_size /
   catalogue other than the recorded pool's, fails at once (no retries) saying how to go on.
2. **plan** — one AttemptSpec per attempt, packed (`runs/<cycle>/plan/`: content-addressed packs and
   a manifest; XCom carries one reference per attempt); refuses real budgets on the demo forge's
   fixtures (set `demo`), an empty plan, and a plan above `[core] max_map_length`.
3. **run_attempt** — one task instance per attempt, labelled *agent / project / attempt N* (also
   before it starts). Its log shows the attempt's own log as it grows (masked: keys and tokens
   removed, terminal escapes stripped, lines cut) and ends with the final state, the agent's report
   and the evidence. When it ends, its label gives the outcome in capitals, as the rubric will class
   it: `✓ PASS: ran, verified for real`, `✗ FAIL: install failed`, `✗ TIMEOUT at 5400 s`,
   `INVALID: …` (search the run_attempt list for `FAIL`). **Green** = measured and recorded
   (whatever the agent achieved: read the label); **skipped** = invalid even after the bounded
   reruns (our tooling failed; kept with its reason, loaded, never scored); **red** = could not be
   measured at all (nothing is published). Retries cover infrastructure only; a finished attempt is
   never measured twice.
3b. **tally** — once every attempt task is done: its label is the run's summary, *9 attempts: 3
   pass · 4 fail · 1 timeout · 1 invalid*; its log lists every attempt by outcome, failures first
   (Browse → Task Instances, task `tally`: one line per run). Beside ingest, never in its way.
4. **ingest** → **build** (dbt build + expectations) — in the one-slot pool `argusic_warehouse`
   (DuckDB has a single writer). Ingest loads every record of the plan, reruns included; a run
   whose attempts are all invalid fails here: nothing is loaded or published.
4b. **judge** → **ingest_judgements** (opt-in, issue #28: param `judges`) — Layer 2's model judges
   (advice, never a score) on every valid attempt of the plan, after ingest: each judge's CLI reads
   the attempt's blinded evidence in its locked container; with `judge_scripts` (a folder of
   judgement scripts on the workers) the real CLI runs against the scripted model double, else
   through the routing gateway. An attempt that cannot be judged is named in the task's log and
   result without failing it. The judgements go to the runs store on a cluster and are loaded by
   ingest_judgements (one-slot warehouse pool) before the build. No `judges`: both do nothing. An
   attempt is judged where its folder is (the host that ran it); on a cluster of several attempt
   workers the others' attempts are named as not judged (run `argusic judge` on their hosts).
5. **prepare_publication** — the board as it would be published (expectations re-checked, evidence
   audited) and its sha256, and what changed since the cycle's last publication.
6. **approve_publication** — waits for a person (Browse → Required actions; no worker slot held):
   the form links the **preview** of the exact pages this board publishes (built by
   prepare_publication into the previews folder, nothing published; docs/airflow.md) and shows the
   changes (agents added/removed, scores, ranks, exclusions by review, corrections), each agent's
   pass rate with its failures, timeouts and invalid attempts, and why every "—" is one;
   **Approve** or **Reject** with a note, recorded (who, when, why): the task's log and result
   say `RECORDED: <button> … by <user> …`. Reject: publish is skipped and nothing is published.
7. **publish** — only the approved board, byte for byte (refused if it changed since): writes
   `<ARGUSIC_PUBLISH_DIR>/<cycle>/board.json`, and its log lists this run's attempts **as the
   rubric scored them**: outcome, points, score.

**Repair attempts** (opt-in, issue #13): with `repair: true`, **plan_repair** plans one attempt per
agent (`repair_agents`, else `agents`) × usable repair item of the pool's projects (or of
`repair_projects`; items from `argusic_items`), and **run_repair_attempt** runs each: a fresh working
copy of the item's base, the item's problem statement (and interface spec on the spec track), the
patch collected, stored as evidence and graded in a fresh container. Their records (purpose repair)
and grades go through **ingest**; they never reach the board. In a demo, `repair_agents:
["repair-demo-gold", "repair-demo-none"]` are stand-ins (no model) that replay the gold patch or
change nothing.

Big cycles: split with one run per agent (`agents: ["x"]`) and/or `shard_count` > 1 (docs/airflow.md).
"""


@dag(
    dag_id="argusic_cycle",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=4,
    tags=["argusic", "cycle"],
    doc_md=DOC_MD,
    user_defined_macros={"attempt_label": _attempt_label},
    default_args={
        "owner": "argusic",
        "retries": 2,
        "retry_delay": retry_delay(timedelta(minutes=1)),
    },
    params={
        "cycle_id": Param(
            None,
            type=["null", "string"],
            title="Cycle id",
            description="YYYY-MM[-suffix], e.g. 2026-12-ui. Empty: the cycle named by the run id "
            "(cycle__<cycle_id>__<time>), else the month of the run. A cycle's pool never changes once "
            "drawn: for another pool_size or catalogue, use a new cycle id.",
        ),
        "agents": Param(
            ["readme-runner"],
            type="array",
            items={"type": "string"},
            minItems=1,
            title="Agents",
            description="Agent ids (dbt_project/seeds/agents.csv), e.g. readme-runner, "
            "readme-runner-norecover. One run per agent splits a big cycle.",
        ),
        "conditions": Param(
            {},
            type="object",
            additionalProperties={"type": "string"},
            title="Conditions",
            description='Seed 002\'s comparison condition per agent, e.g. {"readme-runner": "variant"} '
            "(baseline | variant | external-<name>). Empty: each agent under its own (baseline for the "
            "reference harness, external-<name> for a CLI).",
        ),
        "catalogue": Param(
            None,
            type=["null", "string"],
            title="Catalogue",
            description="Absolute path of a candidate catalogue (docs/catalogue.md) on the workers. Empty: "
            "the pool recorded for the cycle, else ARGUSIC_CATALOGUE, else the demo forge (fixture "
            "projects, made if missing; they need demo: true).",
        ),
        "pool": Param(
            None,
            type=["null", "string"],
            title="Pool file",
            description="An existing pool.json of this cycle to use as is (instead of catalogue).",
        ),
        "pool_size": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            title="Pool size",
            description="Projects to draw when the cycle has no pool yet. Empty: the largest 80/20 pool.",
        ),
        **budget_params("flagged on the board"),
        "attempts_per_pair": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            title="Attempts per pair",
            description="Attempts per agent x project. Empty: 3, the methodology's (fewer: incomplete sets).",
        ),
        "repair": Param(
            False,
            type="boolean",
            title="Repair attempts",
            description="On: also run repair attempts (agent x usable repair item of the pool's projects), "
            "graded apart from the board. Off: the board's attempts only.",
        ),
        "repair_agents": Param(
            None,
            type=["null", "array"],
            items={"type": "string"},
            title="Repair agents",
            description="Agents of the repair attempts (external CLIs; in demos the stand-ins "
            "repair-demo-gold, repair-demo-none). Empty: the run's agents.",
        ),
        "repair_projects": Param(
            None,
            type=["null", "array"],
            items={"type": "string"},
            title="Repair projects",
            description="Projects whose usable repair items to attempt (items built by argusic_items). "
            "Empty: the pool's projects.",
        ),
        "judges": Param(
            [],
            type="array",
            items={"type": "string"},
            title="Model judges",
            description="Layer 2 judges to run after ingest (advice, never a score), e.g. judge-claude, "
            "judge-codex, judge-claude-2. Empty: no judging.",
        ),
        "judge_scripts": Param(
            None,
            type=["null", "string"],
            title="Judgement scripts",
            description="Absolute path of a folder of judgement scripts on the workers (<judge_id>.json "
            "or <attempt_id>/<judge_id>.json): the judges' real CLIs answer from the model double. "
            "Empty: the routing gateway (real models).",
        ),
        "shard_index": Param(
            0,
            type="integer",
            minimum=0,
            title="Shard index",
            description="This run's shard, 0 .. shard_count - 1 (projects dealt round-robin).",
        ),
        "shard_count": Param(
            1,
            type="integer",
            minimum=1,
            title="Shard count",
            description="Runs the cycle is split into (one run maps at most [core] max_map_length attempts).",
        ),
    },
)
def argusic_cycle():
    @task
    def prepare_pool(params: dict) -> str:
        from argusic.cycle.ids import ConfigurationError
        from argusic.cycle.pools import resolve_pool
        from argusic.sources.pool import CatalogueError

        try:
            cycle_id = _cycle_id(params)
            return resolve_pool(
                cycle_id, params.get("pool"), params.get("catalogue"), params.get("pool_size")
            )
        except (CatalogueError, ConfigurationError, ValueError) as err:
            raise _fail_at_once(err) from None  # a retry cannot fix a catalogue or a param

    @task
    def plan(pool_path: str, params: dict) -> list[str]:
        from airflow.sdk import conf
        from argusic.attempts.environment import EnvironmentError_
        from argusic.cycle.plan import (
            ConfigurationError,
            NothingPlanned,
            PlanTooLarge,
            require_scaled_budgets_on_the_forge,
            write_plan,
        )

        try:
            require_scaled_budgets_on_the_forge(
                pool_path, bool(params.get("demo")), params.get("budget_scale")
            )
            return write_plan(
                pool_path,
                list(params["agents"]),
                attempts_per_pair=params.get("attempts_per_pair"),
                demo=bool(params.get("demo")),
                shard_index=int(params.get("shard_index") or 0),
                shard_count=int(params.get("shard_count") or 1),
                max_specs=conf.getint("core", "max_map_length", fallback=1024),
                budget_scale=params.get("budget_scale"),
                conditions=params.get("conditions") or None,
            )
        except (PlanTooLarge, NothingPlanned, ConfigurationError, ValueError, EnvironmentError_) as err:
            raise _fail_at_once(err) from None  # a retry cannot help: re-plan the run

    @task(**ATTEMPT_TASK_ARGS)
    def run_attempt(spec_path: str) -> list[str]:
        return run_attempt_task(spec_path)

    @task(**TALLY_TASK_ARGS)
    def tally(scope: str) -> dict:
        return tally_task(plan_task_id="plan")

    @task
    def plan_repair(pool_path: str, params: dict) -> list[str]:
        if not params.get("repair"):
            return []  # opt-in: nothing mapped, run_repair_attempt is skipped
        from argusic.attempts.environment import EnvironmentError_
        from argusic.repair.items import ItemError
        from argusic.workflows.repair_round import write_repair_plan

        try:
            return write_repair_plan(
                pool_path,
                list(params.get("repair_agents") or params["agents"]),
                projects=params.get("repair_projects"),
                demo=bool(params.get("demo")),
                budget_scale=params.get("budget_scale"),
            )
        except (ItemError, ValueError, EnvironmentError_) as err:  # RepairRefused is a ValueError
            raise _fail_at_once(err) from None

    @task(**ATTEMPT_TASK_ARGS)
    def run_repair_attempt(spec_path: str) -> list[str]:
        return run_attempt_task(spec_path)

    @task(**WAREHOUSE_TASK_ARGS, trigger_rule="none_failed")
    def ingest(spec_paths: list[str], repair_spec_paths: list[str], params: dict) -> dict[str, int]:
        from argusic.cycle.run import records_of_plan
        from argusic.cycle.tally import CycleFailed, read_run_records
        from argusic.warehouse.load_runs import ingest_cycle_records
        from argusic.workflows.repair_round import repair_ingest_paths

        cycle_id = _cycle_id(params)
        record_paths, missing = records_of_plan([*spec_paths, *repair_spec_paths])
        try:
            if missing:
                raise CycleFailed(
                    f"cycle {cycle_id}: {len(missing)} planned attempt(s) have no run record (their task "
                    f"was marked done without running?): {', '.join(missing[:10])}. Clear those tasks."
                )
            records = read_run_records(record_paths)  # each parsed once for the whole task
            # the repair attempts' grades (beside their records) load with them: one lock, one transaction
            repair = repair_ingest_paths(records) if repair_spec_paths else []
            return ingest_cycle_records(cycle_id, records, repair)
        except CycleFailed as err:
            raise _fail_at_once(err) from None  # nothing valid: never an empty board

    @task(queue=ATTEMPT_QUEUE)
    def judge(
        ingested: dict[str, int], spec_paths: list[str], repair_spec_paths: list[str], params: dict
    ) -> dict:
        from argusic.workflows.judging_step import JudgeStepRefused, judge_step

        try:
            return judge_step(_cycle_id(params), [*spec_paths, *repair_spec_paths], params)
        except JudgeStepRefused as err:
            raise _fail_at_once(err) from None  # a retry cannot fix a param

    @task(**WAREHOUSE_TASK_ARGS)
    def ingest_judgements(
        judged: dict, spec_paths: list[str], repair_spec_paths: list[str], params: dict
    ) -> dict[str, int]:
        from argusic.workflows.judging_step import ingest_judgements_step

        return ingest_judgements_step(_cycle_id(params), [*spec_paths, *repair_spec_paths], judged)

    @task(**WAREHOUSE_TASK_ARGS)
    def build(ingested: dict[str, int], judgements: dict[str, int]) -> str:
        from argusic.publication.build_worker import build_warehouse_summary

        return build_warehouse_summary()

    @task(**WAREHOUSE_TASK_ARGS)
    def prepare_publication(built: str, params: dict) -> dict:
        from argusic.review.publication import prepare
        from argusic.warehouse.dbt_build import PublicationBlocked

        try:
            return prepare(_cycle_id(params)).to_dict()
        except PublicationBlocked as err:
            raise _fail_at_once(err) from None  # nothing publishable: no form to answer

    @task(**WAREHOUSE_TASK_ARGS)
    def publish(prepared: dict, spec_paths: list[str], params: dict) -> str:
        import logging

        from argusic.publication.board import published_attempt_lines
        from argusic.review.publication import publish_cycle_board
        from argusic.warehouse.dbt_build import PublicationBlocked

        cycle_id = _cycle_id(params)
        try:  # only the board the person approved, exactly (its sha256)
            published = publish_cycle_board(cycle_id, prepared["board_sha256"])
        except PublicationBlocked as err:
            raise _fail_at_once(err) from None  # changed since approved: trigger again, approve again
        for line in published_attempt_lines(cycle_id, spec_paths):
            logging.getLogger("argusic.publish").info("%s", line)
        return published

    @task(queue=WAREHOUSE_QUEUE)  # where publish wrote the files (no warehouse slot: it reads none)
    def share_images(published: str, params: dict) -> str:
        # deferred: the renderer (Pillow, pyte, ffmpeg) is imported by this step only
        from argusic.review.publication import share_published_cycle

        return share_published_cycle(_cycle_id(params))

    pool = prepare_pool()
    specs = plan(pool)
    records = run_attempt.expand(spec_path=specs)
    # the run at a glance, beside ingest (never in its way): one instance, labelled with the counts
    [specs, records] >> tally.expand(scope=["board attempts"])
    repair_specs = plan_repair(pool)
    repair_records = run_repair_attempt.expand(spec_path=repair_specs)
    ingested = ingest(specs, repair_specs)
    [records, repair_records] >> ingested
    judged = judge(ingested, specs, repair_specs)
    prepared = prepare_publication(build(ingested, ingest_judgements(judged, specs, repair_specs)))
    # A person approves the exact board (or rejects it: recorded with the reason, publish skipped).
    approval = PublicationApproval(task_id="approve_publication", prepared_task="prepare_publication")
    published = publish(prepared, specs)
    prepared >> approval >> published
    share_images(published)  # the step after publication: share images, highlight videos, the site again


argusic_cycle()
