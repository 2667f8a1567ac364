"""Monthly pool rotation: draw the cycle's pool and publish its public list; reveal the private part
of the cycle that has just ended. Thin: every rule lives in argusic.sources.pool / argusic.cycle."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException
from argusic.orchestration.dag_support import retry_delay

DOC_MD = """
### Argusic pool rotation (monthly)

Runs at 00:00 UTC on the first day of each month, before any attempt of that month's cycle.

* **rotate_pool** — draws the cycle's pool from the candidate catalogue (seeded by the cycle id,
  so re-running gives the same pool; a *different* pool for a recorded cycle is refused), writes the
  internal pool to `runs/pools/<cycle>/pool.json` and publishes the public list with pinned commits
  to `<ARGUSIC_PUBLISH_DIR>/<cycle>/public_pool.json`. XCom: those two paths. The rotation reads the
  earlier cycles' pools in `runs/pools/`: a project private last cycle is left out, one private before
  is never private again (docs/catalogue.md#rotation); an unreadable pool file fails the task.
* **reveal_previous_private** — publishes `private_pool.json` of the *previous* cycle once it has
  ended. Skipped (not failed) when that cycle has no recorded pool or has not ended yet.

Params: `catalogue` (default `ARGUSIC_CATALOGUE`, else the demo forge's `forge/catalogue.json`), `cycle_id`
(default: the run's logical month, `YYYY-MM`), `pool_size` (default: the largest 80/20 pool).
Then trigger **argusic_cycle** with the same `cycle_id`.
"""


def _run_day():
    """The run's day: its logical date, or run_after for a manual run without one (never now())."""
    context = get_current_context()
    moment = context.get("logical_date") or context["dag_run"].run_after
    return moment.date()


@dag(
    dag_id="argusic_pool_rotation",
    schedule="@monthly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["argusic", "pool"],
    doc_md=DOC_MD,
    default_args={
        "owner": "argusic",
        "retries": 2,
        "retry_delay": retry_delay(timedelta(minutes=2)),
        "retry_exponential_backoff": True,
    },
    params={
        "catalogue": Param(
            None,
            type=["null", "string"],
            title="Catalogue",
            description="Absolute path of the candidate catalogue on the workers. Empty: ARGUSIC_CATALOGUE, "
            "else the demo forge's (made if missing).",
        ),
        "cycle_id": Param(
            None,
            type=["null", "string"],
            title="Cycle id",
            description="YYYY-MM[-suffix]. Empty: the run's logical month. A cycle's pool never changes once "
            "drawn: drawing it again gives the same pool; another size or catalogue is refused.",
        ),
        "pool_size": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            title="Pool size",
            description="Projects to draw (80% public, 20% recently popular). Empty: the largest such pool.",
        ),
    },
)
def argusic_pool_rotation():
    @task
    def rotate_pool(params: dict) -> dict[str, str]:
        from pathlib import Path

        from airflow.sdk.exceptions import AirflowFailException
        from argusic.cycle.ids import cycle_id_for
        from argusic.cycle.pools import default_catalogue
        from argusic.cycle.pools import rotate_pool as do_rotate
        from argusic.sources.pool import CatalogueError

        cycle_id = params.get("cycle_id") or cycle_id_for(_run_day())
        catalogue = Path(params["catalogue"]) if params.get("catalogue") else default_catalogue(build=True)
        try:
            return do_rotate(cycle_id, catalogue, params.get("pool_size"))
        except (CatalogueError, ValueError) as err:  # a retry cannot fix a catalogue or a cycle id
            raise AirflowFailException(str(err)) from None

    @task
    def reveal_previous_private(params: dict) -> str:
        from argusic.cycle.ids import cycle_id_for, previous_cycle_of
        from argusic.cycle.pools import reveal_if_ended

        day = _run_day()
        cycle_id = previous_cycle_of(params.get("cycle_id") or cycle_id_for(day))
        revealed = reveal_if_ended(cycle_id, day)
        if revealed is None:
            raise AirflowSkipException(f"cycle {cycle_id}: no recorded pool, or not ended on {day}")
        return revealed

    rotate_pool()
    reveal_previous_private()


argusic_pool_rotation()
