"""A cycle's plan: (agent x project x attempt) specs from the pool, written in packs (one small
AttemptSpec document per attempt, 256 to a content-addressed pack under `runs/<cycle_id>/plan/`, one
manifest a batch: argusic.core.spec.write_specs; XCom carries one reference per attempt,
`…/plan/pack-<sha256>.specs/<attempt_id>.json`, never data), the repair attempts of a round, and the
refusals no retry can fix. No Airflow here: the DAG files own the scheduling, `argusic cycle run`
calls the same functions."""

from __future__ import annotations

import re
from pathlib import Path

from argusic.attempts.agents import driver_for
from argusic.attempts.environment import AgentPin, ensure_pin
from argusic.attempts.identity import MissingModelVersion, agent_pins
from argusic.attempts.repair_run import STANDINS, RepairRefused, repair_limits, usable_items
from argusic.core.record import CONDITION_PATTERN
from argusic.core.runs_store import local_path
from argusic.core.settings import forge_dir, orchestrator_config
from argusic.core.spec import AttemptSpec, RepairItemRef, write_specs
from argusic.cycle.ids import ConfigurationError
from argusic.sources.pool import load_pool


class PlanTooLarge(ValueError):
    """The plan has more attempts than one mapped task may expand to ([core] max_map_length)."""


class NothingPlanned(ValueError):
    """The plan of this run is empty: a cycle that planned nothing fails loudly."""


def plannable_agents(agents: list[str]) -> dict[str, AgentPin]:
    """Each agent's configuration as the cycle's pin will record it; a model-backed agent without an
    exact model version in the registry cannot be planned (a ConfigurationError naming the agent and
    the missing field: no retry fixes it)."""
    try:
        return agent_pins(agents)
    except MissingModelVersion as err:
        raise ConfigurationError(str(err)) from None


def require_scaled_budgets_on_the_forge(
    pool_path: str | Path, demo: bool, budget_scale: float | None
) -> None:
    """Refuse real budgets on the demo forge's fixture projects (its timeout fixture alone would hold
    a worker for 90 minutes): a configuration error that says how to proceed."""
    if demo or budget_scale:
        return
    repos = (forge_dir() / "repos").resolve()
    pool = load_pool(local_path(pool_path))  # on a cluster: a runs store URI, pulled to this host
    if pool.entries and all(Path(e.repo_url).resolve().is_relative_to(repos) for e in pool.entries):
        raise ConfigurationError(
            f"cycle {pool.cycle_id}: the pool is the demo forge's fixture projects ({repos}) with real "
            "budgets (90 min an attempt; its timeout fixture alone would take 90 min): set demo: true "
            "(budgets x 1/360: 15 s) or budget_scale, or name your own catalogue (catalogue: /abs/path.json "
            "with a new cycle_id)"
        )


def write_plan(
    pool_path: Path,
    agents: list[str],
    attempts_per_pair: int | None = None,
    demo: bool = False,
    shard_index: int = 0,
    shard_count: int = 1,
    max_specs: int | None = None,
    budget_scale: float | None = None,
    executor=None,
    conditions: dict[str, str] | None = None,
) -> list[str]:
    """Write the spec of every attempt of this shard and return their references (read_spec), in plan
    order.

    A shard holds every attempt of its projects (projects dealt round-robin in pool order), so the
    three attempts of a pair always land in the same DAG run. Specs are written once, in packs with
    one manifest (argusic.core.spec.write_specs): rewriting the same plan is a no-op, and a plan that
    would change a spec already written is refused (SpecConflict) naming the attempts.
    Planning pins the cycle's environment (argusic.attempts.environment) for the executor the attempts will
    run on (`executor`: an executor or its name; None: ARGUSIC_EXECUTOR, else docker; local is
    refused for a cycle that is not a demo), or checks
    the pin already made (EnvironmentRefused when the harness, instructions or limits changed).
    ``conditions``: seed 002's comparison condition of an agent's attempts (plan_conditions).
    """
    if shard_count < 1 or not 0 <= shard_index < shard_count:
        raise ValueError(f"shard {shard_index} of {shard_count}: expected 0 <= shard_index < shard_count")
    if not agents:
        raise ValueError("no agents to plan for")
    configurations = plannable_agents(agents)  # before anything is written
    plan_conditions(agents, conditions)  # refused before anything is written, too
    pool_path = local_path(pool_path)  # on a cluster, prepare_pool may have run on another host
    pool = load_pool(pool_path)
    project_ids = [entry.project_id for entry in pool.entries]
    mine = {pid for i, pid in enumerate(project_ids) if i % shard_count == shard_index}
    specs = [
        s
        for s in plan_attempts(pool_path, agents, attempts_per_pair, demo, budget_scale, conditions)
        if s.project_id in mine
    ]
    if not specs:
        raise NothingPlanned(
            f"cycle {pool.cycle_id}: nothing to plan: {len(project_ids)} project(s) in the pool, "
            f"{len(mine)} in shard {shard_index} of {shard_count}"
        )
    if max_specs is not None and len(specs) > max_specs:
        raise PlanTooLarge(
            f"{len(specs)} attempts in one run exceed [core] max_map_length={max_specs}: raise it "
            f"(AIRFLOW__CORE__MAX_MAP_LENGTH) or split the cycle with shard_count / one run per agent"
        )
    first = specs[0]
    roles = {"agents" if driver_for(agent).external else "runner" for agent in agents}
    ensure_pin(pool.cycle_id, executor, roles, first.demo, first.budget_scale, agents=configurations)
    return write_specs(specs)


# --- what an attempt task tells (its log's last lines and its label in the UI) -----------------------


# Demo cycles scale the budgets down (90 min → 15 s); records keep the real budget_seconds.
DEMO_BUDGET_SCALE = 1 / 360


def budget_scale_for(demo: bool, budget_scale: float | None) -> tuple[bool, float]:
    """(demo, scale) of planned attempts: `budget_scale` when given, else 1/360 for a demo, else 1.

    A scaled budget is recorded as the demo cycles are: demo true, real budget_seconds kept,
    effective_budget_seconds beside it; the board flags the cycle (is_demo_cycle)."""
    if budget_scale is not None and not 0 < budget_scale <= 1:
        raise ValueError(f"budget scale {budget_scale}: expected a number in (0, 1]")
    scale = budget_scale if budget_scale is not None else (DEMO_BUDGET_SCALE if demo else 1.0)
    return demo or scale < 1, scale


def plan_conditions(agents: list[str], conditions: dict[str, str] | None) -> dict[str, str]:
    """Seed 002's comparison condition an agent's attempts are planned under, by agent: a plan may
    name one per agent (baseline | variant | external-<name>, e.g. the same task run by our harness
    before a change as baseline and after it as variant); an agent it does not name runs under its
    own (argusic.core.record.default_condition, written by the attempt) and its spec stays byte for
    byte what it was. A condition that is not one of seed 002's, or one named for an agent that is
    not planned, is a ConfigurationError (no retry fixes it)."""
    named = dict(conditions or {})
    unplanned = sorted(set(named) - set(agents))
    if unplanned:
        raise ConfigurationError(f"conditions name agents this plan does not run: {', '.join(unplanned)}")
    bad = sorted(f"{a}: {c!r}" for a, c in named.items() if not re.match(CONDITION_PATTERN, str(c)))
    if bad:
        raise ConfigurationError(
            f"conditions are baseline, variant or external-<name> (seed 002): {'; '.join(bad)}"
        )
    return named


def plan_attempts(
    pool_path: Path,
    agents: list[str],
    attempts_per_pair: int | None = None,
    demo: bool = False,
    budget_scale: float | None = None,
    conditions: dict[str, str] | None = None,
) -> list[AttemptSpec]:
    """Every (agent × project × attempt 1..n) of the cycle, in a stable order; an agent named in
    ``conditions`` has its attempts planned under that condition (plan_conditions)."""
    pool = load_pool(Path(pool_path))
    n = attempts_per_pair or orchestrator_config().attempts_per_pair
    demo, scale = budget_scale_for(demo, budget_scale)
    condition_of = plan_conditions(agents, conditions)
    return [
        AttemptSpec(
            cycle_id=pool.cycle_id,
            agent_id=agent,
            project_id=entry.project_id,
            repo_url=entry.repo_url,
            commit=entry.commit,
            tier=entry.tier,
            attempt_no=attempt_no,
            demo=demo,
            budget_scale=scale,
            condition=condition_of.get(agent),
        )
        for agent in agents
        for entry in pool.entries
        for attempt_no in range(1, n + 1)
    ]


# A demo's stand-ins replay a gold patch or change nothing: the same verdict every time, so a demo runs
# each item once (its marts say "1 of 3 planned runs"); a cycle runs the configured number (seed 001: 3).
DEMO_RUNS_PER_ITEM = 1


def demo_runs(demo: bool) -> int | None:
    """The runs per item a repair round plans: one in a demo, else the configured number (None)."""
    return DEMO_RUNS_PER_ITEM if demo else None


def plan_repair_specs(
    cycle_id: str,
    project_ids: list[str],
    agents: list[str],
    demo: bool = False,
    budget_scale: float = 1.0,
    base: Path | None = None,
    attempts_per_item: int | None = None,
) -> list:
    """One spec per (agent, usable item, attempt), in plan order. The attempt id's project part is
    the pool project; attempt numbers count the (agent, project)'s repair attempts over its usable
    items in item-id order (item i, try k: i * attempts_per_item + k), and each spec names its item.
    Agents that cannot repair are refused (RepairRefused) rather than silently left out.
    ``attempts_per_item``: the configured runs per item (``[repair] attempts_per_item``, the seed's 3)
    unless a demo asks for fewer; a cycle's plan keeps the configured number."""
    for agent in agents:
        driver = driver_for(agent)
        if agent in STANDINS and not demo:
            raise RepairRefused(f"{agent} is a demo stand-in (no model): plan it in demo cycles only")
        if not (driver.external or agent in STANDINS):
            raise RepairRefused(
                f"{agent}: the {driver.harness_name} harness does not repair; choose external agents, "
                f"or in a demo {', '.join(sorted(STANDINS))}"
            )
    per_item = repair_limits().attempts_per_item if attempts_per_item is None else attempts_per_item
    if per_item < 1:
        raise RepairRefused(f"attempts per item must be at least 1, got {per_item}")
    if attempts_per_item is not None and not demo:
        raise RepairRefused("only a demo plans fewer repair runs per item than configured")
    specs = []
    for project_id in project_ids:
        items = usable_items(project_id, base)
        for agent in agents:
            for i, item in enumerate(items):
                for k in range(1, per_item + 1):
                    specs.append(
                        AttemptSpec(
                            cycle_id=cycle_id,
                            purpose="repair",
                            agent_id=agent,
                            project_id=project_id,
                            repo_url=str(item.repository),
                            commit=item.base,
                            tier="standard",
                            attempt_no=i * per_item + k,
                            demo=demo,
                            budget_scale=budget_scale,
                            item=RepairItemRef(
                                item_id=item.item_id, revision=item.revision, track=item.track
                            ),
                        )
                    )
    return specs
