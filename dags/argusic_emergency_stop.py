"""The emergency stop from the Airflow UI: trigger with stop or resume and a reason. Thin: the logic
lives in argusic.ops.emergency (the same as `argusic stop` / `argusic resume`)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task
from argusic.orchestration.dag_support import retry_delay
from argusic.orchestration.pickers import cycle_choices

DOC_MD = """
### Emergency stop (issue 26)

Trigger with **action** `stop` (or `resume`) and a **reason** (required, recorded with the user who
triggered the run and the time Airflow recorded for the trigger; optionally one **cycle**).

* **stop** — sets the installation's stop switch (every host reads it from the runs store), deletes the
  model keys of the attempts it covers at the gateway, and waits for this host's attempts to end: each
  running attempt is ended by its executor within seconds, lands the evidence it has and gets a run
  record with end reason `emergency_stop` and this stop's who, when and why (not scored; rerun after
  resume). Until `resume`, every attempt task refuses to start and fails naming the stop: clear those
  tasks after resuming.
* **resume** — lifts the switch.

The run is named `stop__<cycle>__<time>` (`stop__all-cycles__<time>`) or `resume__all-cycles__<time>`
when the trigger form's Run ID (Advanced Options) is left empty.

From a shell: `argusic stop --reason ...`, `argusic resume --reason ...`, `argusic stop-status`
(docs/operators.md "Emergency stop").
"""


@dag(
    dag_id="argusic_emergency_stop",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["argusic", "ops"],
    doc_md=DOC_MD,
    # a store that did not answer is retried once; a refused decision (no stop to lift) fails at once
    default_args={"owner": "argusic", "retries": 1, "retry_delay": retry_delay(timedelta(seconds=15))},
    params={
        "action": Param("stop", type="string", enum=["stop", "resume"], title="Action"),
        "reason": Param(
            "",
            type="string",
            minLength=1,
            maxLength=2000,
            title="Reason",
            description="Why (recorded and published with every run the stop ends).",
        ),
        "cycle": Param(
            None,
            type=["null", "string"],
            title="Cycle",
            description="Stop only this cycle's attempts (leave empty for every cycle; ignored by resume).",
            **cycle_choices().param_schema(),  # the warehouse's cycles, as of the last build
        ),
    },
)
def argusic_emergency_stop():
    @task
    def decide(params: dict) -> dict:
        from airflow.sdk.exceptions import AirflowFailException
        from argusic.core.emergency import EmergencyStopError
        from argusic.ops.emergency import emergency_stop, resume

        run = get_current_context()["dag_run"]
        by = getattr(run, "triggering_user_name", None) or "airflow"
        at = run.run_after  # the time Airflow recorded for the trigger, never now()
        try:
            if params["action"] == "resume":
                lifted = resume(by=by, reason=params["reason"], at=at)
                return {"lifted": f"{lifted.by} at {lifted.at}: {lifted.reason}"}
            cycle = params.get("cycle") or None
            return emergency_stop(by=by, reason=params["reason"], at=at, cycle=cycle).as_dict()
        except EmergencyStopError as err:
            raise AirflowFailException(str(err)) from None

    decide()


argusic_emergency_stop()
