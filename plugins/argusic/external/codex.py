"""OpenAI Codex CLI as an external harness: driver (``codex exec --json``) and collector.

Sources relied on (read 2026-11):

- ``docs/exec.md`` of github.com/openai/codex: ``codex exec --json`` streams JSON Lines events
  ``thread.started``, ``turn.started``, ``turn.completed`` ("includes token usage"), ``turn.failed``
  ("includes error details"), ``item.started`` / ``item.updated`` / ``item.completed`` with item
  types agent_message, reasoning, command_execution, file_change, mcp_tool_call, web_search; its
  sample output; ``--skip-git-repo-check``; ``CODEX_API_KEY`` overrides the key in ``codex exec``.
- ``codex-rs/exec/src/exec_events.rs`` (the event types: ``Usage {input_tokens,
  cached_input_tokens, output_tokens}``, ``ThreadErrorEvent {message}``, item payloads such as
  ``CommandExecutionItem {command, aggregated_output, exit_code, status}`` and ``FileChangeItem
  {changes: [{path, kind}], status}``) and ``event_processor_with_jsonl_output.rs``: the usage in
  ``turn.completed`` is the thread's running total (``last_total_token_usage.total``) and falls back
  to ``Usage::default()`` (all zeros) when no token count arrived, so an all-zero usage is read as
  "not reported"; a model reroute is reported as an error item ``model rerouted: A -> B``;
  ``error`` events also carry transient "Reconnecting…" notices, so only ``turn.failed`` is an error
  end.
- ``docs/config.md``: ``CODEX_HOME`` holds config.toml, logs and state; ``-c key=value`` overrides
  (TOML values); ``model_providers.<id>`` with ``base_url``, ``env_key``, ``wire_api`` and
  ``model_provider`` to select one; ``sandbox_mode = "danger-full-access"`` "if Codex is running in
  an environment that provides its own sandboxing (such as a Docker container)".
- ``codex exec --help`` of ``@openai/codex`` 0.171.0 (npm): ``--json``, ``--ephemeral``,
  ``--ignore-user-config``, ``--ignore-rules``, ``--dangerously-bypass-approvals-and-sandbox``
  ("intended solely for running in environments that are externally sandboxed"), ``-C``, ``-m``,
  ``--color``, ``-o/--output-last-message``; the prompt is read from stdin when it is ``-``.
- A log recorded offline from that CLI against a closed local port (no model reached), kept as a
  fixture: a run with no network loops on ``error`` "Reconnecting... waiting for network" events
  and ends without a turn event when it is killed.

What the stream does not carry, and so stays unavailable: the model that answered (unless
rerouted), the number of model calls (a turn is one prompt, not one call), cost (no price is
stated; no price table is applied here) and duration (the executor's wall time fills it).

Isolation: a fresh ``CODEX_HOME`` and ``HOME`` per run (no config.toml, AGENTS.md memory, skills,
rules, MCP servers, auth.json or history), plus ``--ignore-user-config --ignore-rules
--ephemeral``. The config folder must stay out of /out: Codex writes shell snapshots there that
hold the environment, key included (seen in the offline recording). Routed through our gateway, a
dedicated provider is configured with ``-c`` (the built-in provider's WebSocket transport was seen
resolving a host of its own despite ``OPENAI_BASE_URL``); the key goes only through the environment.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from argusic.external.collect import (
    CollectedRun,
    JsonlRead,
    Measure,
    ToolCall,
    categorize,
    iter_jsonl,
    measured,
    read_report,
    shell_script,
    unavailable,
)
from argusic.external.layout import DEFAULT_CONFIG_DIR, SESSION_LOG

HARNESS_NAME = "codex"
NPM_PACKAGE = "@openai/codex"
PINNED_VERSION = "0.171.0"
EXECUTABLE = "codex"
KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"  # set: the run goes through our routing gateway (per-run key)
ALLOWED_KEY_ENV = (KEY_ENV, BASE_URL_ENV)
VENDOR_KEY_ENV = "CODEX_API_KEY"  # what `codex exec` reads for the vendor's own service
GATEWAY_PROVIDER = "argusic"
LAST_MESSAGE_FILE = "last_message.txt"
_REROUTED = re.compile(r"model rerouted: (?P<src>\S+) -> (?P<dst>\S+)")


def agent_argv(
    project_dir: str,
    model: str,
    out_dir: str,
    gateway_url: str | None = None,
    max_retries: int | None = None,
) -> list[str]:
    """The CLI's own argument vector (the prompt comes on stdin: ``-``). ``max_retries``: the
    gateway provider's ``request_max_retries`` and ``stream_max_retries`` (None: the CLI's
    defaults; only with a gateway, the built-in provider is left as it is)."""
    argv = [
        EXECUTABLE,
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ephemeral",
        "--ignore-user-config",
        "--ignore-rules",
        "--dangerously-bypass-approvals-and-sandbox",
        "--color",
        "never",
        "-C",
        project_dir,
        "-m",
        model,
        "-o",
        f"{out_dir.rstrip('/')}/{LAST_MESSAGE_FILE}",
    ]
    if gateway_url:
        retries = (
            f", request_max_retries = {int(max_retries)}, stream_max_retries = {int(max_retries)}"
            if max_retries is not None
            else ""
        )
        provider = (
            f'{{name = "argusic gateway", base_url = {json.dumps(gateway_url)}, '
            f'env_key = "{KEY_ENV}", wire_api = "responses"{retries}}}'
        )
        argv += [
            "-c",
            f"model_provider={GATEWAY_PROVIDER}",
            "-c",
            f"model_providers.{GATEWAY_PROVIDER}={provider}",
        ]
    return argv + ["-"]


def build_command(
    project_dir: str,
    out_dir: str,
    instructions_path: str,
    model: str,
    *,
    gateway_url: str | None = None,
    max_retries: int | None = None,
) -> list[str]:
    """The command run in the container: recreate the config folders named by the environment
    (``build_env``), start ``codex exec`` with the instructions on stdin, tee its JSONL events to
    ``<out_dir>/session.jsonl``. ``gateway_url``: route model calls through our gateway (the same
    URL as ``OPENAI_BASE_URL`` given to ``build_env``)."""
    log = f"{out_dir.rstrip('/')}/{SESSION_LOG}"
    argv = agent_argv(project_dir, model, out_dir, gateway_url, max_retries)
    script = shell_script(
        [
            "set -o pipefail",
            ': "${HOME:?}" "${CODEX_HOME:?}"',
            'rm -rf -- "$HOME" "$CODEX_HOME"',
            'mkdir -p -- "$HOME" "$CODEX_HOME"',
            f"{shlex.join(argv)} < {shlex.quote(instructions_path)} | tee -- {shlex.quote(log)}",
        ]
    )
    return ["bash", "-c", script]


def build_env(api_key_env: Mapping[str, str], config_dir: str = DEFAULT_CONFIG_DIR) -> dict[str, str]:
    """The whole environment of the agent process (nothing inherited). Through the gateway the key
    is ``OPENAI_API_KEY`` (the provider's ``env_key``); to the vendor it is ``CODEX_API_KEY``."""
    unknown = sorted(set(api_key_env) - set(ALLOWED_KEY_ENV))
    if unknown:
        raise ValueError(f"{HARNESS_NAME}: unexpected key variables {unknown}; allowed: {ALLOWED_KEY_ENV}")
    key = api_key_env.get(KEY_ENV)
    if not key:
        raise ValueError(f"{HARNESS_NAME}: {KEY_ENV} is required")
    if (
        not config_dir.startswith("/")
        or config_dir.rstrip("/") in ("", "/out")
        or config_dir.startswith("/out/")
    ):
        raise ValueError(f"config dir must be an absolute path outside /out: {config_dir!r}")
    base = config_dir.rstrip("/")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": f"{base}/home",
        "CODEX_HOME": f"{base}/codex",
    }
    if api_key_env.get(BASE_URL_ENV):
        env[KEY_ENV] = key
        env[BASE_URL_ENV] = api_key_env[BASE_URL_ENV]
    else:
        env[VENDOR_KEY_ENV] = key
    return env


def key_kind(api_key_env: Mapping[str, str]) -> str:
    """per_run through our gateway (base URL set), shared when talking to OpenAI directly."""
    return "per_run" if api_key_env.get(BASE_URL_ENV) else "shared"


# ---------------------------------------------------------------------------------------------
# Collector


def _tool_call(item: Mapping[str, Any]) -> ToolCall | None:
    kind = item.get("type")
    status = item.get("status")
    done = status in ("completed", "failed", "declined")
    if kind == "command_execution":
        exit_code = item.get("exit_code")
        ok = (status == "completed" and exit_code in (0, None)) if done else None
        command = item.get("command") if isinstance(item.get("command"), str) else None
        return ToolCall("command_execution", "exec", command, {"command": command}, ok, item.get("id"))
    if kind == "file_change":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        paths = [c.get("path") for c in changes if isinstance(c.get("path"), str)]
        ok = (status == "completed") if done else None
        return ToolCall(
            "file_change", "edit", paths[0] if paths else None, {"changes": changes}, ok, item.get("id")
        )
    if kind == "mcp_tool_call":
        name = f"mcp:{item.get('server')}/{item.get('tool')}"
        args = item.get("arguments") if isinstance(item.get("arguments"), dict) else {}
        ok = (status == "completed") if done else None
        return ToolCall(name, "other", None, args, ok, item.get("id"))
    if kind == "web_search":
        query = item.get("query") if isinstance(item.get("query"), str) else None
        return ToolCall("web_search", categorize("web_search"), query, {"query": query}, True, item.get("id"))
    if kind == "collab_tool_call":
        ok = (status == "completed") if done else None
        return ToolCall(f"collab:{item.get('tool')}", "other", None, {}, ok, item.get("id"))
    return None


def collect(
    session_log: Path, report_path: Path | None, *, requested_model: str | None = None
) -> CollectedRun:
    """Turn a ``codex exec --json`` log into a CollectedRun (never raises on log content)."""
    read = JsonlRead()
    thread_id = None
    turns_started = 0
    terminal: dict | None = None  # the last turn.completed / turn.failed
    usages: list[Any] = []
    order: list[str] = []
    items: dict[str, dict] = {}
    anonymous = 0
    warnings: list[str] = []
    stream_errors: list[str] = []
    last_message: str | None = None
    rerouted_to: str | None = None
    agent_activity = 0

    for event in iter_jsonl(session_log, read):  # streamed: bounded memory
        kind = event.get("type")
        if kind == "thread.started":
            thread_id = event.get("thread_id")
        elif kind == "turn.started":
            turns_started += 1
        elif kind == "turn.completed":
            terminal = event
            usages.append(event.get("usage"))
        elif kind == "turn.failed":
            terminal = event
        elif kind == "error":
            stream_errors.append(str(event.get("message")))
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if not isinstance(item, dict):
                continue
            item_id = item.get("id") if isinstance(item.get("id"), str) else f"<no id #{anonymous}>"
            anonymous += item_id.startswith("<no id")
            if item_id not in items:
                order.append(item_id)
            items[item_id] = item
            if kind != "item.completed":
                continue
            item_type = item.get("type")
            if item_type == "agent_message" and isinstance(item.get("text"), str):
                last_message = item["text"]
            if item_type == "error":
                message = str(item.get("message"))
                warnings.append(message)
                match = _REROUTED.search(message)
                if match:
                    rerouted_to = match.group("dst")
            if item_type not in ("error", "todo_list"):
                agent_activity += 1

    if terminal is None:
        end_state = "truncated"
        end_detail = f"no turn.completed or turn.failed after {read.events_seen} events"
        if stream_errors:
            end_detail += f"; last error event: {stream_errors[-1]}"
    elif terminal.get("type") == "turn.failed":
        end_state = "error"
        error = terminal.get("error") if isinstance(terminal.get("error"), dict) else {}
        end_detail = f"turn.failed: {error.get('message', 'no message')}"
    else:
        end_state = "completed"
        end_detail = None

    tool_calls = [call for call in (_tool_call(items[i]) for i in order) if call is not None]
    report, report_problem = read_report(report_path)
    return CollectedRun(
        harness=HARNESS_NAME,
        harness_version=None,  # not in the stream: pass the installed version to record_parts
        usage={
            **_tokens(usages, agent_activity + len(tool_calls)),
            "model_calls": unavailable("codex exec --json reports turns (prompts), not model calls"),
            "cost_usd": unavailable("codex exec --json states no cost; no price table is applied"),
            "duration_seconds": unavailable("codex exec --json states no duration"),
        },
        model_requested=requested_model,
        model_responded=rerouted_to,
        end_state=end_state,
        end_detail=end_detail,
        final_text=last_message,
        tool_calls=tool_calls,
        lines_total=read.lines_total,
        lines_unparsable=read.lines_unparsable,
        truncated_tail=read.truncated_tail,
        problems=list(read.problems),
        report=report,
        report_problem=report_problem,
        details={
            "thread_id": thread_id,
            "turns_started": turns_started,
            "cached_input_tokens": _last_counter(usages, "cached_input_tokens"),
            "warnings": warnings,
            "stream_errors": stream_errors,
        },
    )


def _last_counter(usages: list[Any], name: str) -> int | None:
    for usage in reversed(usages):
        if (
            isinstance(usage, dict)
            and isinstance(usage.get(name), int)
            and not isinstance(usage.get(name), bool)
        ):
            return usage[name]
    return None


def _tokens(usages: list[Any], activity: int) -> dict[str, Measure]:
    """Tokens from the last turn.completed (a running total for the thread). input_tokens already
    includes cached_input_tokens (OpenAI's convention; the documented sample shows cached < input)."""
    last = next((u for u in reversed(usages) if isinstance(u, dict)), None)
    if last is None:
        why = "no turn.completed usage in the log"
        return {"input_tokens": unavailable(why), "output_tokens": unavailable(why)}
    counters = {k: last.get(k) for k in ("input_tokens", "cached_input_tokens", "output_tokens")}
    numbers = [v for v in counters.values() if isinstance(v, int) and not isinstance(v, bool)]
    if numbers and all(v == 0 for v in numbers) and activity > 0:
        why = "turn.completed usage is all zeros although the agent worked: the CLI's default, not a count"
        return {"input_tokens": unavailable(why), "output_tokens": unavailable(why)}
    out: dict[str, Measure] = {}
    for name in ("input_tokens", "output_tokens"):
        value = counters[name]
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = measured(value, f"turn.completed usage.{name} (thread total)")
        else:
            out[name] = unavailable(f"turn.completed usage.{name} absent")
    return out
