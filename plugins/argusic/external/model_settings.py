"""The model settings and the comparison grade of an external harness's attempt (issue #31, seed 002).

Seed 002's record names, under *model*, the model requested, the one that answered and **the settings**,
and under *harness* its **comparison grade**. Both are made here, by our collector, from what the
harness was handed (the launch: its arguments and environment, with no key) and what its session log
shows; never from the agent's words.

Settings (``settings``): temperature, maximum output tokens and reasoning effort, the auxiliary-model
variables (the model of a CLI's side calls: titles, summaries) and every other setting passed to the
model (the model argument, retries, the turn limit, a provider). Each value carries its status, as seed
002's "unknown values" section says: *measured* (read from the launch or the session log: ``source``
names which), *derived* (computed from other values), *unavailable* (the harness neither takes it from
us nor reports it: value null, never a default taken for a fact). ``answered`` lists the models the
session log shows answering.

The grade (``grade``, ``grade_basis``): *same-model* when every model the session shows answering is
the model the attempt asked for (the experiment's model; a dated snapshot of it counts as it), so the
harness's difference can be read; *reference* when another model answered (the harness could only run
with another model, or its side calls went elsewhere): for reference only. No grade when the session
shows no model answering (such an attempt is invalid anyway). Codex's stream names no model: it
reports a reroute as an error item (``model rerouted: A -> B``), so a session that answered without one
ran with the model requested.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# The variables Claude Code reads for the model of its side calls (the older and the current name).
AUXILIARY_MODEL_ENV = ("ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL")
# Settings Claude Code takes from its environment (none of them a key).
CLAUDE_MAX_OUTPUT_ENV = "CLAUDE_CODE_MAX_OUTPUT_TOKENS"
CLAUDE_THINKING_ENV = "MAX_THINKING_TOKENS"
CLAUDE_RETRIES_ENV = "CLAUDE_CODE_MAX_RETRIES"
# Codex's `-c key=value` overrides that set the model's own settings.
CODEX_EFFORT_KEY = "model_reasoning_effort"
CODEX_MAX_OUTPUT_KEY = "model_max_output_tokens"
CODEX_TEMPERATURE_KEY = "model_temperature"


def measured(value, source: str) -> dict:
    return {"value": value, "status": "measured", "source": source}


def unavailable(source: str) -> dict:
    return {"value": None, "status": "unavailable", "source": source}


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _flag(argv: Sequence[str], flag: str) -> str | None:
    for n, word in enumerate(argv[:-1]):
        if word == flag:
            return argv[n + 1]
    return None


def _codex_overrides(argv: Sequence[str]) -> dict[str, str]:
    """Codex's ``-c key=value`` overrides (the value as written: TOML)."""
    found = {}
    for n, word in enumerate(argv[:-1]):
        if word == "-c" and "=" in argv[n + 1]:
            key, _, value = argv[n + 1].partition("=")
            found[key.strip()] = value.strip()
    return found


def answered_models(run) -> list[str]:
    """The models the session log shows answering: Claude Code's assistant messages and its result's
    per-model usage (side calls included); Codex's reroute target. Sorted, without repeats."""
    if run is None:
        return []
    details = getattr(run, "details", {}) or {}
    names = set()
    for key in ("models_answered", "models_used"):
        value = details.get(key)
        if isinstance(value, list):
            names.update(v for v in value if isinstance(v, str) and v)
    if run.model_responded:
        names.add(run.model_responded)
    return sorted(names)[:16]


def model_settings(harness: str, run, argv: Sequence[str] = (), env: Mapping[str, str] | None = None) -> dict:
    """The record's ``model.settings`` for an attempt of `harness` launched with `argv` and `env` (the
    agent's own argument vector and environment; keys are never read here) whose session is `run`."""
    env = env or {}
    argv = list(argv)
    answered = answered_models(run)
    if harness == "codex":
        overrides = _codex_overrides(argv)

        def override(key: str, what: str) -> dict:
            if key in overrides:
                return measured(_number(overrides[key].strip('"')), f"launch argument -c {key}")
            return unavailable(f"codex: {what} not passed (the CLI's default); its stream does not state it")

        passed = {}
        if (model := _flag(argv, "-m")) is not None:
            passed["model"] = measured(model, "launch argument -m")
        if "model_provider" in overrides:
            passed["model_provider"] = measured(overrides["model_provider"].strip('"'), "launch argument -c")
        retries = re.search(r"request_max_retries = (\d+)", " ".join(argv))
        passed["max_retries"] = (
            measured(int(retries.group(1)), "launch argument -c model_providers (request_max_retries)")
            if retries
            else unavailable("codex: retries not passed (the CLI's default)")
        )
        return {
            "temperature": override(CODEX_TEMPERATURE_KEY, "temperature"),
            "max_output_tokens": override(CODEX_MAX_OUTPUT_KEY, "maximum output tokens"),
            "reasoning_effort": override(CODEX_EFFORT_KEY, "reasoning effort"),
            "auxiliary_models": {},  # codex makes no side calls to another model it could be told of
            "passed": passed,
            "answered": answered,
        }

    def from_env(name: str, what: str) -> dict:
        if env.get(name):
            return measured(_number(env[name]), f"launch environment {name}")
        return unavailable(f"{harness}: {what} not passed ({name} unset: the CLI's default, not in its log)")

    passed = {}
    if (model := _flag(argv, "--model")) is not None:
        passed["model"] = measured(model, "launch argument --model")
    if (turns := _flag(argv, "--max-turns")) is not None:
        passed["max_turns"] = measured(_number(turns), "launch argument --max-turns")
    passed["max_retries"] = from_env(CLAUDE_RETRIES_ENV, "API retries")
    details = (getattr(run, "details", None) or {}) if run is not None else {}
    if isinstance(details.get("permission_mode"), str):
        passed["permission_mode"] = measured(details["permission_mode"], "session log (init event)")
    return {
        "temperature": unavailable(f"{harness}: the CLI sets it itself; no flag or log line states it"),
        "max_output_tokens": from_env(CLAUDE_MAX_OUTPUT_ENV, "maximum output tokens"),
        "reasoning_effort": from_env(CLAUDE_THINKING_ENV, "thinking budget"),
        "auxiliary_models": {
            name: measured(env[name], f"launch environment {name}")
            if env.get(name)
            else unavailable(f"{name} unset: the CLI's default model for side calls")
            for name in AUXILIARY_MODEL_ENV
        },
        "passed": passed,
        "answered": answered,
    }


def _is_model(answered: str, compared: str) -> bool:
    """`answered` is the compared model: the same name, or a dated snapshot of it (``-YYYYMMDD``),
    with or without a gateway's provider prefix (``anthropic/``)."""
    names = {compared, compared.rsplit("/", 1)[-1]}
    return any(answered == n or re.fullmatch(re.escape(n) + r"-\d{8}", answered) for n in names)


def comparison_grade(harness: str, run, compared_model: str | None) -> tuple[str | None, str | None]:
    """(grade, basis) of an external harness's attempt against the experiment's model
    (`compared_model`, the one the plan asked for); (None, None) when it cannot be told."""
    if not compared_model or run is None:
        return None, None
    answered = answered_models(run)
    if harness == "codex":
        if run.model_responded and not _is_model(run.model_responded, compared_model):
            return "reference", (
                f"codex reported the model rerouted to {run.model_responded!r}, not the experiment's "
                f"{compared_model!r}"
            )
        if run.end_state == "completed" or run.tool_calls or run.final_text:
            return "same-model", (
                f"codex's stream names no model and reports a reroute as an error item; it reported "
                f"none, so the model requested ({compared_model!r}) answered"
            )
        return None, None
    if not answered:
        return None, None
    others = [m for m in answered if not _is_model(m, compared_model)]
    if others:
        return "reference", (
            f"the session log shows {', '.join(others)} answering besides the experiment's model "
            f"{compared_model!r} (answered: {', '.join(answered)})"
        )
    return "same-model", (
        f"every model the session log shows answering ({', '.join(answered)}) is the experiment's "
        f"model {compared_model!r}"
    )
