"""Map an agent's tool calls to the step vocabulary, and check a required order as a subsequence.

Vocabulary (``argusic.core.tasks.STEPS``): ``read`` (read or view a file, README included),
``search`` (grep/glob/find/list), ``edit`` (write, edit or patch a file), ``exec`` (run a shell
command), ``install`` (an exec whose command installs), ``test`` (an exec that runs tests), ``report``
(writing the report file).

Sources:

- external harnesses: the ``ToolCall`` list of ``argusic.external`` collectors (Claude Code's
  stream-json, Codex's JSONL). A shell command is split at ``&&``, ``||``, ``;``, ``|`` and newlines
  and each part is classified: Codex runs everything through the shell (``bash -lc 'cat README.md'``),
  so ``cat``/``sed -n``/``head`` count as ``read`` and ``grep``/``rg``/``find``/``ls`` as ``search``,
  whatever harness issued them. A write whose target is the report file is ``report``.
- the reference agent (readme-runner): its recorded steps (``harness.json["steps"]``, or
  ``report.json["_details"]["steps"]``), each with a ``phase`` (install, run, verify, mock) and a
  ``command``; an install-phase step is ``install``, others are classified by their command. It reads
  the README before its first step (``details["readme"]`` names it), so that is a ``read`` first, and
  it writes its report last (``report`` when report.json exists).

Consecutive repeats are collapsed (``exec exec`` is one ``exec``): it changes nothing for a subsequence.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

from argusic.external.collect import ToolCall

MAX_STEPS_KEPT = 2000  # steps kept after collapsing repeats; more are cut (and said)
MAX_COMMAND_CHARS = 20_000  # a longer command is classified on its first characters only

# ``exec`` in a required order is met by any kind of exec.
EXEC_KINDS = {"exec", "install", "test"}

_INSTALL = re.compile(
    r"""(?x)^(?:sudo\s+)?(?:
        (?:python[0-9.]*\s+-m\s+)?pip[0-9.]*\s+install\b
      | uv\s+(?:pip\s+install|sync|add)\b | pipx\s+install\b | poetry\s+install\b | pdm\s+install\b
      | conda\s+install\b | mamba\s+install\b
      | npm\s+(?:install|ci|i)\b | yarn(?:\s+install)?\s*$ | yarn\s+(?:install|add)\b
      | pnpm\s+(?:install|i|add)\b
      | apt(?:-get)?\s+(?:-\S+\s+)*install\b | apk\s+add\b | dnf\s+install\b | yum\s+install\b
      | brew\s+install\b
      | make\s+(?:\S+\s+)*install\b | cmake\s+--install\b | ninja\s+install\b
      | cargo\s+install\b | go\s+install\b | gem\s+install\b | bundle(?:\s+install)?\s*$ | bundle\s+install\b
      | composer\s+install\b | python[0-9.]*\s+setup\.py\s+(?:install|develop)\b
    )""",
)
_TEST = re.compile(
    r"""(?x)^(?:sudo\s+)?(?:\S+=\S*\s+)*(?:
        (?:python[0-9.]*\s+-m\s+)?pytest\b | py\.test\b | python[0-9.]*\s+-m\s+unittest\b | tox\b | nox\b
      | python[0-9.]*\s+setup\.py\s+test\b
      | npm\s+(?:run\s+)?test\b | yarn\s+(?:run\s+)?test\b | pnpm\s+(?:run\s+)?test\b
      | npx\s+(?:jest|vitest|mocha)\b
      | jest\b | vitest\b | mocha\b
      | make\s+(?:\S+\s+)*(?:test|check|tests)\b | ctest\b | meson\s+test\b | ninja\s+test\b
      | cargo\s+test\b | go\s+test\b | bats\b | rspec\b | bundle\s+exec\s+rspec\b | mvn\s+(?:\S+\s+)*test\b
      | gradle\s+test\b | \./gradlew\s+test\b | zig\s+build\s+test\b
    )""",
)
_READ_PROGRAMS = {"cat", "head", "tail", "less", "more", "nl", "bat", "view", "xxd", "od", "file", "wc"}
_SEARCH_PROGRAMS = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "ls", "tree", "locate"}
_SPLIT = re.compile(r"&&|\|\||;|\||\n")


def _unwrap_shell(command: str) -> str:
    """``bash -lc 'X'`` (how Codex runs commands) -> ``X``; anything else as is."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh", "dash") and words[1] in (
        "-c", "-lc", "-cl",
    ):  # fmt: skip
        return words[2]
    return command


def classify_command(command: str) -> list[str]:
    """The steps one shell command is made of, in order (parts neither read, search, install nor test
    are ``exec``)."""
    text = _unwrap_shell(command[:MAX_COMMAND_CHARS])
    steps = []
    for part in _SPLIT.split(text):
        part = part.strip().lstrip("(").strip()
        if not part:
            continue
        program = part.split()[0].rsplit("/", 1)[-1]
        if _INSTALL.search(part):
            steps.append("install")
        elif _TEST.search(part):
            steps.append("test")
        elif program in _READ_PROGRAMS or (program == "sed" and re.search(r"\s-n\b", part)):
            steps.append("read")
        elif program in _SEARCH_PROGRAMS or part.startswith(("git grep", "git ls-files")):
            steps.append("search")
        else:
            steps.append("exec")
    return steps or ["exec"]


def _is_report_target(target: str | None, report_name: str) -> bool:
    return bool(target) and (target == report_name or target.endswith("/" + report_name))


def _writes_report(command: str, report_name: str) -> bool:
    return re.search(r">\s*['\"]?\S*" + re.escape(report_name) + r"\b", command) is not None or bool(
        re.search(r"\btee\s+(?:-a\s+)?\S*" + re.escape(report_name) + r"\b", command)
    )


def steps_from_tool_calls(calls: Iterable[ToolCall], report_name: str = "report.json") -> list[str]:
    """Steps of an external harness's session, from its collector's tool calls."""
    steps: list[str] = []
    for call in calls:
        if call.category == "edit":
            steps.append("report" if _is_report_target(call.target, report_name) else "edit")
        elif call.category == "exec":
            command = call.target or str(call.arguments.get("command") or "")
            steps.extend(classify_command(command))
            if _writes_report(command, report_name):
                steps.append("report")
        elif call.category in ("read", "search"):
            steps.append(call.category)
        # "other" (MCP tools, sub-agents, unknown tools) has no place in the vocabulary: left out
    return collapse(steps)


def steps_from_runner(details: Mapping, report_written: bool) -> list[str]:
    """Steps of the reference agent from its recorded details (``harness.json`` or ``_details``)."""
    steps: list[str] = ["read"] if details.get("readme") else []
    raw = details.get("steps")
    for step in raw if isinstance(raw, list) else []:
        if not isinstance(step, Mapping):
            continue
        command = step.get("command") if isinstance(step.get("command"), str) else ""
        if step.get("phase") == "install":
            steps.append("install")
        else:
            steps.extend(classify_command(command))
    if report_written:
        steps.append("report")
    return collapse(steps)


def collapse(steps: Sequence[str]) -> list[str]:
    """Consecutive repeats made one, at most MAX_STEPS_KEPT kept."""
    out: list[str] = []
    for step in steps:
        if not out or out[-1] != step:
            out.append(step)
    return out[:MAX_STEPS_KEPT]


def step_meets(required: str, actual: str) -> bool:
    return required == actual or (required == "exec" and actual in EXEC_KINDS)


def is_subsequence(required: Sequence[str], steps: Sequence[str]) -> bool:
    """The required steps appear in ``steps`` in order, not necessarily adjacent (greedy: a required
    step is matched by the first step after the previous match that meets it)."""
    position = 0
    for want in required:
        while position < len(steps) and not step_meets(want, steps[position]):
            position += 1
        if position == len(steps):
            return False
        position += 1
    return True
