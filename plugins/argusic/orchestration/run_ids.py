"""Run ids that say what a run is about (issue 29, point 10): `review__<cycle>__<time>`,
`judging__<cycle>__<time>`, `dispute__<attempt_id>__<time>`, `stop__<cycle>__<time>` instead of
`manual__<timestamp>`.

Airflow 3.3 names a run triggered without a run id with its timetable's `generate_run_id`, which is
given the run type, `run_after` and the data interval, never the run's conf (the REST API's
`TriggerDAGRunPostBody.validate_context`; `TriggerDagRunOperator` and `dag.test()` call
`DagRun.generate_run_id` the same way). So the name is given where the conf is still at hand: the API
server's trigger request. `NameTriggerRequests` is an ASGI middleware that the plugin
`argusic.orchestration.run_id_plugin` installs in the API server (a plugin's
`fastapi_root_middlewares`): a `POST /api/v2/dags/<one of ours>/dagRuns` without a `dag_run_id`, as
the UI's Trigger button sends it when Advanced Options → Run ID is left empty, gets the id
`run_id_for_trigger` makes from its conf; everything else passes untouched (a run id given is kept;
Airflow still authenticates, authorizes, validates the conf and records the triggering user).

The names are safe by construction: what comes from the conf (a cycle, an attempt id) is used only
when it matches a strict grammar (`SUBJECT`: letters, digits, `.`, `-`, `_`, no `..`, no `__`, at
most 120 characters); else the trigger keeps Airflow's own `manual__…` id and the DAG refuses the
param as before. A whole id is at most `RUN_ID_MAX` characters and matches Airflow's default
`allowed_run_id_pattern`; the time is to the millisecond (two triggers of one subject within the
same millisecond: Airflow answers 409, nothing is created twice).

A run id that names a cycle is also the run's scope when the cycle_id param is left empty (one field,
not two); a param and a run id that disagree are refused, as argusic_cycle refuses them. No Airflow
import here: the middleware is plain ASGI, tested without Airflow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

CYCLE_PREFIX = "cycle__"  # argusic.cycle.ids.RUN_ID_PREFIX (not imported: the plugin loads this module
# in every Airflow process, and argusic.cycle.ids brings the catalogue's models)
REVIEW_PREFIX = "review__"
JUDGING_PREFIX = "judging__"
DISPUTE_PREFIX = "dispute__"
STOP_PREFIX = "stop__"
RESUME_PREFIX = "resume__"

EVERY_CYCLE = "all-cycles"  # the subject of a run over every cycle: never a cycle id (YYYY-MM…)
SUBJECT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}")
RUN_ID_MAX = 200  # Airflow's column holds 250
AIRFLOW_RUN_ID = re.compile(r"[A-Za-z0-9_.~:+-]+")  # [scheduler] allowed_run_id_pattern's default
BODY_MAX = 1 << 20  # a trigger request's body read to name it; a larger one passes untouched

NAMED_DAGS = ("argusic_cycle", "argusic_review", "argusic_judging_review", "argusic_disputes",
              "argusic_emergency_stop")  # fmt: skip
_TRIGGER_PATH = re.compile(r"/api/v2/dags/(?P<dag_id>[A-Za-z0-9_.-]+)/dagRuns/?$")


def named_in_run_id(run_id: str | None, prefix: str) -> str | None:
    """What a run id `<prefix><what>__<anything>` names, or None (another run id, nothing named, or
    every cycle)."""
    if not run_id or not run_id.startswith(prefix):
        return None
    named = run_id[len(prefix) :].split("__", 1)[0]
    return None if not named or named == EVERY_CYCLE else named


def review_cycle(param: str | None, run_id: str | None, prefix: str) -> str | None:
    """The cycle a review run covers: the cycle_id param, else the cycle its run id names, else None
    (every cycle). ConfigurationError when the two name different cycles."""
    from argusic.cycle.ids import ConfigurationError  # deferred: see CYCLE_PREFIX

    named = named_in_run_id(run_id, prefix)
    if param and named and param != named:
        raise ConfigurationError(
            f"the run id {run_id!r} names cycle {named} but the param cycle_id is {param!r}: trigger again "
            f"with one cycle in both (run id {prefix}{param}__<time>), or leave cycle_id empty"
        )
    return param or named


def disputed_attempt(param: str, run_id: str | None) -> str:
    """The attempt a dispute run is about: the attempt_id param; ConfigurationError when the run id
    names another attempt (`dispute__<attempt_id>__<time>`): the dispute records its run id."""
    from argusic.cycle.ids import ConfigurationError  # deferred: see CYCLE_PREFIX

    named = named_in_run_id(run_id, DISPUTE_PREFIX)
    if run_id and (run_id == f"{DISPUTE_PREFIX}{param}" or run_id.startswith(f"{DISPUTE_PREFIX}{param}__")):
        return param  # an attempt id with `__` in it (an id part may hold one) names no other attempt
    if named and param != named:
        raise ConfigurationError(
            f"the run id {run_id!r} names attempt {named} but the param attempt_id is {param!r}: trigger "
            f"again with the Run ID left empty (it is named after the attempt), or with "
            f"{DISPUTE_PREFIX}{param}__<time>"
        )
    return param


def _subject(value: object) -> str | None:
    """`value` when it is safe in a run id, else None."""
    if not isinstance(value, str) or not SUBJECT.fullmatch(value):
        return None
    if ".." in value or "__" in value or value.endswith("_"):
        return None
    return value


def _time(now: datetime) -> str:
    at = now.astimezone(UTC)
    return f"{at:%Y%m%dT%H%M%S}.{at.microsecond // 1000:03d}Z"


def run_id_for_trigger(dag_id: str, conf: dict, now: datetime) -> str | None:
    """The run id a trigger of `dag_id` with `conf` gets (`now`: when it is triggered), or None:
    Airflow names it (not one of ours, or nothing safe to name it after).

    argusic_cycle:          cycle__<cycle_id>__<time> (cycle_id empty: Airflow's id; the run's month)
    argusic_review:         review__<cycle_id | all-cycles>__<time>
    argusic_judging_review: judging__<cycle_id | all-cycles>[__<attempt> | __<n>-attempts | __every]
                            [__bulk]__<time>
    argusic_disputes:       dispute__<attempt_id>__<time>
    argusic_emergency_stop: stop__<cycle | all-cycles>__<time>, resume__all-cycles__<time>
    """
    parts: list[str]
    if dag_id == "argusic_cycle":
        cycle = _subject(conf.get("cycle_id"))
        if not cycle:
            return None
        parts = [CYCLE_PREFIX + cycle]
    elif dag_id == "argusic_review":
        cycle = conf.get("cycle_id") or EVERY_CYCLE
        parts = [REVIEW_PREFIX + (_subject(cycle) or "")]
    elif dag_id == "argusic_judging_review":
        cycle = conf.get("cycle_id") or EVERY_CYCLE
        parts = [JUDGING_PREFIX + (_subject(cycle) or "")]
        named = conf.get("attempt_ids") or []
        if not isinstance(named, list):
            return None
        if len(named) == 1:
            parts.append(_subject(named[0]) or "")
        elif named:
            parts.append(f"{len(named)}-attempts")
        elif conf.get("every_attempt") is True:
            parts.append("every")
        if conf.get("bulk") is True:
            parts.append("bulk")
    elif dag_id == "argusic_disputes":
        parts = [DISPUTE_PREFIX + (_subject(conf.get("attempt_id")) or "")]
    elif dag_id == "argusic_emergency_stop":
        action = conf.get("action", "stop")
        if action == "resume":
            parts = [RESUME_PREFIX + EVERY_CYCLE]
        elif action == "stop":
            parts = [STOP_PREFIX + (_subject(conf.get("cycle") or EVERY_CYCLE) or "")]
        else:
            return None
    else:
        return None
    if any(not part or part.endswith("__") for part in parts):
        return None  # something to name it after was not safe: Airflow's own id, the DAG refuses it
    run_id = "__".join([*parts, _time(now)])
    if len(run_id) > RUN_ID_MAX or ".." in run_id or not AIRFLOW_RUN_ID.fullmatch(run_id):
        return None
    return run_id


def named_trigger_body(dag_id: str, body: bytes, now: datetime) -> bytes | None:
    """The trigger request's body with its run id named, or None to send it as it came (a run id
    given, not JSON, no name to give)."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("dag_run_id") not in (None, ""):
        return None
    conf = doc.get("conf")
    run_id = run_id_for_trigger(dag_id, conf if isinstance(conf, dict) else {}, now)
    if run_id is None:
        return None
    doc["dag_run_id"] = run_id
    return json.dumps(doc).encode()


Receive = Callable[[], Awaitable[dict]]


class NameTriggerRequests:
    """ASGI middleware: a trigger of one of our DAGs without a run id gets one that names its subject
    (`named_trigger_body`); any other request passes as it came, its body unread."""

    def __init__(self, app, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.app, self.clock = app, clock

    async def __call__(self, scope, receive: Receive, send) -> None:
        match = _TRIGGER_PATH.search(scope.get("path", "")) if scope.get("type") == "http" else None
        if scope.get("method") != "POST" or match is None or match["dag_id"] not in NAMED_DAGS:
            await self.app(scope, receive, send)
            return
        read: list[dict] = []
        size, whole = 0, False
        while size <= BODY_MAX:
            message = await receive()
            read.append(message)
            if message.get("type") != "http.request":
                break  # a disconnect: passed on as it came
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                whole = True
                break
        if whole and size <= BODY_MAX:
            body = b"".join(m.get("body", b"") for m in read)
            named = named_trigger_body(match["dag_id"], body, self.clock())
            if named is not None:
                read = [{"type": "http.request", "body": named, "more_body": False}]
                headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
                scope = {**scope, "headers": [*headers, (b"content-length", str(len(named)).encode())]}

        async def replay() -> dict:
            return read.pop(0) if read else await receive()

        await self.app(scope, replay, send)
