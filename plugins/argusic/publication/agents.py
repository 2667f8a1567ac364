"""Agents as published: under their neutral Argusic identity (argusic.attempts.identity), with the
exact configuration each identity stands for in one clearly named place.

What a publication does with agents (``present``):

- ``board.json`` gets ``agents``: one entry per identity of the cycle, ``{identity, name, page,
  configuration}``; ``configuration`` is the exact configuration the identity is the hash of (model,
  model version, harness and version, harness arguments, instructions version and sha256, limits),
  its ``sha256``, ``source`` (``pin``: the cycle's environment pin; ``records``: rebuilt from the run
  records and the registry, for a cycle pinned before agents were) and the product and maker words
  (``product``), and the models the cycle's attempts say answered (``models_answered``).
- Each board row: ``display_name`` is the identity's name, ``agent`` its code, ``agent_page`` its page.
- Each attempt: ``agent``, ``agent_name``, and ``configuration`` holding what the record says of the
  harness and model (``harness_name``, ``harness_version``, ``model_requested``, ``model_responded``);
  those fields leave the attempt's top level, so a run page shows the identity and links the agent
  page. ``model_matches`` says whether the model that answered is the configuration's model version.
- Each project row: ``verified_by_agent_name`` beside the operator's id.

The operator's ``agent_id`` stays (the warehouse's key, and a part of every attempt id).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from argusic.attempts.agents import driver_for
from argusic.attempts.environment import Pin, pull_pin, read_pin
from argusic.attempts.identity import AgentConfiguration, configuration_from_pin, registry_rows
from argusic.warehouse.dbt_build import PublicationBlocked

# The attempt fields that name a harness or a model: published under the attempt's "configuration".
CONFIGURATION_FIELDS = ("harness_name", "harness_version", "model_requested", "model_responded")


def cycle_pin(cycle_id: str) -> Pin | None:
    """The cycle's environment pin, if this host (or the runs store) has one."""
    try:
        pull_pin(cycle_id)
        return read_pin(cycle_id)
    except Exception:  # noqa: BLE001 (no pin to be read: the configuration is rebuilt from the records)
        return None


def configuration_from_records(
    agent_id: str, attempts: list[dict[str, Any]], registry: dict[str, dict[str, str]]
) -> AgentConfiguration:
    """An agent's configuration rebuilt from its attempts' records (what they say of the harness,
    model, instructions and limits, the first attempt in id order) and the registry's model version:
    for cycles whose pin does not name the agent."""
    mine = sorted((a for a in attempts if a.get("agent_id") == agent_id), key=lambda a: a["attempt_id"])
    first = mine[0] if mine else {}
    row = registry.get(agent_id, {})
    try:
        args = driver_for(agent_id).harness_args
    except ValueError:
        args = ()
    container = None
    if first.get("limit_cpus") is not None or first.get("limit_memory_bytes") is not None:
        container = {
            "cpus": first.get("limit_cpus"),
            "memory_bytes": first.get("limit_memory_bytes"),
            "pids": first.get("limit_pids"),
            "disk_bytes": first.get("limit_disk_bytes"),
            "network": first.get("network_mode"),
        }
    budgets = {a["tier"]: a["budget_seconds"] for a in mine if a.get("tier") and a.get("budget_seconds")}
    scale = 1.0
    if first.get("demo") and first.get("budget_seconds") and first.get("effective_budget_seconds"):
        scale = round(first["effective_budget_seconds"] / first["budget_seconds"], 6)
    return AgentConfiguration(
        model=first.get("model_requested") or (row.get("model") or None),
        model_version=row.get("model_version") or None,
        harness=first.get("harness_name") or row.get("harness") or "unrecorded",
        harness_version=first.get("harness_version") or row.get("harness_version") or "unrecorded",
        harness_args=tuple(args),
        instructions_version=first.get("instructions_version"),
        instructions_sha256=first.get("instructions_sha256"),
        limits={
            "executor": first.get("executor"),
            "container": container,
            "budgets_seconds": dict(sorted(budgets.items())),
            "budget_scale": scale,
        },
    )


def present(
    cycle_id: str,
    rows: list[dict[str, Any]],
    attempts: list[dict[str, Any]],
    projects: list[dict[str, Any]],
    pin: Pin | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(agents, rows, attempts, projects) as published (see the module's doc). PublicationBlocked when
    two configurations of the cycle would be shown under one identity."""
    try:
        registry = registry_rows()
    except FileNotFoundError:  # a dbt project without the agents seed: no product names, no versions
        registry = {}
    agent_ids = sorted({r["agent_id"] for r in rows} | {a["agent_id"] for a in attempts if a.get("agent_id")})
    entries: dict[str, dict[str, Any]] = {}
    by_agent: dict[str, dict[str, Any]] = {}
    for agent_id in agent_ids:
        configuration = configuration_from_pin(pin, agent_id) if pin is not None else None
        source = "pin"
        if configuration is None:
            configuration, source = configuration_from_records(agent_id, attempts, registry), "records"
        identity = configuration.identity
        answered = Counter(
            a.get("model_responded")
            for a in attempts
            if a.get("agent_id") == agent_id and a.get("model_responded")
        )
        entry = entries.get(identity.code)
        if entry is not None and entry["configuration"]["sha256"] != identity.sha256:
            raise PublicationBlocked(
                f"board of cycle {cycle_id!r} not published: two agent configurations share the identity "
                f"{identity.code} (sha256 {entry['configuration']['sha256']} and {identity.sha256})"
            )
        if entry is None:
            entry = entries[identity.code] = {
                "identity": identity.code,
                "name": identity.name,
                "page": identity.page,
                "configuration": {
                    **configuration.canonical(),
                    "sha256": identity.sha256,
                    "source": source,
                    "product": [],
                    "models_answered": [],
                },
            }
        found = entry["configuration"]
        product = (registry.get(agent_id) or {}).get("display_name")
        if product and product not in found["product"]:
            found["product"].append(product)
        merged = Counter(dict(found["models_answered"])) + answered
        found["models_answered"] = sorted(merged.items())
        by_agent[agent_id] = entry
    published_rows = [_row(r, by_agent.get(r["agent_id"])) for r in rows]
    published_attempts = [_attempt(a, by_agent.get(a.get("agent_id"))) for a in attempts]
    published_projects = [_project(p, by_agent) for p in projects]
    agents = [entries[code] for code in sorted(entries)]
    return agents, published_rows, published_attempts, published_projects


def _row(row: dict[str, Any], entry: dict[str, Any] | None) -> dict[str, Any]:
    out = dict(row)
    if entry is not None:
        out["display_name"] = entry["name"]
        out["agent"] = entry["identity"]
        out["agent_page"] = entry["page"]
    return out


def _attempt(attempt: dict[str, Any], entry: dict[str, Any] | None) -> dict[str, Any]:
    out = {k: v for k, v in attempt.items() if k not in CONFIGURATION_FIELDS}
    out["configuration"] = {k: attempt.get(k) for k in CONFIGURATION_FIELDS}
    if entry is not None:
        out["agent"] = entry["identity"]
        out["agent_name"] = entry["name"]
        version = entry["configuration"]["model_version"]
        answered = attempt.get("model_responded")
        out["model_matches"] = None if not (version and answered) else answered == version
    return out


def _project(project: dict[str, Any], by_agent: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out = dict(project)
    entry = by_agent.get(project.get("verified_by_agent"))
    out["verified_by_agent_name"] = entry["name"] if entry is not None else None
    out["verified_by_agent_page"] = entry["page"] if entry is not None else None
    return out
