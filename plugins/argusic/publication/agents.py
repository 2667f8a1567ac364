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
- Each project row: ``verified_by_agent_name`` beside it.

The operator's ``agent_id`` (the registry's key, ``claude-code``) is never published outside a
``configuration`` field (issue 32): in every published attempt id (``attempt_id``, ``rerun_of``,
``verified_by_attempt_id``, a correction's ids, and so the run pages' addresses, the served copies'
site addresses and their links) the agent part is the identity's code
(``<cycle>.<purpose>.A-3f9c0a.<project>.a<n>``, ``published_attempt_id``), and the rows' ``agent_id``
and ``verified_by_agent`` are the code too. The operator's id is kept in the attempt's and the row's
``configuration`` (``agent_id``) and in each identity's ``configuration.agent_ids``, so the published
id maps back (``operator_attempt_id``; ``argusic.publication.sealing.published_attempt``) and is
recomputed the same way from the same configuration. Two attempts of a cycle that would be published
under one id (two agent ids of one configuration on one project) block the publication.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from argusic.attempts.agents import driver_for
from argusic.attempts.environment import Pin, pull_pin, read_pin
from argusic.attempts.identity import AgentConfiguration, configuration_from_pin, registry_rows
from argusic.core.record import ATTEMPT_ID_RE
from argusic.publication.files import published_attempt_id
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
        if agent_id not in found.setdefault("agent_ids", []):
            found["agent_ids"].append(agent_id)
    codes = {agent_id: entry["identity"] for agent_id, entry in by_agent.items()}
    published_rows = [_row(r, by_agent.get(r["agent_id"])) for r in rows]
    published_attempts = [_attempt(a, by_agent.get(a.get("agent_id")), codes) for a in attempts]
    published_projects = [_project(p, by_agent, codes) for p in projects]
    seen: dict[str, str] = {}
    for before, after in zip(attempts, published_attempts, strict=True):
        other = seen.setdefault(after["attempt_id"], before["attempt_id"])
        if other != before["attempt_id"]:
            raise PublicationBlocked(
                f"board of cycle {cycle_id!r} not published: attempts {other} and {before['attempt_id']} "
                f"would both be published as {after['attempt_id']} (two agent ids of one configuration)"
            )
    agents = [entries[code] for code in sorted(entries)]
    return agents, published_rows, published_attempts, published_projects


def codes_of(attempt_id: Any, codes: dict[str, str]) -> Any:
    """An attempt id as published, from the operator's agent ids' codes (unchanged when its agent has
    none, or it is not of the grammar)."""
    if not isinstance(attempt_id, str):
        return attempt_id
    match = ATTEMPT_ID_RE.fullmatch(attempt_id)
    return published_attempt_id(attempt_id, codes.get(match["agent_id"])) if match else attempt_id


def publish_correction(correction: dict[str, Any], codes: dict[str, str]) -> dict[str, Any]:
    """A board.json correction row with its attempt ids as published."""
    out = dict(correction)
    for key in ("attempt_id", "rerun_attempt_id"):
        out[key] = codes_of(correction.get(key), codes)
    return out


def _row(row: dict[str, Any], entry: dict[str, Any] | None) -> dict[str, Any]:
    out = dict(row)
    if entry is not None:
        out["agent_id"] = entry["identity"]
        out["configuration"] = {"agent_id": row["agent_id"]}
        out["display_name"] = entry["name"]
        out["agent"] = entry["identity"]
        out["agent_page"] = entry["page"]
    return out


def _attempt(attempt: dict[str, Any], entry: dict[str, Any] | None, codes: dict[str, str]) -> dict[str, Any]:
    out = {k: v for k, v in attempt.items() if k not in CONFIGURATION_FIELDS}
    out["configuration"] = {k: attempt.get(k) for k in CONFIGURATION_FIELDS}
    out["attempt_id"] = codes_of(attempt["attempt_id"], codes)
    out["rerun_of"] = codes_of(attempt.get("rerun_of"), codes)
    if entry is not None:
        out["configuration"]["agent_id"] = attempt["agent_id"]
        out["agent_id"] = entry["identity"]
        out["agent"] = entry["identity"]
        out["agent_name"] = entry["name"]
        version = entry["configuration"]["model_version"]
        answered = attempt.get("model_responded")
        out["model_matches"] = None if not (version and answered) else answered == version
    return out


def _project(
    project: dict[str, Any], by_agent: dict[str, dict[str, Any]], codes: dict[str, str]
) -> dict[str, Any]:
    out = dict(project)
    entry = by_agent.get(project.get("verified_by_agent"))
    out["verified_by_attempt_id"] = codes_of(project.get("verified_by_attempt_id"), codes)
    if entry is not None:
        out["verified_by_agent"] = entry["identity"]
    out["verified_by_agent_name"] = entry["name"] if entry is not None else None
    out["verified_by_agent_page"] = entry["page"] if entry is not None else None
    return out
