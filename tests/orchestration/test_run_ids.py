"""Run ids that name what a review run is about (issue 29, point 10), without Airflow."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from argusic.cycle.ids import RUN_ID_PREFIX, ConfigurationError
from argusic.orchestration.run_ids import (
    AIRFLOW_RUN_ID,
    BODY_MAX,
    CYCLE_PREFIX,
    EVERY_CYCLE,
    JUDGING_PREFIX,
    REVIEW_PREFIX,
    RUN_ID_MAX,
    NameTriggerRequests,
    disputed_attempt,
    named_in_run_id,
    review_cycle,
    run_id_for_trigger,
)


def test_a_review_run_id_names_its_cycle_and_sets_the_scope() -> None:
    assert named_in_run_id("judging__2026-12__20261203T1000Z", JUDGING_PREFIX) == "2026-12"
    assert named_in_run_id("manual__2026-12-03T10:00:00+00:00", JUDGING_PREFIX) is None
    assert named_in_run_id("judging____x", JUDGING_PREFIX) is None
    assert review_cycle(None, "review__2026-12-ui__1", REVIEW_PREFIX) == "2026-12-ui"  # one field, not two
    assert review_cycle("2026-11", "manual__1", REVIEW_PREFIX) == "2026-11"
    assert review_cycle("2026-12", "review__2026-12__1", REVIEW_PREFIX) == "2026-12"
    assert review_cycle(None, "manual__1", REVIEW_PREFIX) is None  # every cycle, as before
    with pytest.raises(ConfigurationError, match="names cycle 2026-12 but the param cycle_id is '2026-11'"):
        review_cycle("2026-11", "review__2026-12__1", REVIEW_PREFIX)


# --- names given to a trigger without a run id (the API server's middleware) ---------------------------

NOW = datetime(2026, 12, 3, 10, 15, 0, 123456, tzinfo=UTC)
T = "20261203T101500.123Z"  # NOW as a run id shows it
ATTEMPT = "2026-12.board.readme-runner.demo-cli.a2"


@pytest.mark.parametrize(
    ("dag_id", "conf", "expected"),
    [
        ("argusic_review", {"cycle_id": "2026-12"}, "review__2026-12__" + T),
        ("argusic_review", {"cycle_id": None}, "review__all-cycles__" + T),
        ("argusic_judging_review", {"cycle_id": "2026-12", "bulk": False, "every_attempt": False,
                                    "attempt_ids": None}, "judging__2026-12__" + T),
        ("argusic_judging_review", {"cycle_id": "2026-12", "bulk": True}, "judging__2026-12__bulk__" + T),
        ("argusic_judging_review", {"cycle_id": None, "every_attempt": True, "bulk": True},
         "judging__all-cycles__every__bulk__" + T),
        ("argusic_judging_review", {"cycle_id": "2026-12", "attempt_ids": [ATTEMPT]},
         f"judging__2026-12__{ATTEMPT}__{T}"),
        ("argusic_judging_review", {"attempt_ids": ["a", "b", "c"]}, "judging__all-cycles__3-attempts__" + T),
        ("argusic_disputes", {"attempt_id": ATTEMPT, "claim": "x"}, f"dispute__{ATTEMPT}__{T}"),
        ("argusic_emergency_stop", {"action": "stop", "cycle": "2026-12"}, "stop__2026-12__" + T),
        ("argusic_emergency_stop", {"action": "stop", "cycle": None}, "stop__all-cycles__" + T),
        ("argusic_emergency_stop", {"action": "resume", "cycle": "2026-12"}, "resume__all-cycles__" + T),
        ("argusic_cycle", {"cycle_id": "2026-12-ui", "demo": True}, "cycle__2026-12-ui__" + T),
        ("argusic_cycle", {"cycle_id": None}, None),  # the run's month: Airflow's own id, as before
        ("argusic_items", {"cycle_id": "2026-12"}, None),  # not one of ours to name
    ],
)  # fmt: skip
def test_a_trigger_without_a_run_id_is_named_after_its_subject(dag_id, conf, expected) -> None:
    named = run_id_for_trigger(dag_id, conf, NOW)
    assert named == expected
    if named:
        assert AIRFLOW_RUN_ID.fullmatch(named) and ".." not in named and len(named) <= RUN_ID_MAX


@pytest.mark.parametrize(
    "subject",
    [
        "",
        "../etc",
        "a..b",
        "a__b",
        "a_",
        "-a",
        "a/b",
        "a b",
        "é",
        "a\nb",
        "x" * 121,
        7,
        ["2026-12"],
        {"a": 1},
    ],
)
def test_nothing_unsafe_ever_reaches_a_run_id_airflow_names_it_and_the_dag_refuses(subject) -> None:
    assert run_id_for_trigger("argusic_disputes", {"attempt_id": subject}, NOW) is None
    assert run_id_for_trigger("argusic_review", {"cycle_id": subject}, NOW) in (
        None,
        "review__all-cycles__" + T,  # an empty cycle_id is every cycle
    )
    assert run_id_for_trigger("argusic_judging_review", {"attempt_ids": [subject]}, NOW) is None
    assert run_id_for_trigger("argusic_emergency_stop", {"action": "stop", "cycle": subject}, NOW) in (
        None,
        "stop__all-cycles__" + T,
    )
    assert run_id_for_trigger("argusic_judging_review", {"attempt_ids": "2026-12"}, NOW) is None
    assert run_id_for_trigger("argusic_emergency_stop", {"action": "halt"}, NOW) is None


def test_every_cycle_is_not_a_cycle_and_a_dispute_run_names_its_attempt() -> None:
    assert CYCLE_PREFIX == RUN_ID_PREFIX  # argusic_cycle's own grammar (argusic.cycle.ids)
    assert named_in_run_id(f"review__{EVERY_CYCLE}__" + T, REVIEW_PREFIX) is None
    assert review_cycle(None, f"judging__{EVERY_CYCLE}__x", JUDGING_PREFIX) is None
    assert review_cycle(None, "judging__2026-12__bulk__x", JUDGING_PREFIX) == "2026-12"
    assert disputed_attempt(ATTEMPT, f"dispute__{ATTEMPT}__1") == ATTEMPT
    assert disputed_attempt(ATTEMPT, "manual__2026-12-03T10:15:00+00:00") == ATTEMPT
    odd = "2026-12.board.readme-runner.demo__cli.a2"  # an id part may hold `__`: typed, not named
    assert run_id_for_trigger("argusic_disputes", {"attempt_id": odd}, NOW) is None
    assert disputed_attempt(odd, f"dispute__{odd}__1") == odd
    with pytest.raises(ConfigurationError, match="names attempt other but the param attempt_id is"):
        disputed_attempt(ATTEMPT, "dispute__other__1")


def _through(path: str, body: bytes, chunks: int = 1, method: str = "POST") -> dict:
    """One request through the middleware (at NOW) to an app that records what reached it."""
    seen: dict = {}

    async def app(scope, receive, send) -> None:
        got = b""
        while True:
            message = await receive()
            got += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen["body"], seen["headers"] = got, dict(scope["headers"])

    step = max(1, -(-len(body) // chunks))
    parts = [body[i : i + step] for i in range(0, len(body), step)] or [b""]
    messages = [
        {"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)
    ]

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    length = str(len(body)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", length)]
    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    asyncio.run(NameTriggerRequests(app, clock=lambda: NOW)(scope, receive, lambda message: None))
    return seen


def test_the_middleware_names_our_triggers_only_and_keeps_a_run_id_given() -> None:
    body = json.dumps(
        {"conf": {"cycle_id": "2026-12", "bulk": True}, "logical_date": None, "note": "n"}
    ).encode()
    seen = _through("/api/v2/dags/argusic_judging_review/dagRuns", body, chunks=3)
    sent = json.loads(seen["body"])
    assert sent == {"conf": {"cycle_id": "2026-12", "bulk": True}, "logical_date": None, "note": "n",
                    "dag_run_id": "judging__2026-12__bulk__" + T}  # fmt: skip
    assert seen["headers"][b"content-length"] == str(len(seen["body"])).encode()
    # a run id given is kept; another DAG, another route, another method, not JSON: as they came
    given = json.dumps({"dag_run_id": "judging__2026-12__mine", "conf": {"cycle_id": "2026-12"}}).encode()
    for path, data, method in [
        ("/api/v2/dags/argusic_judging_review/dagRuns", given, "POST"),
        ("/api/v2/dags/example/dagRuns", body, "POST"),
        ("/api/v2/dags/argusic_review/dagRuns/list", body, "POST"),
        ("/api/v2/dags/argusic_review/dagRuns", body, "PATCH"),
        ("/api/v2/dags/argusic_review/dagRuns", b"{not json", "POST"),
        (
            "/api/v2/dags/argusic_disputes/dagRuns",
            json.dumps({"conf": {"attempt_id": "../x"}}).encode(),
            "POST",
        ),
    ]:
        seen = _through(path, data, method=method)
        assert seen["body"] == data and seen["headers"][b"content-length"] == str(len(data)).encode(), path
    # behind a base path (AIRFLOW__API__BASE_URL with a path) as well
    seen = _through("/airflow/api/v2/dags/argusic_review/dagRuns", json.dumps({"conf": {}}).encode())
    assert json.loads(seen["body"])["dag_run_id"] == "review__all-cycles__" + T


def test_a_body_over_the_cap_passes_untouched() -> None:
    big = json.dumps({"conf": {"cycle_id": "2026-12", "pad": "x" * BODY_MAX}}).encode()
    seen = _through("/api/v2/dags/argusic_review/dagRuns", big, chunks=4)
    assert seen["body"] == big
