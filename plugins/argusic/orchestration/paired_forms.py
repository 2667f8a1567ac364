"""The paired patch review's form (issue #31): a person re-checks one bug a model judge reported —
*Confirmed*, *Not a bug* or *Cannot tell*, with a required note — recorded the moment it is answered
in decisions.paired_bug_checks through argusic.review.paired.decide (who: the responding user as
Airflow authenticated them; when: the time Airflow recorded the response; why: the note). Airflow
3.3's HITLOperator, as argusic.orchestration.forms' forms: no Jinja (the body quotes a model's text),
no worker slot held while it waits."""

from __future__ import annotations

import logging
from typing import Any

from airflow.providers.standard.operators.hitl import HITLOperator

from argusic.orchestration.forms import _answer, _with_note, reviewers
from argusic.review import paired as paired_review

log = logging.getLogger("argusic.review")

NOTE_DESCRIPTION = "Why: what you saw in the patch and the base code (required)."


class PairedBugCheckForm(HITLOperator):
    """One reported bug: *Confirmed* / *Not a bug* / *Cannot tell* + the required note."""

    template_fields = ()

    def __init__(self, *, bug_id: str, pair_id: str, bug_label: str, **kwargs) -> None:
        kwargs.setdefault("assigned_users", reviewers())
        super().__init__(options=list(paired_review.OPTIONS), **_with_note(kwargs, NOTE_DESCRIPTION))
        self.bug_id = bug_id
        self.pair_id = pair_id
        self.bug_label = bug_label

    def execute_complete(self, context, event: dict[str, Any]) -> Any:
        result = super().execute_complete(context, event)
        answer = _answer(result)  # the note and the responding user are required
        new = paired_review.decide(self.bug_id, answer.choice, answer.by, answer.at, answer.note,
                                   pair_id=self.pair_id)  # fmt: skip
        finding = paired_review.OPTIONS[answer.choice]
        again = "" if new else " (already recorded)"
        log.info("paired review bug %s of %s: %s by %s at %s UTC (%s)%s", self.bug_id, self.pair_id,
                 finding, answer.by, answer.at, answer.note, again)  # fmt: skip
        return {"bug_id": self.bug_id, "pair_id": self.pair_id, "finding": finding, "decided_by": answer.by,
                "decided_at": answer.at.isoformat(), "note": answer.note}  # fmt: skip
