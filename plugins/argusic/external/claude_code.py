"""Claude Code as an external harness: driver (``claude -p … --output-format stream-json``) and collector.

Sources relied on (read 2026-11; the CLI is pinned to the version they describe):

- ``claude --help`` of ``@anthropic-ai/claude-code`` 2.1.332 (npm): ``-p/--print``, ``--output-format
  stream-json`` (only with --print), ``--verbose``, ``--model``, ``--setting-sources <sources>``
  ("comma-separated list of setting sources to load (user, project, local)"), ``--strict-mcp-config``
  ("only use MCP servers from --mcp-config"), ``--mcp-config``, ``--dangerously-skip-permissions``,
  ``--no-session-persistence``. The prompt is read from stdin when none is given.
- Agent SDK message types, ``sdk.d.ts`` of ``@anthropic-ai/claude-agent-sdk`` 0.3.332 (the same types
  the CLI writes as stream-json lines; platform.claude.com/docs/en/agent-sdk/typescript):
  ``SDKSystemMessage`` (type system, subtype init: model, claude_code_version, tools, mcp_servers,
  plugins, permissionMode, apiKeySource); ``SDKAssistantMessage`` (type assistant, ``message`` shaped
  like a Messages API Message: id, model, content blocks text / tool_use, usage; "when streamed,
  content typically holds the single block this message delivers", so one API response may span
  several lines with the same message id; ``parent_tool_use_id`` set on subagent frames);
  ``SDKResultMessage`` (type result, subtype success | error_during_execution | error_max_turns |
  error_max_budget_usd | …, is_error, duration_ms, num_turns, result, total_cost_usd, usage "MAIN
  AGENT LOOP ONLY", modelUsage "per-model totals for every model call … the correct field for
  token/cost accounting"; "crash/startup-error results may carry zeroed values"; "a failed API call
  still comes as success with is_error true").
- Headless mode docs (docs.claude.com/…/claude-code/headless): stream-json starts with the system
  init message, then user and assistant messages, and ends with the result message.
- Two logs recorded offline from that CLI against a closed local port (no model reachable, no model
  call made), kept as fixtures: an API error ends in a ``<synthetic>`` assistant message with zero
  usage and a result with is_error true; a process killed during retries leaves ``system/api_retry``
  lines and no result.

Isolation: a fresh ``HOME`` and ``CLAUDE_CONFIG_DIR`` per run (no user settings, CLAUDE.md memory,
plugins, credentials or history), ``--setting-sources ""`` (no user, project or local settings
files), ``--strict-mcp-config --mcp-config '{"mcpServers":{}}'`` (no MCP server), auto-memory,
auto-updater and non-essential traffic off. ``--dangerously-skip-permissions`` because nobody can
answer a prompt; as root the CLI refuses it unless ``IS_SANDBOX=1`` (checked in the 2.1.332 binary),
which the attempt container is. The key reaches the CLI only through the environment.
"""

from __future__ import annotations

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
    count_measure,
    derived,
    iter_jsonl,
    measured,
    most_common,
    read_report,
    shell_script,
    total_of,
    unavailable,
)
from argusic.external.layout import DEFAULT_CONFIG_DIR, SESSION_LOG

HARNESS_NAME = "claude-code"
NPM_PACKAGE = "@anthropic-ai/claude-code"
PINNED_VERSION = "2.1.332"
EXECUTABLE = "claude"
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"  # set: the run goes through our routing gateway (per-run key)
ALLOWED_KEY_ENV = (KEY_ENV, BASE_URL_ENV)
EMPTY_MCP_CONFIG = '{"mcpServers":{}}'
SYNTHETIC_MODEL = "<synthetic>"  # assistant messages the CLI makes up itself (API errors)

ISOLATION_ENV = {
    "IS_SANDBOX": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
}


def agent_argv(model: str) -> list[str]:
    """The CLI's own argument vector (the prompt comes on stdin)."""
    return [
        EXECUTABLE,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",  # required with stream-json in print mode
        "--model",
        model,
        "--setting-sources",
        "",
        "--strict-mcp-config",
        "--mcp-config",
        EMPTY_MCP_CONFIG,
        "--dangerously-skip-permissions",
        "--no-session-persistence",
    ]


def build_command(project_dir: str, out_dir: str, instructions_path: str, model: str) -> list[str]:
    """The command run in the container: recreate the config folders named by the environment
    (``build_env``), start the CLI in the project with the instructions on stdin, and tee its
    stream-json to ``<out_dir>/session.jsonl``. The exit status is the CLI's (pipefail)."""
    log = f"{out_dir.rstrip('/')}/{SESSION_LOG}"
    script = shell_script(
        [
            "set -o pipefail",
            ': "${HOME:?}" "${CLAUDE_CONFIG_DIR:?}"',
            'rm -rf -- "$HOME" "$CLAUDE_CONFIG_DIR"',
            'mkdir -p -- "$HOME" "$CLAUDE_CONFIG_DIR"',
            f"cd -- {shlex.quote(project_dir)}",
            f"{shlex.join(agent_argv(model))} < {shlex.quote(instructions_path)} | tee -- {shlex.quote(log)}",
        ]
    )
    return ["bash", "-c", script]


def build_env(
    api_key_env: Mapping[str, str], config_dir: str = DEFAULT_CONFIG_DIR, *, max_retries: int | None = None
) -> dict[str, str]:
    """The whole environment of the agent process (nothing inherited): isolation settings plus the
    key variables. ``config_dir`` is a container path, fresh for the run, never under /out (it is
    not evidence and may hold state the CLI derives from its environment). ``max_retries``: API
    retries before the CLI gives up (``CLAUDE_CODE_MAX_RETRIES``, read by 2.1.332; None: its
    default of 10)."""
    unknown = sorted(set(api_key_env) - set(ALLOWED_KEY_ENV))
    if unknown:
        raise ValueError(f"{HARNESS_NAME}: unexpected key variables {unknown}; allowed: {ALLOWED_KEY_ENV}")
    if not api_key_env.get(KEY_ENV):
        raise ValueError(f"{HARNESS_NAME}: {KEY_ENV} is required")
    _check_config_dir(config_dir)
    base = config_dir.rstrip("/")
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": f"{base}/home",
        "CLAUDE_CONFIG_DIR": f"{base}/claude",
        **ISOLATION_ENV,
        **({"CLAUDE_CODE_MAX_RETRIES": str(int(max_retries))} if max_retries is not None else {}),
        **{k: v for k, v in api_key_env.items() if v},
    }


def key_kind(api_key_env: Mapping[str, str]) -> str:
    """per_run through our gateway (base URL set), shared when talking to Anthropic directly."""
    return "per_run" if api_key_env.get(BASE_URL_ENV) else "shared"


def _check_config_dir(config_dir: str) -> None:
    if (
        not config_dir.startswith("/")
        or config_dir.rstrip("/") in ("", "/out")
        or config_dir.startswith("/out/")
    ):
        raise ValueError(f"config dir must be an absolute path outside /out: {config_dir!r}")


# ---------------------------------------------------------------------------------------------
# Collector


def _target(tool_input: Mapping[str, Any]) -> str | None:
    for key in ("file_path", "notebook_path", "path", "pattern", "command", "url", "query"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def collect(
    session_log: Path, report_path: Path | None, *, requested_model: str | None = None
) -> CollectedRun:
    """Turn a Claude Code stream-json log into a CollectedRun (never raises on log content)."""
    read = JsonlRead()
    init: dict | None = None
    result: dict | None = None
    retries = 0
    responses: dict[str, dict] = {}  # message id -> {"model", "main", "usage": {counter: max}}
    calls: list[dict] = []
    results_by_id: dict[str, bool] = {}
    last_text: str | None = None
    api_errors: list[str] = []

    for event in iter_jsonl(session_log, read):  # streamed: bounded memory
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            init = init or event
        elif kind == "system" and event.get("subtype") == "api_retry":
            retries += 1
        elif kind == "assistant":
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            content = message.get("content") if isinstance(message.get("content"), list) else []
            texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            synthetic = message.get("model") == SYNTHETIC_MODEL or event.get("is_api_error_message") is True
            if synthetic:
                api_errors.extend(t for t in texts if isinstance(t, str))
            elif message:
                last_text = next((t for t in reversed(texts) if isinstance(t, str) and t), last_text)
                _note_response(responses, message, event.get("parent_tool_use_id") is None, len(responses))
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls.append(block)
        elif kind == "user":
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            content = message.get("content") if isinstance(message.get("content"), list) else []
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    tool_use_id = block.get("tool_use_id")
                    if isinstance(tool_use_id, str):
                        results_by_id[tool_use_id] = block.get("is_error") is not True
        elif kind == "result":
            result = event

    if result is None:
        end_state = "truncated"
        end_detail = f"no result event after {read.events_seen} events"
        if retries:
            end_detail += f" ({retries} API retries logged)"
    elif result.get("is_error") is True or result.get("subtype") not in (None, "success"):
        end_state = "error"
        reason = result.get("terminal_reason") or result.get("api_error") or result.get("subtype")
        text = result.get("result") or "; ".join(str(e) for e in result.get("errors") or [])
        end_detail = f"{reason}: {text}" if text else str(reason)
    else:
        end_state = "completed"
        end_detail = None
    partial = end_state == "truncated" or read.lines_unparsable > 0

    usage, usage_details = _usage(result, responses, partial)
    tool_calls = [
        ToolCall(
            name=str(block.get("name", "?")),
            category=categorize(str(block.get("name", ""))),
            target=_target(block.get("input") if isinstance(block.get("input"), dict) else {}),
            arguments=block.get("input") if isinstance(block.get("input"), dict) else {},
            ok=results_by_id.get(block.get("id")) if isinstance(block.get("id"), str) else None,
            call_id=block.get("id") if isinstance(block.get("id"), str) else None,
        )
        for block in calls
    ]
    main_models = [r["model"] for r in responses.values() if r["main"] and r["model"]]
    any_models = [r["model"] for r in responses.values() if r["model"]]
    final_text = result.get("result") if result and end_state == "completed" else last_text
    report, report_problem = read_report(report_path)
    init = init or {}
    return CollectedRun(
        harness=HARNESS_NAME,
        harness_version=init.get("claude_code_version")
        if isinstance(init.get("claude_code_version"), str)
        else None,
        usage=usage,
        model_requested=requested_model
        or (init.get("model") if isinstance(init.get("model"), str) else None),
        model_responded=most_common(main_models) or most_common(any_models),
        end_state=end_state,
        end_detail=end_detail,
        final_text=final_text if isinstance(final_text, str) else None,
        tool_calls=tool_calls,
        lines_total=read.lines_total,
        lines_unparsable=read.lines_unparsable,
        truncated_tail=read.truncated_tail,
        problems=list(read.problems),  # filled while the log was streamed
        report=report,
        report_problem=report_problem,
        details={
            "session_id": (result or init).get("session_id"),
            "num_turns": result.get("num_turns") if result else None,
            "api_retries": retries,
            "api_errors": api_errors,
            "permission_mode": init.get("permissionMode"),
            "mcp_servers": init.get("mcp_servers"),
            # every model its assistant messages name (main loop and subagents): the grade's input
            "models_answered": sorted(set(any_models)),
            **usage_details,
        },
    )


_COUNTERS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")


def _note_response(responses: dict[str, dict], message: Mapping, main: bool, seen: int) -> None:
    """One API response may arrive as several assistant lines sharing its id: keep the largest value
    of each usage counter (output counts grow while a response streams)."""
    msg_id = message.get("id") if isinstance(message.get("id"), str) else f"<no id #{seen}>"
    entry = responses.setdefault(msg_id, {"model": None, "main": main, "usage": {}})
    if isinstance(message.get("model"), str):
        entry["model"] = message["model"]
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    for counter in _COUNTERS:
        value = usage.get(counter)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            entry["usage"][counter] = max(value, entry["usage"].get(counter, 0))


def _from_responses(responses: dict[str, dict], why: str) -> tuple[Measure, Measure]:
    def total(counters: tuple[str, ...]) -> Measure:
        values = [r["usage"][c] for r in responses.values() for c in counters if c in r["usage"]]
        if not values:
            return unavailable(f"no usage in the log ({why})")
        return derived(sum(values), f"summed over {len(responses)} assistant responses ({why})")

    return total(_COUNTERS[:3]), total(_COUNTERS[3:])


def _usage(result: dict | None, responses: dict[str, dict], partial: bool) -> tuple[dict[str, Measure], dict]:
    details: dict[str, Any] = {}
    model_calls = count_measure(len(responses), "model calls (distinct assistant message ids)", partial)
    if result is None:
        tokens_in, tokens_out = _from_responses(responses, "no result event: lower bound")
        return {
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "model_calls": model_calls,
            "cost_usd": unavailable("no result event"),
            "duration_seconds": unavailable("no result event"),
        }, details

    model_usage = result.get("modelUsage")
    if isinstance(model_usage, dict) and model_usage:
        rows = [(m, u) for m, u in model_usage.items() if isinstance(u, dict)]
        tokens_in = total_of(
            [
                (f"modelUsage[{m}].{k}", u.get(k))
                for m, u in rows
                for k in ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
            ],
            "input tokens (uncached + cache read + cache write, every model)",
        )
        tokens_out = total_of(
            [(f"modelUsage[{m}].outputTokens", u.get("outputTokens")) for m, u in rows], "output tokens"
        )
        details["cache_read_tokens"] = _sum_present(u.get("cacheReadInputTokens") for _, u in rows)
        details["cache_write_tokens"] = _sum_present(u.get("cacheCreationInputTokens") for _, u in rows)
        details["models_used"] = [m for m, _ in rows]
    elif isinstance(result.get("usage"), dict):
        u = result["usage"]
        tokens_in = total_of(
            [
                (f"usage.{k}", u.get(k))
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            ],
            "input tokens (main loop only: result.usage; no modelUsage)",
        )
        tokens_out = total_of(
            [("usage.output_tokens", u.get("output_tokens"))], "output tokens (main loop only)"
        )
        details["cache_read_tokens"] = u.get("cache_read_input_tokens")
        details["cache_write_tokens"] = u.get("cache_creation_input_tokens")
    else:
        tokens_in, tokens_out = _from_responses(responses, "the result event carries no usage")

    cost_value = result.get("total_cost_usd")
    cost = (
        measured(cost_value, "result.total_cost_usd (the CLI's estimate at list prices)")
        if isinstance(cost_value, (int, float)) and not isinstance(cost_value, bool)
        else unavailable("result.total_cost_usd absent")
    )
    # A crashed run may write a zeroed result although responses with usage were logged.
    seen_in, seen_out = _from_responses(responses, "the result event is zeroed")
    zeroed = (tokens_in.value == 0 and (seen_in.value or 0) > 0) or (
        tokens_out.value == 0 and (seen_out.value or 0) > 0
    )
    if zeroed:
        tokens_in, tokens_out = seen_in, seen_out
        cost = unavailable("result event zeroed although the log shows model usage")
        details["result_zeroed"] = True

    duration_ms = result.get("duration_ms")
    if zeroed:
        duration = unavailable("result event zeroed (duration_ms included)")
    elif isinstance(duration_ms, (int, float)) and not isinstance(duration_ms, bool):
        duration = measured(round(duration_ms / 1000, 3), "result.duration_ms")
    else:
        duration = unavailable("result.duration_ms absent")
    return {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "model_calls": model_calls,
        "cost_usd": cost,
        "duration_seconds": duration,
    }, details


def _sum_present(values) -> int | float | None:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(numbers) if numbers else None
