"""The Airflow forms people answer: Airflow 3.3's human-in-the-loop operators (standard provider),
each recording its answer the moment it is given, through the same functions as the CLI.

In Airflow 3.3 a waiting form holds no worker slot (the task waits in `awaiting_input`). A person
answers in the UI (Browse → Required actions, or the task's page) or through the REST API
(`PATCH /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/{task}/{map_index}/hitlDetails`). Who = the
responding user as Airflow authenticated them; when = the time Airflow recorded the response; why =
the required note. Nothing here renders Jinja: the bodies carry text written by others (an agent's
final state, a claim), so template_fields is empty and the text is built in the package.

`ARGUSIC_REVIEWERS` (comma-separated Airflow user ids), when set where the DAGs are parsed, limits
who may answer (the operators' assigned_users); unset, any user allowed to answer forms may.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator, HITLOperator
from airflow.sdk import Param
from airflow.sdk.definitions.param import ParamsDict
from airflow.sdk.exceptions import AirflowSkipException

from argusic.review import disputes, environment
from argusic.review import judging as judging_review
from argusic.review.text import answer_of
from argusic.warehouse.decisions import NOTE_MAX, DecisionError

log = logging.getLogger("argusic.review")


def reviewers() -> list[dict[str, str]] | None:
    ids = [u.strip() for u in os.environ.get("ARGUSIC_REVIEWERS", "").split(",") if u.strip()]
    return [{"id": u, "name": u} for u in ids] or None


def note_param(description: str) -> dict[str, Param]:
    return {
        # A default that passes the schema: Airflow validates a task's params when it builds the
        # task's context, before anyone answered. The note is required when the answer is recorded
        # (an empty one fails the task, and its retry asks again).
        "note": Param(
            "",
            type="string",
            maxLength=NOTE_MAX,
            title="Note (required)",
            description=description,
        )
    }


def _with_note(kwargs: dict, description: str) -> dict:
    """kwargs with the required note among the task's params (Airflow may already have put the DAG's
    params there: they are kept, and the form shows only the task's own)."""
    return _with_params(kwargs, note_param(description))


def _with_params(kwargs: dict, params: dict[str, Param]) -> dict:
    """kwargs with `params` among the task's params (the DAG's, when Airflow put them there, kept)."""
    given = kwargs.pop("params", None) or {}
    merged = {k: given.get_param(k) for k in given} if isinstance(given, ParamsDict) else dict(given)
    merged.update(params)
    return {**kwargs, "params": merged}


def _answer(result: dict[str, Any]):
    answer = answer_of(result)
    if not answer.note:
        raise DecisionError("the note is required (who, what and why are all recorded); answer again")
    if not answer.by:
        raise DecisionError("the answer has no responding user")
    return answer


class EnvironmentReviewForm(HITLOperator):
    """One project under environment review: *Project at fault* / *Environment at fault* + a note;
    the answer is recorded in decisions.review_decisions."""

    template_fields = ()

    def __init__(self, *, cycle_id: str, project_id: str, **kwargs) -> None:
        kwargs.setdefault("assigned_users", reviewers())
        super().__init__(
            options=list(environment.OPTIONS),
            **_with_note(kwargs, "Why: what in the logs and recordings shows whose fault it was."),
        )
        self.cycle_id = cycle_id
        self.project_id = project_id

    def execute_complete(self, context, event: dict[str, Any]) -> Any:
        result = super().execute_complete(context, event)
        answer = _answer(result)
        new = environment.decide(
            self.cycle_id, self.project_id, answer.choice, answer.by, answer.at, answer.note
        )
        log.info(
            "review of %s in cycle %s: %s by %s at %s UTC (%s)%s",
            self.project_id, self.cycle_id, environment.OPTIONS[answer.choice], answer.by,
            answer.at, answer.note, "" if new else " — already recorded",
        )  # fmt: skip
        return {"cycle_id": self.cycle_id, "project_id": self.project_id,
                "decision": environment.OPTIONS[answer.choice], "decided_by": answer.by,
                "decided_at": answer.at.isoformat(), "note": answer.note}  # fmt: skip


class PublicationApproval(ApprovalOperator):
    """Approve / Reject the board `prepared_task` composed (its sha256 and changes are the body).
    The decision is recorded (decisions.publication_decisions) before anything else; a rejection
    skips the publish task (skipped, not failed)."""

    template_fields = ()

    def __init__(self, *, prepared_task: str, **kwargs) -> None:
        kwargs.setdefault("assigned_users", reviewers())
        kwargs.setdefault("subject", "Publish the board?")
        super().__init__(
            **_with_note(kwargs, "Why you approve or reject this board (a rejection's reason is recorded).")
        )
        self.prepared_task = prepared_task

    def _prepared(self, context) -> dict:
        prepared = context["ti"].xcom_pull(task_ids=self.prepared_task)
        if not isinstance(prepared, dict) or "board_sha256" not in prepared:
            raise ValueError(f"no prepared board from task {self.prepared_task!r}")
        return prepared

    def execute(self, context):
        prepared = self._prepared(context)
        self.subject = prepared["subject"]
        self.body = prepared["body"]
        return super().execute(context)

    def execute_complete(self, context, event: dict[str, Any]) -> Any:
        if "error" not in event:
            # deferred: review.publication pulls the warehouse build (pandas, GX); DAG files parse without it
            from argusic.review import publication

            prepared = self._prepared(context)
            answer = _answer(event)
            decision = "approved" if answer.choice == self.APPROVE else "rejected"
            publication.record(
                prepared["cycle_id"], prepared["board_sha256"], decision, answer.by, answer.at, answer.note
            )
            recorded = recorded_line(prepared["cycle_id"], prepared["board_sha256"], answer, decision)
            log.info("%s", recorded)
            if decision == "rejected":  # an approval is built after the publish task publishes
                publication.refresh_after_decision()
            # What was recorded, as an XCom of its own (key "recorded", the task's XCom tab) and the
            # log's line: Airflow's Required actions page shows the response, this what it became.
            # Pushed before the operator's own handling: a rejection skips downstream by raising, so
            # nothing after it (a return value) would be kept.
            context["ti"].xcom_push(
                key="recorded",
                value={"recorded": recorded, "decision": decision, "decided_by": answer.by,
                       "decided_at": answer.at.isoformat(), "note": answer.note,
                       "cycle_id": prepared["cycle_id"], "board_sha256": prepared["board_sha256"],
                       "preview": prepared.get("preview")},
            )  # fmt: skip
        return super().execute_complete(context, event)


def recorded_line(cycle_id: str, board_sha256: str, answer, decision: str) -> str:
    """The one line that says what an approval form's answer recorded: which button, by whom, when,
    the note, and what follows."""
    follows = "publish runs next" if decision == "approved" else "publish is skipped, nothing is published"
    return (
        f"RECORDED: {answer.choice} ({decision}) of the board of cycle {cycle_id} (sha256 "
        f"{board_sha256}) by {answer.by} at {answer.at:%Y-%m-%d %H:%M:%S} UTC, note: {answer.note!r}; "
        f"{follows}"
    )


class DisputeRulingForm(HITLOperator):
    """Rule on the dispute `filed_task` filed: *Environment at fault* / *Result stands* + a note;
    recorded in decisions.dispute_rulings. Returns the ruling for the correction task."""

    template_fields = ()

    def __init__(self, *, filed_task: str, **kwargs) -> None:
        kwargs.setdefault("assigned_users", reviewers())
        kwargs.setdefault("subject", "Rule on a dispute")
        super().__init__(
            options=list(disputes.OPTIONS),
            **_with_note(kwargs, "Why: what the full log and recording show. Published with a correction."),
        )
        self.filed_task = filed_task

    def _dispute_id(self, context) -> str:
        dispute_id = context["ti"].xcom_pull(task_ids=self.filed_task)
        if not isinstance(dispute_id, str):
            raise ValueError(f"no dispute filed by task {self.filed_task!r}")
        return dispute_id

    def execute(self, context):
        dispute = disputes.get(self._dispute_id(context))
        self.subject = disputes.subject_of(dispute)
        self.body = disputes.body_of(dispute, disputes.attempt_facts(dispute.attempt_id))
        return super().execute(context)

    def execute_complete(self, context, event: dict[str, Any]) -> Any:
        result = super().execute_complete(context, event)
        answer = _answer(result)
        dispute = disputes.rule(self._dispute_id(context), answer.choice, answer.by, answer.at, answer.note)
        log.info("dispute %s ruled %s by %s at %s UTC: %s", dispute.dispute_id, dispute.ruling,
                 answer.by, answer.at, answer.note)  # fmt: skip
        return {"dispute_id": dispute.dispute_id, "ruling": dispute.ruling}


SCORE_CHOICES = {"0": "0 poor", "1": "1 acceptable", "2": "2 good"}
NOT_CHOSEN = ""


def _score_param(title: str, description: str, *, required: bool) -> Param:
    """A score 0..2 as a choice list, so the form cannot hold a value out of range (Airflow's number
    field accepts any number: a look of 7 was sent as 2 without a word). Airflow validates a task's
    params before anyone answered, so the default must pass the schema: a required score defaults to
    the empty choice, which the form treats as missing (its buttons stay disabled until one is
    chosen, as for a required note); an optional one may stay empty (null). Seen in headless
    Chromium on Airflow 3.3's Required actions page."""
    if required:
        return Param(
            NOT_CHOSEN, type="string", enum=[NOT_CHOSEN, *SCORE_CHOICES],
            values_display={NOT_CHOSEN: "(choose 0, 1 or 2)", **SCORE_CHOICES},
            title=title, description=description,
        )  # fmt: skip
    return Param(
        None, type=["null", "string"], enum=[None, *SCORE_CHOICES], values_display=SCORE_CHOICES,
        title=title, description=description,
    )  # fmt: skip


def score_of(value: object) -> object:
    """A score as the form sends it ("0".."2", "" or None for none) as the decision records it (an
    int, or None); anything else is passed on as it is, for the decision to refuse by name (an
    answer sent through the REST API skips the form)."""
    if value is None or value == NOT_CHOSEN:
        return None
    if isinstance(value, str) and value in SCORE_CHOICES:
        return int(value)
    return value


def judging_review_params() -> dict[str, Param]:
    """The judging review form's fields (the task's review definition: look 0..2 and a note; the
    decision is the form's option), plus the person's own reading of the judged criteria."""
    return {
        "look": _score_param(
            "Look, 0..2 (required)",
            "How it looks (repair: how the change reads): 0 poor, 1 acceptable, 2 good. The only score a "
            "person types.",
            required=True,
        ),
        "code_structure": _score_param(
            "Code structure, 0..2 (optional)",
            "Your own reading of the judged criterion, to compare with the judges.",
            required=False,
        ),
        "logic_correctness": _score_param(
            "Logic correctness, 0..2 (optional)",
            "Your own reading of the judged criterion, to compare with the judges.",
            required=False,
        ),
        # Optional: null passes the schema and the form does not ask for it (an empty string would
        # make the form require it, as it does for the notes that are required).
        "note": Param(
            None,
            type=["null", "string"],
            maxLength=judging_review.NOTE_MAX,
            title="Note (optional)",
            description="Why, in a sentence.",
        ),
    }


class JudgingReviewForm(HITLOperator):
    """One attempt from the judging review queue (issue #14, Layer 3): *Promote* / *Reject*, a look
    0..2, optionally the person's code_structure / logic_correctness and a note; recorded at once in
    decisions.judging_reviews through argusic.review.judging.decide (as `argusic judging review`)."""

    template_fields = ()

    def __init__(
        self,
        *,
        attempt_id: str,
        project_id: str,
        attempt_label: str,
        task_revision: str | None = None,
        **kwargs,
    ) -> None:
        kwargs.setdefault("assigned_users", reviewers())
        super().__init__(
            options=list(judging_review.OPTIONS), **_with_params(kwargs, judging_review_params())
        )
        self.attempt_id = attempt_id
        self.project_id = project_id
        self.attempt_label = attempt_label
        self.task_revision = task_revision

    def execute_complete(self, context, event: dict[str, Any]) -> Any:
        result = super().execute_complete(context, event)
        answer = answer_of(result)
        if not answer.by:
            raise DecisionError("the answer has no responding user")
        given = result.get("params_input") or {}
        given = {k: score_of(given.get(k)) for k in ("look", "code_structure", "logic_correctness")}
        new = judging_review.decide(
            self.attempt_id, given["look"], answer.choice, answer.by, answer.at, answer.note or "",
            code_structure=given["code_structure"], logic_correctness=given["logic_correctness"],
            task_revision=self.task_revision,
        )  # fmt: skip
        log.info(
            "judging review of %s: %s, look %s, by %s at %s UTC (%s)%s",
            self.attempt_id, answer.choice, given.get("look"), answer.by, answer.at, answer.note,
            "" if new else " — already recorded",
        )  # fmt: skip
        return {"attempt_id": self.attempt_id, "decision": judging_review.OPTIONS[answer.choice],
                "look": given.get("look"), "code_structure": given.get("code_structure"),
                "logic_correctness": given.get("logic_correctness"), "decided_by": answer.by,
                "decided_at": answer.at.isoformat(), "note": answer.note}  # fmt: skip


RECORD = "Record"


def bulk_params(items: list[dict]) -> dict[str, Param]:
    """The bulk judging review form's fields: per item one required choice (decision and look
    together, or leave for later: nothing to type, nothing out of range) and an optional note."""
    params: dict[str, Param] = {}
    for n, item in enumerate(items, 1):
        label = f"{item['project_id']} · {item['attempt_label']}"
        params[judging_review.bulk_key(n)] = Param(
            NOT_CHOSEN, type="string", enum=[NOT_CHOSEN, *judging_review.BULK_CHOICES],
            values_display={NOT_CHOSEN: "(choose)", **judging_review.BULK_CHOICES},
            title=f"{n}. {label} (required)",
            description=f"Item {n} of the body: {item.get('shown_id') or item['attempt_id']}",
        )  # fmt: skip
        params[judging_review.bulk_note_key(n)] = Param(
            None, type=["null", "string"], maxLength=judging_review.NOTE_MAX,
            title=f"{n}. Note (optional)", description="Why, in a sentence.",
        )  # fmt: skip
    return params


class BulkJudgingReviewForm(HITLOperator):
    """The judging review queue in one form (issue 29, point 10): the items `items_task` returned,
    each with its own choice (Promote or Reject with a look, or Leave for later) and optional note;
    one **Record** press records every chosen item as its own review in decisions.judging_reviews
    (argusic.review.judging.decide: who, when, why), as one form per item would. The fields are
    built from the queue when the task runs (Airflow's form shows the request's own params) and
    again when the answer arrives, from the same XCom. No item: skipped."""

    template_fields = ()

    def __init__(self, *, items_task: str, **kwargs) -> None:
        kwargs.setdefault("assigned_users", reviewers())
        kwargs.setdefault("subject", "Judging review: the queue")
        super().__init__(options=[RECORD], **kwargs)
        self.items_task = items_task

    def _items(self, context) -> list[dict]:
        items = context["ti"].xcom_pull(task_ids=self.items_task) or {}
        return list(items.get("items") or [])

    def _with_items(self, context) -> list[dict]:
        items = self._items(context)
        self.params = ParamsDict(bulk_params(items))
        return items

    def execute(self, context):
        items = self._with_items(context)
        if not items:
            raise AirflowSkipException("nothing in the judging review queue for this form")
        shown = context["ti"].xcom_pull(task_ids=self.items_task) or {}
        self.body = shown.get("body") or ""
        return super().execute(context)

    def execute_complete(self, context, event: dict[str, Any]) -> Any:
        items = self._with_items(context)
        result = super().execute_complete(context, event)
        answer = answer_of({**result, "params_input": {}})  # who and when; the notes are per item
        if not answer.by:
            raise DecisionError("the answer has no responding user")
        given = result.get("params_input") or {}
        chosen = [(item, judging_review.bulk_choice(given.get(judging_review.bulk_key(n))),
                   str(given.get(judging_review.bulk_note_key(n)) or "").strip())
                  for n, item in enumerate(items, 1)]  # fmt: skip  # every choice checked first
        recorded = []
        for item, choice, note in chosen:
            if choice is None:
                log.info("judging review of %s: left for later by %s", item["attempt_id"], answer.by)
                continue
            decision, look = choice
            new = judging_review.decide(item["attempt_id"], look, decision, answer.by, answer.at, note,
                                        task_revision=item.get("task_revision"))  # fmt: skip
            line = (f"RECORDED: judging review of {item['attempt_id']}: {decision}, look {look}, by "
                    f"{answer.by} at {answer.at:%Y-%m-%d %H:%M:%S} UTC ({note or 'no note'})"
                    f"{'' if new else ' — already recorded'}")  # fmt: skip
            log.info("%s", line)
            recorded.append({"attempt_id": item["attempt_id"], "decision": decision, "look": look,
                             "note": note or None, "recorded": line})  # fmt: skip
        later = len(items) - len(recorded)
        return {"recorded": recorded, "left_for_later": later, "decided_by": answer.by,
                "decided_at": answer.at.isoformat()}  # fmt: skip
