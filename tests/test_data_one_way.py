"""Data goes one way (issue 24): within a task a run record is parsed once and handed on (never its path
for the next step to parse again), an attempt's spec is read once, and an ingest takes one writer lock
and one transaction, with a cycle's repair grades loaded under the same lock as its run records.

The counts are taken with spies: every validation of a RunRecord (from a file, a string or a dict), every
AttemptSpec read from JSON."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from argusic.attempts.run import measure_attempt, run_attempt
from argusic.attempts.story import attempt_story, story_of
from argusic.core.evidence import EvidenceStore
from argusic.core.record import RunRecord, load_record_file
from argusic.core.spec import AttemptSpec
from argusic.sandbox.executor import LocalExecutor
from test_attempt import _spec, scripted  # noqa: F401  (the scripted harness fixture)
from test_executor import make_repo


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Counts of record parses and spec reads."""
    counts: collections.Counter = collections.Counter()

    def spy(owner, name: str, key: str) -> None:
        original = getattr(owner, name)

        def counting(*args, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counting)

    spy(RunRecord, "model_validate", "record parsed")
    spy(RunRecord, "model_validate_json", "record parsed")
    spy(AttemptSpec, "model_validate_json", "spec read")
    return counts


# --- an attempt task -------------------------------------------------------------------------------


@pytest.mark.usefixtures("scripted")
def test_an_attempt_parses_its_record_once_and_its_story_reads_nothing_again(
    tmp_path: Path, counted: collections.Counter
) -> None:
    """Measured: built and validated once (with its served copies: copied, not parsed again); the
    story is told from the record and spec the task holds. Before: the record was validated twice
    while built (the presentation re-parsed it whole), and the story read the spec and parsed every
    record again."""
    repo, commit = make_repo(tmp_path, "ok")
    spec = _spec(repo, commit, "ok")
    store, runs = EvidenceStore((tmp_path / "evidence").as_uri()), tmp_path / "runs"
    measured = measure_attempt(spec, LocalExecutor(), store, runs)
    assert counted == {"record parsed": 1}
    assert measured.record == load_record_file(measured.path)  # what was written is what is handed on
    assert measured.record.presentation is not None and measured.record.invalid_reason is None
    counted.clear()
    story = story_of(spec, [measured])
    assert counted == {}  # neither the spec nor the record read again
    assert story.label.startswith(spec.label) and story.lines[-1] == f"   run record: {measured.path}"
    # Resumed (the record exists): parsed once, and handed on as it is
    again = measure_attempt(spec, LocalExecutor(), store, runs)
    assert counted == {"record parsed": 1} and again == measured
    # The callers that hold only paths read each file once
    counted.clear()
    assert run_attempt(spec, LocalExecutor(), store, runs) == measured.path
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.model_dump_json())
    assert attempt_story(spec_path, [str(measured.path)]) == story
    assert counted == {"record parsed": 2, "spec read": 1}  # run_attempt's 1 + the story's 1
