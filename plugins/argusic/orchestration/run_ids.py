"""Run ids that say what a review run is about (issue 29, point 10): `review__<cycle>__<time>`,
`judging__<cycle>__<time>`, `dispute__<attempt_id>__<time>` instead of `manual__<timestamp>`. A run id
that names a cycle is also the run's scope when the cycle_id param is left empty (one field, not
two); a param and a run id that disagree are refused, as argusic_cycle refuses them."""

from __future__ import annotations

from argusic.cycle.ids import ConfigurationError

REVIEW_PREFIX = "review__"
JUDGING_PREFIX = "judging__"
DISPUTE_PREFIX = "dispute__"


def named_in_run_id(run_id: str | None, prefix: str) -> str | None:
    """What a run id `<prefix><what>__<anything>` names, or None (another run id, or nothing named)."""
    if not run_id or not run_id.startswith(prefix):
        return None
    return run_id[len(prefix) :].split("__", 1)[0] or None


def review_cycle(param: str | None, run_id: str | None, prefix: str) -> str | None:
    """The cycle a review run covers: the cycle_id param, else the cycle its run id names, else None
    (every cycle). ConfigurationError when the two name different cycles."""
    named = named_in_run_id(run_id, prefix)
    if param and named and param != named:
        raise ConfigurationError(
            f"the run id {run_id!r} names cycle {named} but the param cycle_id is {param!r}: trigger again "
            f"with one cycle in both (run id {prefix}{param}__<time>), or leave cycle_id empty"
        )
    return param or named
