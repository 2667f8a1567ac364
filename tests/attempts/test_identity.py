"""Neutral Argusic identities (issue 32, methodology sections 5 and 18): an agent configuration's
identity is stable while the configuration is unchanged and changes when any part of it changes; the
cycle's pin records each agent with its exact model version; a model-backed agent without one cannot
be planned."""

from __future__ import annotations

import dataclasses
import hashlib
import re

import pytest
from argusic.attempts import identity
from argusic.attempts.environment import EnvironmentRefused, ensure_pin
from argusic.attempts.identity import (
    AgentConfiguration,
    MissingModelVersion,
    agent_pin,
    agent_pins,
    configuration_from_pin,
    identity_name,
    recording_title,
    registry_rows,
)
from argusic.cycle.ids import ConfigurationError
from argusic.cycle.plan import write_plan

BASE = AgentConfiguration(
    model="m-large",
    model_version="m-large-20250929",
    harness="some-cli",
    harness_version="2.1.332",
    harness_args=("--flag",),
    instructions_version="3",
    instructions_sha256="f" * 64,
    limits={
        "executor": "docker",
        "container": {"cpus": 2.0, "memory_bytes": 4 * 2**30, "pids": 512, "disk_bytes": 6 * 2**30,
                      "network": "bridge"},
        "budgets_seconds": {"gpu": 7200, "heavy": 7200, "standard": 5400},
        "budget_scale": 1.0,
    },
)  # fmt: skip


def test_the_identity_is_the_hash_of_the_canonical_configuration_and_is_stable() -> None:
    first = BASE.identity
    assert re.fullmatch(r"A-[0-9a-f]{6}", first.code) and first.name == f"Argusic agent {first.code}"
    assert first.page == f"agents/{first.code}.html"
    assert first.sha256 == hashlib.sha256(BASE.canonical_json().encode()).hexdigest()
    assert first.code == "A-" + first.sha256[:6]
    # The same configuration, built again (limits written in another key order): the same identity,
    # in every cycle and on every host.
    again = dataclasses.replace(BASE, limits=dict(reversed(list(BASE.limits.items()))))
    assert again.identity == first
    # The canonical JSON names no agent id, cycle or time: nothing but the configuration.
    assert set(BASE.canonical()) == {
        "schema", "model", "model_version", "harness", "harness_version", "harness_args",
        "instructions_version", "instructions_sha256", "limits",
    }  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [
        {"model": "m-small"},
        {"model_version": "m-large-20251001"},
        {"harness": "other-cli"},
        {"harness_version": "2.1.333"},
        {"harness_args": ()},
        {"instructions_version": "4"},
        {"instructions_sha256": "e" * 64},
        {"limits": {**BASE.limits, "budget_scale": 1 / 360}},
        {"limits": {**BASE.limits, "budgets_seconds": {"gpu": 7200, "heavy": 7200, "standard": 2700}}},
        {"limits": {**BASE.limits, "container": {**BASE.limits["container"], "cpus": 4.0}}},
        {"limits": {**BASE.limits, "container": {**BASE.limits["container"], "network": "none"}}},
        {"limits": {**BASE.limits, "executor": "local", "container": None}},
    ],
)
def test_any_change_of_the_configuration_is_another_identity(change: dict) -> None:
    assert dataclasses.replace(BASE, **change).identity.code != BASE.identity.code


def test_the_registry_names_an_exact_model_version_for_every_model_backed_agent() -> None:
    rows = registry_rows()
    for agent_id in ("claude-code", "codex"):
        pinned = agent_pin(agent_id, rows)
        assert pinned.model and pinned.model_version, agent_id
    # The reference agents differ by their harness arguments only: two agents, two identities.
    ref, norecover = agent_pin("readme-runner", rows), agent_pin("readme-runner-norecover", rows)
    assert ref.model is None and ref.harness_args == [] and norecover.harness_args == ["--no-recovery"]


def _without_version(agent_id: str) -> dict:
    rows = registry_rows()
    rows[agent_id] = {**rows[agent_id], "model_version": ""}
    return rows


def test_a_model_backed_agent_without_a_model_version_cannot_be_planned(
    isolated, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(
        MissingModelVersion, match=r"agent 'codex' cannot be planned: its model_version is empty"
    ):
        agent_pin("codex", _without_version("codex"))
    monkeypatch.setattr(identity, "registry_rows", lambda: _without_version("claude-code"))
    pool = isolated / "pool.json"  # never read: the refusal comes first
    with pytest.raises(ConfigurationError, match=r"agent 'claude-code' cannot be planned: its model_version"):
        write_plan(pool, ["readme-runner", "claude-code"])
    assert not (isolated / "runs").exists()  # nothing planned, nothing pinned
    # A registry that names another model than the driver requests is refused too.
    rows = registry_rows()
    rows["codex"] = {**rows["codex"], "model": "another-model"}
    with pytest.raises(MissingModelVersion, match="names model 'another-model'"):
        agent_pin("codex", rows)


def test_the_pin_records_each_agent_and_refuses_a_changed_one(tmp_path, monkeypatch) -> None:
    agents = agent_pins(["readme-runner", "claude-code"])
    pin = ensure_pin("2026-12", "local", ["runner"], True, 1 / 360, base=tmp_path, agents=agents)
    assert pin.agents["claude-code"].model_version == "claude-sonnet-4-5-20250929"
    configuration = configuration_from_pin(pin, "claude-code")
    assert configuration is not None and configuration.model_version == "claude-sonnet-4-5-20250929"
    assert configuration.limits["budget_scale"] == 1 / 360 and configuration.limits["executor"] == "local"
    name = identity_name(pin, "claude-code")
    assert name == configuration.identity.name and name != identity_name(pin, "readme-runner")
    assert recording_title(name, "wavgen", 2, 1) == f"{name} / wavgen / attempt 2 (rerun 1)"
    # Pinned again with the same agents: the same pin, the same identities.
    again = ensure_pin("2026-12", "local", ["runner"], True, 1 / 360, base=tmp_path, agents=agents)
    assert again == pin and identity_name(again, "claude-code") == name
    # An agent joining the cycle is pinned on first use.
    joined = ensure_pin("2026-12", "local", ["runner"], True, 1 / 360, base=tmp_path,
                        agents=agent_pins(["codex"]))  # fmt: skip
    assert set(joined.agents) == {"readme-runner", "claude-code", "codex"}
    # A new model version mid-cycle is another agent: refused under the same cycle.
    changed = {"claude-code": agents["claude-code"].model_copy(update={"model_version": "claude-x-2026"})}
    with pytest.raises(EnvironmentRefused, match="agent claude-code: pinned"):
        ensure_pin("2026-12", "local", ["runner"], True, 1 / 360, base=tmp_path, agents=changed)
    # A pin that does not name the agent (written before agents were pinned): the bare words.
    assert identity_name(pin.model_copy(update={"agents": {}}), "claude-code") == "Argusic agent"


def test_the_registry_seed_agrees_with_the_drivers_harness_names_versions_and_models() -> None:
    """agents.csv says which harness and version each agent runs; the code is what runs it (the
    reference runner's HARNESS_VERSION, an external driver's PINNED_VERSION). They must not drift:
    the records' fallback configuration (argusic.publication.agents) and every reader of the seed
    would name a harness version nobody ran (2.0.1 beside a 2.2.0 runner, found in issue 32)."""
    from argusic.attempts.agents import DRIVERS, READ_ME_RUNNER, driver_for
    from argusic.harness import HARNESS_VERSION

    rows = registry_rows()
    assert set(rows) == set(DRIVERS)
    for agent_id, row in rows.items():
        driver = driver_for(agent_id)
        assert row["harness"] == driver.harness_name, agent_id
        assert (row["model"] or None) == driver.model, agent_id
        if driver.external or driver.harness_name == READ_ME_RUNNER:
            assert row["harness_version"] == driver.harness_version(), agent_id
    assert rows["readme-runner"]["harness_version"] == HARNESS_VERSION
