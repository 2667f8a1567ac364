"""Agents: the registry (a dbt seed, read here too so ingest can refuse unknown agents) and the
drivers that know how to start each agent's harness inside an attempt.

A driver says which harness runs (the reference ``readme-runner``, or an external agent CLI:
``claude-code``, ``codex``), in which image, how its in-container command is built, which variables
carry its model key, and how its output is collected into the run record. External harnesses:

- run in the agents image (``ARGUSIC_AGENTS_IMAGE``, default ``argusic-agents:bookworm``, built by
  scripts/build_agents_image.sh) under the stdlib recorder (``/out/log.txt``, ``/out/recording.cast``)
  with their session JSONL teed to ``/out/session.jsonl``;
- read the standard instructions (``argusic/external/instructions.md``, rendered with the project
  folder and ``/out/report.json``) from a read-only task folder;
- get their whole environment from the external driver's ``build_env`` (fresh HOME and config
  folders outside /out, isolation settings, the key variables and nothing else);
- are collected by the external collector (usage / model / harness / key / report parts).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from argusic.core.settings import agents_image, dbt_project_dir
from argusic.external import REPORT_FILE, SESSION_LOG, harnesses, render_instructions
from argusic.external.collect import CollectedRun
from argusic.external.model_settings import AUXILIARY_MODEL_ENV
from argusic.harness.readme_runner import HARNESS_VERSION
from argusic.sandbox.launch import HarnessPaths, Launch, LaunchBuilder

READ_ME_RUNNER = "readme-runner"
EXTERNAL_HARNESSES = ("claude-code", "codex")
INSTRUCTIONS_FILE = "instructions.md"  # in the read-only task folder


@dataclass(frozen=True)
class AgentDriver:
    agent_id: str
    harness_name: str  # readme-runner | claude-code | codex
    harness_args: tuple[str, ...]
    key_kind: str  # per_run | shared | none
    key_env_var: str = "OPENAI_API_KEY"  # how the key reaches the agent inside the container
    base_url_env_var: str | None = "OPENAI_BASE_URL"
    shared_env_var: str | None = None  # for key_kind shared: the orchestrator's variable holding it
    model: str | None = None  # external harnesses: the model requested (a gateway model name)
    max_retries: int | None = None  # external harnesses: model-request retries (None: the CLI's default)

    @property
    def external(self) -> bool:
        return self.harness_name in EXTERNAL_HARNESSES

    def module(self) -> ModuleType:
        """The external driver + collector module (argusic.external.claude_code / codex)."""
        if not self.external:
            raise ValueError(f"{self.agent_id}: {self.harness_name} is not an external harness")
        return harnesses()[self.harness_name]

    def image(self) -> str | None:
        """The image the attempt runs in; None: the executor's default (the runner image)."""
        return agents_image() if self.external else None

    def harness_version(self) -> str:
        if self.external:
            return self.module().PINNED_VERSION
        return HARNESS_VERSION

    def launch(self, key_env: dict[str, str]) -> LaunchBuilder | None:
        """How the attempt starts inside the container; None: the reference harness (the executor's
        default, with ``harness_args``). ``key_env`` is ``IssuedKey.container_env(key_env_var,
        base_url_env_var)``: for an external harness it goes into the driver's ``build_env`` (the key
        then lives only in the container's environment). No title: the container is not told which
        attempt it is; the recording is titled on the host (attempts.common.title_recording)."""
        if not self.external:
            return None
        return _ExternalLaunch(self, dict(key_env))

    def collect(self, out_dir: Path) -> CollectedRun:
        """An external harness's session log and report, read by its collector."""
        return self.module().collect(out_dir / SESSION_LOG, out_dir / REPORT_FILE, requested_model=self.model)


def side_call_env(harness: str, model: str | None) -> dict[str, str]:
    """The variables that send a CLI's side calls (titles, summaries: Claude Code's "small, fast"
    model) to the agent's own model: an agent is one model, and its record is then graded same-model
    (seed 002). Read by the launch and by the record's settings, so that both say the same."""
    if harness != "claude-code" or not model:
        return {}
    return {name: model for name in AUXILIARY_MODEL_ENV}


class _ExternalLaunch:
    """Build the in-container command of an external harness from the paths the executor gives."""

    def __init__(self, driver: AgentDriver, key_env: dict[str, str]) -> None:
        self._driver = driver
        self._key_env = key_env

    def __repr__(self) -> str:
        return f"_ExternalLaunch({self._driver.agent_id!r}, key variables {sorted(self._key_env)})"

    def __call__(self, paths: HarnessPaths) -> Launch:
        driver, mod = self._driver, self._driver.module()
        if not driver.model:
            raise ValueError(f"{driver.agent_id}: an external harness needs a model to request")
        key_env = {k: v for k, v in self._key_env.items() if v}
        base_url = key_env.get(mod.BASE_URL_ENV)
        if driver.harness_name == "claude-code" and base_url and base_url.rstrip("/").endswith("/v1"):
            # The gateway's OpenAI-style URL ends in /v1; Anthropic clients add /v1/messages themselves.
            key_env[mod.BASE_URL_ENV] = base_url.rstrip("/")[: -len("/v1")]
        out = paths.out.rstrip("/")
        report_path = f"{out}/report.json"
        instructions = f"{paths.task.rstrip('/')}/{INSTRUCTIONS_FILE}"
        if driver.harness_name == "codex":
            agent_cmd = mod.build_command(
                paths.project,
                out,
                instructions,
                driver.model,
                gateway_url=key_env.get(mod.BASE_URL_ENV),
                max_retries=driver.max_retries,
            )
            env = mod.build_env(key_env, paths.scratch)
        else:
            agent_cmd = mod.build_command(paths.project, out, instructions, driver.model)
            env = mod.build_env(key_env, paths.scratch, max_retries=driver.max_retries)
            env |= side_call_env(driver.harness_name, driver.model)
        argv = [
            "python3",
            f"{paths.harness}/recorder.py",
            "--out",
            out,
            "--",
            *agent_cmd,
        ]
        return Launch(
            argv=argv,
            env=env,
            files={INSTRUCTIONS_FILE: render_instructions(paths.project, report_path)},
        )


# Every agent the pipeline can start: agent_id -> harness and its extra arguments. The deterministic
# reference agents share the readme-runner harness; external (model-backed) harnesses add theirs,
# routed through our gateway with a key made for each attempt (key kind per_run).
DRIVERS: dict[str, AgentDriver] = {
    "readme-runner": AgentDriver("readme-runner", READ_ME_RUNNER, (), "none"),
    "readme-runner-norecover": AgentDriver(
        "readme-runner-norecover", READ_ME_RUNNER, ("--no-recovery",), "none"
    ),
    "claude-code": AgentDriver(
        "claude-code",
        "claude-code",
        (),
        "per_run",
        key_env_var="ANTHROPIC_API_KEY",
        base_url_env_var="ANTHROPIC_BASE_URL",
        model="claude-sonnet-4-5",
    ),
    "codex": AgentDriver(
        "codex",
        "codex",
        (),
        "per_run",
        key_env_var="OPENAI_API_KEY",
        base_url_env_var="OPENAI_BASE_URL",
        model="gpt-5.3-codex",
    ),
    # Demo stand-ins for repair attempts (argusic.attempts.repair_run): no model, no agent; they replay
    # the item's gold patch or change nothing, in demo cycles only, and say so in their recordings.
    "repair-demo-gold": AgentDriver("repair-demo-gold", "repair-demo-stand-in", (), "none"),
    "repair-demo-none": AgentDriver("repair-demo-none", "repair-demo-stand-in", (), "none"),
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
