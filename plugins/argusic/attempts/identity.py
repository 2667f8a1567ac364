"""Neutral Argusic identities (methodology sections 5 and 18): every agent is a fixed configuration
(model + exact model version + harness + harness version + harness arguments + standard-instructions
version + limits), presented under a neutral name, "Argusic agent A-3f9c0a", never under its maker's
or product's name. The exact configuration is recorded (the cycle's environment pin), published
(board.json's ``agents``) and shown on the agent's page, so every number traces to it.

The identity is *derived*, not assigned: ``A-`` and the first six hex digits of the sha256 of the
configuration's canonical JSON (``AgentConfiguration.canonical``: sorted keys, no spaces). Why a hash
rather than a recorded name: it is stable for as long as the configuration is (the same
configuration gives the same identity in every cycle, on every host, with no table to keep), it
changes when any part changes (a new model version, harness version, instructions edition, argument
or limit is a new agent: its numbers are never mixed with the old one's), and anybody can check it
from the page that shows the configuration. Six hex digits (16.7 million) make an accidental
collision among a few hundred configurations unlikely; a publication that would show two
configurations under one identity is refused (``argusic.publication.board``).

The operator's id (``agent_id``: the registry's key, ``claude-code``) stays in the warehouse, the
Airflow labels and the attempt ids the warehouse and the evidence store know; what readers see is the
identity, in published attempt ids too (``<cycle>.<purpose>.A-3f9c0a.<project>.a<n>``,
argusic.publication.agents).

A model-backed agent must name its exact model version in the registry (``agents.csv``
``model_version``): without one it cannot be planned (``MissingModelVersion``), since "the model" an
alias names can change under the same name mid-cycle.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argusic.attempts.agents import driver_for, registry_path
from argusic.attempts.environment import AgentPin, Pin

CONFIGURATION_SCHEMA = "argusic.agent_configuration/1"
IDENTITY_PREFIX = "A-"
IDENTITY_HEX = 6
IDENTITY_WORDS = "Argusic agent"


class MissingModelVersion(ValueError):
    """A model-backed agent whose registry row names no exact model version: it cannot be planned."""


@dataclass(frozen=True)
class AgentIdentity:
    code: str  # "A-3f9c0a"
    sha256: str  # of the configuration's canonical JSON

    @property
    def name(self) -> str:
        return f"{IDENTITY_WORDS} {self.code}"

    @property
    def page(self) -> str:
        """The agent page's path in the site, from its root."""
        return f"agents/{self.code}.html"


@dataclass(frozen=True)
class AgentConfiguration:
    """One agent configuration: everything that makes two agents the same agent."""

    model: str | None
    model_version: str | None
    harness: str
    harness_version: str
    harness_args: tuple[str, ...] = ()
    instructions_version: str | None = None
    instructions_sha256: str | None = None
    limits: dict[str, Any] = field(default_factory=dict)

    def canonical(self) -> dict[str, Any]:
        return {
            "schema": CONFIGURATION_SCHEMA,
            "model": self.model,
            "model_version": self.model_version,
            "harness": self.harness,
            "harness_version": self.harness_version,
            "harness_args": list(self.harness_args),
            "instructions_version": self.instructions_version,
            "instructions_sha256": self.instructions_sha256,
            "limits": self.limits,
        }

    def canonical_json(self) -> str:
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def identity(self) -> AgentIdentity:
        return identity_of(self)


def identity_of(configuration: AgentConfiguration) -> AgentIdentity:
    """The neutral identity of a configuration (see the module's doc)."""
    digest = hashlib.sha256(configuration.canonical_json().encode("utf-8")).hexdigest()
    return AgentIdentity(code=IDENTITY_PREFIX + digest[:IDENTITY_HEX], sha256=digest)


# --- the registry and the pin ---------------------------------------------------------------------


def registry_rows(path: Path | None = None) -> dict[str, dict[str, str]]:
    """The agents registry (dbt_project/seeds/agents.csv) by agent_id."""
    with open(path or registry_path(), newline="", encoding="utf-8") as handle:
        return {row["agent_id"]: row for row in csv.DictReader(handle)}


def agent_pin(agent_id: str, registry: dict[str, dict[str, str]] | None = None) -> AgentPin:
    """What the cycle's pin records of an agent: its driver's harness, version and arguments, and the
    registry's model and exact model version. MissingModelVersion for a model-backed agent whose
    registry row names no model version (or names another model than its driver requests)."""
    driver = driver_for(agent_id)
    rows = registry if registry is not None else registry_rows()
    row = rows.get(agent_id, {})
    model = (row.get("model") or "").strip() or None
    version = (row.get("model_version") or "").strip() or None
    if driver.model:
        where = f"{registry_path().name} (dbt_project/seeds)"
        if not version:
            raise MissingModelVersion(
                f"agent {agent_id!r} cannot be planned: its model_version is empty in {where}; a "
                f"model-backed agent (model {driver.model}) must name the exact model version it runs "
                "(for example a dated snapshot), which the cycle's environment pin records"
            )
        if model != driver.model:
            raise MissingModelVersion(
                f"agent {agent_id!r} cannot be planned: {where} names model {model!r}, its driver "
                f"requests {driver.model!r}"
            )
    return AgentPin(
        model=driver.model,
        model_version=version,
        harness=driver.harness_name,
        harness_version=driver.harness_version(),
        harness_args=list(driver.harness_args),
    )


def agent_pins(agent_ids: Iterable[str]) -> dict[str, AgentPin]:
    """agent_pin for each agent (the registry read once)."""
    rows = registry_rows()
    return {agent_id: agent_pin(agent_id, rows) for agent_id in sorted(set(agent_ids))}


def pin_limits(pin: Pin) -> dict[str, Any]:
    """The limits part of a configuration, from a cycle's pin: the container's limits (none for the
    local executor), the real budgets by tier and the scale a demo applies to them."""
    container = pin.container.model_dump() if pin.container is not None else None
    return {
        "executor": pin.executor,
        "container": container,
        "budgets_seconds": dict(sorted(pin.budgets_seconds.items())),
        "budget_scale": pin.budget_scale if pin.demo else 1.0,
    }


def configuration_from_pin(pin: Pin, agent_id: str) -> AgentConfiguration | None:
    """An agent's configuration as its cycle's pin records it; None when the pin does not name the
    agent (a pin written before agents were pinned)."""
    agent = pin.agents.get(agent_id)
    if agent is None:
        return None
    return AgentConfiguration(
        model=agent.model,
        model_version=agent.model_version,
        harness=agent.harness,
        harness_version=agent.harness_version,
        harness_args=tuple(agent.harness_args),
        instructions_version=pin.instructions.version,
        instructions_sha256=pin.instructions.sha256,
        limits=pin_limits(pin),
    )


def identity_name(pin: Pin | None, agent_id: str) -> str:
    """The name an attempt is presented under (its recording's title): the identity of its pinned
    configuration, or the bare "Argusic agent" when the pin does not name the agent."""
    configuration = configuration_from_pin(pin, agent_id) if pin is not None else None
    return configuration.identity.name if configuration is not None else IDENTITY_WORDS


def recording_title(
    name: str, project_id: str, attempt_no: int, rerun_no: int = 0, item: str | None = None
) -> str:
    """A recording's title: ``<identity> / <project> / attempt N`` (never the operator's agent id)."""
    rerun = f" (rerun {rerun_no})" if rerun_no else ""
    part = f" / item {item}" if item else ""
    return f"{name} / {project_id}{part} / attempt {attempt_no}{rerun}"
