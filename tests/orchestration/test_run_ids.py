"""Run ids that name what a review run is about (issue 29, point 10), without Airflow."""

from __future__ import annotations

import pytest
from argusic.cycle.ids import ConfigurationError
from argusic.orchestration.run_ids import JUDGING_PREFIX, REVIEW_PREFIX, named_in_run_id, review_cycle


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
