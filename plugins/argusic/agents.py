"""Agents: the registry (a dbt seed, read here too so ingest can refuse unknown agents) and the
drivers that know how to start each agent's harness inside an attempt."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from argusic.settings import dbt_project_dir


@dataclass(frozen=True)
class AgentDriver:
    agent_id: str
    harness_name: str
    harness_args: tuple[str, ...]
    key_kind: str  # per_run | shared | none
    key_env_var: str = "OPENAI_API_KEY"  # how the key reaches the agent inside the container
    base_url_env_var: str | None = "OPENAI_BASE_URL"
    shared_env_var: str | None = None  # for key_kind shared: the orchestrator's variable holding it


# Every agent the pipeline can start: agent_id -> harness and its extra arguments. The deterministic
# reference agents share the readme-runner harness; external (model-backed) harnesses add theirs.
DRIVERS: dict[str, AgentDriver] = {
    "readme-runner": AgentDriver("readme-runner", "readme-runner", (), "none"),
    "readme-runner-norecover": AgentDriver(
        "readme-runner-norecover", "readme-runner", ("--no-recovery",), "none"
    ),
}


def registry_path() -> Path:
    return dbt_project_dir() / "seeds" / "agents.csv"


def known_agents(path: Path | None = None) -> set[str]:
    """Agent ids in the registry seed; ingest refuses records naming any other agent."""
    with open(path or registry_path(), newline="") as handle:
        return {row["agent_id"] for row in csv.DictReader(handle)}


def driver_for(agent_id: str) -> AgentDriver:
    try:
        return DRIVERS[agent_id]
    except KeyError:
        raise ValueError(f"no driver for agent {agent_id!r}; known: {', '.join(sorted(DRIVERS))}") from None
