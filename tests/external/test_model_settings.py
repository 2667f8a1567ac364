"""Model settings and the comparison grade in the run record (issue #31, seed 002): what the harness
passed and what the session log shows, each value with its status; same-model or reference derived
from the models that answered, never from the agent's words; older records unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from argusic.attempts.install_run import agent_launch
from argusic.core.record import Harness, Model, RecordError, parse_record
from argusic.external import claude_code, codex
from argusic.external.collect import record_parts
from argusic.external.model_settings import AUXILIARY_MODEL_ENV, model_settings

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"


def _parts(mod, name: str, model: str, env_extra: dict | None = None) -> dict:
    run = mod.collect(SESSIONS / mod.HARNESS_NAME.replace("-", "_") / name, None, requested_model=model)
    argv, env = agent_launch(run.harness, model, 3, gateway=True)
    return record_parts(run, key_kind="per_run", key_limit_usd=1.0, argv=argv, env=env | (env_extra or {}))


def test_claude_code_side_calls_to_another_model_make_it_a_reference() -> None:
    parts = _parts(claude_code, "normal.jsonl", "claude-sonnet-4-5")
    settings = parts["model"]["settings"]
    # the fixture's side calls went to the CLI's default small model: not the compared one
    assert settings["answered"] == ["claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"]
    assert parts["harness"]["grade"] == "reference" and "claude-haiku" in parts["harness"]["grade_basis"]
    assert settings["temperature"] == {
        "value": None,
        "status": "unavailable",
        "source": settings["temperature"]["source"],
    }
    assert settings["passed"]["model"] == {"value": "claude-sonnet-4-5", "status": "measured",
                                           "source": "launch argument --model"}  # fmt: skip
    assert settings["passed"]["max_retries"]["value"] == 3
    # the launch now passes the side-call variables (the compared model): measured as passed; the grade
    # still follows the session, whose side calls (recorded before they were set) went to haiku
    assert {k: (v["value"], v["status"]) for k, v in settings["auxiliary_models"].items()} == {
        name: ("claude-sonnet-4-5", "measured") for name in AUXILIARY_MODEL_ENV
    }
    Model.model_validate(parts["model"])
    Harness.model_validate(parts["harness"])


def test_auxiliary_variables_passed_are_measured_and_same_model_needs_every_answer() -> None:
    run = claude_code.collect(
        SESSIONS / "claude_code" / "normal.jsonl", None, requested_model="claude-haiku-4-5"
    )
    env = {name: "claude-haiku-4-5" for name in AUXILIARY_MODEL_ENV} | {
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8000"
    }
    settings = model_settings("claude-code", run, claude_code.agent_argv("claude-haiku-4-5"), env)
    assert settings["auxiliary_models"]["ANTHROPIC_SMALL_FAST_MODEL"]["status"] == "measured"
    source = "launch environment CLAUDE_CODE_MAX_OUTPUT_TOKENS"
    assert settings["max_output_tokens"] == {"value": 8000, "status": "measured", "source": source}
    # the dated snapshot of the compared model counts as it; the main loop's sonnet does not
    from argusic.external.model_settings import comparison_grade

    run.details["models_answered"], run.details["models_used"] = ["claude-haiku-4-5-20251001"], []
    run = type(run)(**{**run.__dict__, "model_responded": "claude-haiku-4-5-20251001"})
    assert comparison_grade("claude-code", run, "claude-haiku-4-5")[0] == "same-model"


@pytest.mark.parametrize("name,grade", [("normal.jsonl", "same-model"), ("turn_failed.jsonl", "reference")])
def test_codex_grade_reads_its_reroute_item(name: str, grade: str) -> None:
    parts = _parts(codex, name, "gpt-5")
    assert parts["harness"]["grade"] == grade
    assert parts["model"]["settings"]["passed"]["model"]["value"] == "gpt-5"
    assert parts["model"]["settings"]["reasoning_effort"]["status"] == "unavailable"


def test_settings_and_grade_are_optional_and_checked(record_doc: dict) -> None:
    plain = parse_record(record_doc)
    text = plain.to_json()
    assert '"settings"' not in text and '"grade"' not in text  # older records: byte for byte as before
    doc = json.loads(text)
    doc["harness"] = {"name": "claude-code", "version": "2.1.332", "grade": "same-model", "grade_basis": "x"}
    unknown = {"value": None, "status": "unavailable", "source": "not stated"}
    settings = {"temperature": unknown, "reasoning_effort": unknown,
                "max_output_tokens": {"value": 8000, "status": "measured", "source": "env"}}  # fmt: skip
    doc["model"] = {"requested": "m", "responded": "m", "settings": settings}
    record = parse_record(doc)
    assert record.harness.grade == "same-model" and record.model.settings.max_output_tokens.value == 8000
    assert parse_record(json.loads(record.to_json())) == record
    bad = json.loads(record.to_json())
    bad["model"]["settings"]["temperature"] = {"value": 0.2, "status": "unavailable", "source": "s"}
    with pytest.raises(RecordError, match="temperature"):
        parse_record(bad)
    bad = json.loads(record.to_json())
    bad["harness"]["grade"] = "claimed-by-agent"
    with pytest.raises(RecordError, match="grade"):
        parse_record(bad)
    del bad["harness"]["grade"]
    with pytest.raises(RecordError, match="grade_basis"):
        parse_record(bad)
