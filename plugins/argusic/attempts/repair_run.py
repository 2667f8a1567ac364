"""Repair attempts (purpose `repair`, issue #13, seed 001 "Running agents"): an agent is handed a repair
item's problem statement (and interface spec on the spec track) in a fresh working copy of the item's
base, its patch is collected, stored as evidence and graded in a fresh container.

One attempt, step by step (``run_repair_attempt``, called by ``argusic.attempts.run.run_attempt`` for
specs of purpose repair, so reruns, resumption, the Airflow task and ingest are the board's):

1. On the host: a bare repository holding **one parentless commit of base's files** (tagged `base`),
   made from the item's repository; the container is given only that (``base_source``), so neither the
   item's repository nor any history of it is reachable. On a cluster (a runs store) the item and its
   base come from the runs store, where the host that built them put them
   (``argusic.repair.item_store``): any host can attempt and grade any item.
2. In the container (``working_copy_script``): the checkout becomes a fresh repository (its `.git`
   replaced: no history, no remote, no shallow graft), committed once and tagged `base`; then
   ``check_instructions.py`` refuses to start when any instruction file (``CLAUDE.md``, ``AGENTS.md``,
   the CLIs' user folders) is reachable from the working directory's parents or HOME; then the agent
   runs under the recorder with the item's prompt and the item's limits (``repair_limits``: time, and
   turns for CLIs that take a turn limit); then ``git add -A && git diff --cached --binary base`` into
   ``/out/patch.diff``, inside the container.
3. On the host: the patch (hostile: size-capped, read once) and the grade record are stored as
   evidence next to the log and recording; the grade comes from ``argusic.repair.grader.grade_patch``
   (a fresh container of its own, networking off). The run record (``argusic.run_record/1``, purpose
   repair) names the item in its ``repair`` block and references both.

Infrastructure failures (the model never answered, the CLI's API failures, our tooling) make the
attempt invalid and are rerun once (orchestrator.toml ``[repair] max_reruns``). Hitting a limit is the
agent's result, not a failure: a turn limit is read from Claude Code's result subtype
(``error_max_turns``), never from its turn count; the spend limit from the gateway's count of the
key's spend (``common.key_spent``), never from the CLI's words.

The deterministic reference agent does not fix bugs and no model is reachable here, so the demo uses
two **demo stand-ins**, clearly labelled as such in their recordings and in the agent registry, and
refused outside demo cycles: ``repair-demo-gold`` replays the item's gold patch (what a perfect agent
would produce: resolved) and ``repair-demo-none`` changes nothing (unresolved). They exercise every
step above except the model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from argusic.attempts import common as board
from argusic.attempts.agents import driver_for, side_call_env
from argusic.attempts.common import _model_answered
from argusic.attempts.environment import attempt_display, attempt_environment, check_pinned_image, ensure_pin
from argusic.attempts.identity import IDENTITY_WORDS, agent_pins, identity_name, recording_title
from argusic.attempts.keys import key_for_attempt
from argusic.attempts.live_log import LiveLog
from argusic.core.evidence import EvidenceStore
from argusic.core.layout import GRADE_FILE, RECORD_FILE, attempt_dir
from argusic.core.record import RecordError, RecordFile, bound_texts, load_record_file, parse_record
from argusic.core.safe_io import write_atomic
from argusic.core.settings import PACKAGE_DIR, parse_size
from argusic.external.collect import JsonlRead, iter_jsonl, record_parts, shell_script
from argusic.repair import item_store
from argusic.repair.grader import grade_patch
from argusic.repair.items import Item, items_dir, load_item, load_stored_item, repository_of
from argusic.repair.prepare import (
    COMMIT_ENV,
    SAFE_GIT,
    exclude_lines,
    pathspec_lines,
    prepare_item,
    safe_git_env,
)
from argusic.sandbox.executor import DaemonUnreachable, get_executor
from argusic.sandbox.launch import ExecutionResult, Launch

log = logging.getLogger(__name__)

REPAIR_DIR = PACKAGE_DIR / "repair"  # the prompt templates stay beside the repair seed (package data)
PROMPT_TEMPLATE = REPAIR_DIR / "prompt.md"
SPEC_TEMPLATE = REPAIR_DIR / "spec_section.md"
# mounted as a task file; its name and bytes are hashed into every repair record (repair_instructions)
CHECK_SCRIPT = PACKAGE_DIR / "payload" / "check_instructions.py"

# Task files (read-only in the container) and what the container leaves in /out.
PROMPT_FILE = "prompt.md"
CHECK_FILE = "check_instructions.py"
REPLAY_FILE = "replay.diff"  # the demo stand-in's recorded patch
PATCH_FILE = "patch.diff"
STATUS_FILE = "repair_status.json"
INSTRUCTION_CHECK_FILE = "instruction_check.json"
# Task files of an attempt on a prepared tree (argusic.repair.prepare): what base's commit leaves out.
PREPARED_PATHSPEC_FILE = "prepared_pathspec.txt"
PREPARED_EXCLUDE_FILE = "prepared_exclude.txt"
# Exit codes of the working-copy script before the agent starts: our side failed, or refused to start.
WORKING_COPY_FAILED = 95
INSTRUCTIONS_REACHABLE = 96
STATUS_MAX_BYTES = 4096


# What the agent is handed besides the harness: the prompt templates and the check, named in each
# repair record's environment.instructions (the board's instructions are not what a repair agent reads).
REPAIR_INSTRUCTIONS_VERSION = "repair-1"

STANDIN_HARNESS = "repair-demo-stand-in"
STANDIN_VERSION = "1"
STANDINS = {"repair-demo-gold": "gold", "repair-demo-none": "none"}


class RepairRefused(ValueError):
    """A repair attempt that must not start (the message names the item, file or field)."""


class RepairPlanConflict(RepairRefused):
    """A repair attempt id already measured for another item (the plan changed under it)."""


# --- limits ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepairLimits:
    """orchestrator.toml [repair]: fixed before any result is seen (per item when an item says so)."""

    budget_seconds: int
    max_turns: int
    attempts_per_item: int
    max_reruns: int
    patch_max_bytes: int
    setup_seconds: int


def repair_instructions() -> dict:
    """{version, sha256} of what a repair agent is handed: the prompt and spec templates and the
    instruction-file check, hashed together (names and contents)."""
    digest = hashlib.sha256()
    for path in (PROMPT_TEMPLATE, SPEC_TEMPLATE, CHECK_SCRIPT):
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode() + data)
    return {"version": REPAIR_INSTRUCTIONS_VERSION, "sha256": digest.hexdigest()}


def repair_limits(item_id: str | None = None, config_path: Path | None = None) -> RepairLimits:
    path = config_path or Path(
        os.environ.get("ARGUSIC_ORCHESTRATOR_CONFIG") or PACKAGE_DIR / "orchestrator.toml"
    )
    section = tomllib.loads(path.read_text()).get("repair", {})
    own = section.get("items", {}).get(item_id, {}) if item_id else {}
    value = {**section, **own}
    return RepairLimits(
        budget_seconds=int(value.get("budget_minutes", 25)) * 60,
        max_turns=int(value.get("max_turns", 60)),
        attempts_per_item=int(value.get("attempts_per_item", 3)),
        max_reruns=int(value.get("max_reruns", 1)),
        patch_max_bytes=parse_size(value.get("patch_max_size", "8m")),
        setup_seconds=int(value.get("setup_seconds", 60)),
    )


def effective_budget(limits: RepairLimits, demo: bool, budget_scale: float) -> float:
    """The agent's time: the real budget, or scaled in a demo, but never under a minute (a repair
    attempt's container needs seconds for its working copy before the agent starts)."""
    if not demo:
        return float(limits.budget_seconds)
    return max(60.0, limits.budget_seconds * budget_scale)


# --- items ----------------------------------------------------------------------------------------


def item_path(project_id: str, item_id: str, base: Path | None = None) -> Path:
    return (base or items_dir()) / project_id / f"{item_id}.json"


def load_repair_item(spec, base: Path | None = None):
    """The item a repair spec names, refused unless it is the planned revision of that project. On a
    cluster (a runs store, no `base` folder given) it is read from the runs store, where the host that
    built it put it (``argusic.repair.items.load_stored_item``: sha256 and revision checked)."""
    if base is None and item_store.active() is not None:
        path = f"the runs store's {spec.project_id}/{spec.item.item_id}"
        item = load_stored_item(spec.project_id, spec.item.item_id, spec.item.revision)
    else:
        path = item_path(spec.project_id, spec.item.item_id, base)
        item = load_item(path)
    for field, want in (
        ("item_id", spec.item.item_id),
        ("revision", spec.item.revision),
        ("project_id", spec.project_id),
        ("track", spec.item.track),
    ):
        if getattr(item, field) != want:
            raise RepairRefused(
                f"{path}: {field} is {getattr(item, field)!r} but {spec.attempt_id} was planned for "
                f"{want!r} (the item was rebuilt since the plan: plan again)"
            )
    return item


def usable_items(project_id: str, base: Path | None = None) -> list[Any]:
    """The project's items fit for agents: validated usable (gold resolved ×3, empty unresolved) and
    not the original of split items; sorted by item id (the plan's order)."""
    if base is None and item_store.active() is not None:
        return _stored_usable_items(project_id)
    folder = (base or items_dir()) / project_id
    found = []
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith(".validation.json") or path.is_symlink():
            continue
        item = load_item(path)
        validation = path.with_name(f"{item.item_id}.validation.json")
        if getattr(item, "superseded_by_split", False) or not _usable(validation, item.revision):
            continue
        found.append(item)
    return found


def _stored_usable_items(project_id: str) -> list[Item]:
    """`usable_items` on a cluster: the project's current item revisions in the runs store, each with
    its validation record from there (a missing or unreadable one says not usable)."""
    found = []
    for item_id, revision in sorted(item_store.current_revisions(project_id).items()):
        item = load_stored_item(project_id, item_id, revision)
        try:
            raw = item_store.read_validation_bytes(project_id, item_id, revision)
            doc = json.loads(raw) if raw is not None else None
        except (item_store.ItemStoreError, ValueError) as err:
            log.warning("%s revision %s: validation not read from the runs store: %s", item_id, revision, err)
            continue
        if item.superseded_by_split or not _usable_doc(doc, revision):
            continue
        found.append(item)
    return found


def _usable_doc(doc: object, revision: str) -> bool:
    return isinstance(doc, dict) and doc.get("usable") is True and doc.get("revision") == revision


def _usable(path: Path, revision: str) -> bool:
    """Whether a validation record says usable for this revision (a missing, linked, oversized or
    unreadable one says no)."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            return False
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return _usable_doc(doc, revision)


# --- the prompt -----------------------------------------------------------------------------------


def render_prompt(item, project_dir: str) -> str:
    """The agent's prompt: the problem statement, plus the interface spec on the spec track. Never the
    PR, the test patch, the gold patch, the tests' names or the item's source."""
    spec = ""
    if item.interface_spec:
        spec = SPEC_TEMPLATE.read_text(encoding="utf-8").replace(
            "{{INTERFACE_SPEC}}", item.interface_spec.strip()
        )
    text = PROMPT_TEMPLATE.read_text(encoding="utf-8")
    text = text.replace("{{PROJECT_DIR}}", project_dir).replace("{{INTERFACE_SPEC}}", spec)
    return text.replace("{{PROBLEM_STATEMENT}}", item.problem_statement.strip())


# --- the working copy -----------------------------------------------------------------------------


def _git(argv: list[str], cwd: Path | None = None, env: dict | None = None, timeout: float = 600) -> str:
    clean = safe_git_env(env)
    done = subprocess.run(
        [*SAFE_GIT, *argv], cwd=cwd, env=clean, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
        raise RepairRefused(f"git {' '.join(argv[:2])}: {detail}")
    return done.stdout.strip()


def base_source(repository: Path, base: str, dest: Path) -> str:
    """Make `dest` a bare repository holding one parentless commit of `base`'s files, tagged `base`,
    and return its id: all the attempt container may fetch (no history, no other commit, no remote).
    The commit is deterministic (fixed identity and time), so the container's own fresh commit of
    the same files has the same id."""
    if not len(base) == 40 or any(c not in "0123456789abcdef" for c in base):
        raise RepairRefused(f"base {base!r}: a 40-hex commit id is expected")
    work = dest.with_name(dest.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    try:
        _git(["init", "-q", "--bare", str(work)])
        _git(
            [
                "-C",
                str(work),
                "fetch",
                "-q",
                "--no-tags",
                "--depth",
                "1",
                f"file://{repository.resolve()}",
                base,
            ]
        )
        tree = _git(["-C", str(work), "rev-parse", f"{base}^{{tree}}"])
        fresh = _git(["-C", str(work), "commit-tree", tree, "-m", "base"], env=COMMIT_ENV)
        _git(["init", "-q", "--bare", str(dest)])
        _git(["-C", str(work), "push", "-q", str(dest), f"{fresh}:refs/heads/base"])
        _git(["-C", str(dest), "symbolic-ref", "HEAD", "refs/heads/base"])
        _git(["-C", str(dest), "tag", "base", fresh])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return fresh


def working_copy_script(
    project: str, out: str, task: str, agent_argv: list[str], prepared_base: str | None = None
) -> str:
    """The container's script after the executor's checkout of the fresh commit: a fresh repository
    (one commit tagged base), the instruction-file check, the agent, the patch collection.

    `prepared_base`: the checkout is the item's prepared tree (argusic.repair.prepare), whose added
    paths the task files name: base's commit leaves them out (and must be this id, base's own), and
    ``.git/info/exclude`` keeps them out of the collected patch."""
    q = shlex.quote
    git = shlex.join(SAFE_GIT)
    commit_env = " ".join(f"{k}={q(v)}" for k, v in COMMIT_ENV.items())
    status = f"{out}/{STATUS_FILE}"
    add = f"{git} add -A -f"
    prepared_lines = []
    if prepared_base is not None:
        add += f" --pathspec-from-file={q(task + '/' + PREPARED_PATHSPEC_FILE)}"
        prepared_lines = [
            f'[ "$({git} rev-parse HEAD)" = {q(prepared_base)} ] || exit {WORKING_COPY_FAILED}',
            f"cat -- {q(task + '/' + PREPARED_EXCLUDE_FILE)} >> .git/info/exclude "
            f"|| exit {WORKING_COPY_FAILED}",
        ]
    return "\n".join(
        [
            "set -u",
            f"cd -- {q(project)} || exit {WORKING_COPY_FAILED}",
            # No history, no remote, no shallow graft: the checkout's .git goes, base's files stay.
            f"rm -rf .git && {git} init -q . && {add} "
            f"&& env {commit_env} {git} commit -q --no-verify --allow-empty -m base "
            f"&& {git} tag base || exit {WORKING_COPY_FAILED}",
            *prepared_lines,
            # Bytecode the agent's runs leave is not its change (a file base tracked still is).
            f"printf '%s\\n' __pycache__/ '*.py[cod]' >> .git/info/exclude || exit {WORKING_COPY_FAILED}",
            f'python3 -I -S {q(task + "/" + CHECK_FILE)} --workdir {q(project)} --home "$HOME" '
            f"--write {q(out + '/' + INSTRUCTION_CHECK_FILE)} || exit {INSTRUCTIONS_REACHABLE}",
            "started=$(date +%s)",
            shlex.join(agent_argv),
            "agent_exit=$?",
            "ended=$(date +%s)",
            f"cd -- {q(project)} && {git} add -A "
            f"&& {git} diff --cached --binary --no-ext-diff --no-textconv --no-color base "
            f"> {q(out + '/' + PATCH_FILE)}",
            "collect_exit=$?",
            'printf \'{"agent_exit": %d, "agent_seconds": %d, "collect_exit": %d}\\n\' '
            f'"$agent_exit" "$((ended - started))" "$collect_exit" > {q(status)}',
            "exit 0",
        ]
    )


# --- the agents -----------------------------------------------------------------------------------


def _cli_argv(driver, limits: RepairLimits) -> list[str]:
    """Claude Code's own argument vector in a repair attempt (Codex's is built by its module)."""
    return [*driver.module().agent_argv(driver.model), "--max-turns", str(limits.max_turns)]


def _agent_command(driver, paths, prompt_path: str, limits: RepairLimits, key_env: dict) -> tuple[list, dict]:
    """The agent's own command (run under the recorder) and its environment."""
    out = paths.out.rstrip("/")
    if driver.agent_id in STANDINS:
        what = STANDINS[driver.agent_id]
        banner = "DEMO STAND-IN (not an agent, no model): " + (
            "replaying the item's gold patch" if what == "gold" else "changing nothing"
        )
        # `ls -A`: the tree it was handed (a prepared item's installed dependencies show here)
        lines = [f"echo {shlex.quote(banner)}", f"cd -- {shlex.quote(paths.project)}", "ls -A"]
        if what == "gold":
            lines.append(f"git apply --binary -v {shlex.quote(paths.task + '/' + REPLAY_FILE)}")
        lines.append("git status --short")
        return ["bash", "-c", "\n".join(lines)], {}
    mod = driver.module()
    key_env = {k: v for k, v in key_env.items() if v}
    if driver.harness_name == "codex":  # codex exec takes no turn limit: time only
        argv = mod.build_command(
            paths.project, out, prompt_path, driver.model,
            gateway_url=key_env.get(mod.BASE_URL_ENV), max_retries=driver.max_retries,
        )  # fmt: skip
        return argv, mod.build_env(key_env, paths.scratch)
    base_url = key_env.get(mod.BASE_URL_ENV)
    if base_url and base_url.rstrip("/").endswith("/v1"):  # as agents._ExternalLaunch does
        key_env[mod.BASE_URL_ENV] = base_url.rstrip("/")[: -len("/v1")]
    cli = _cli_argv(driver, limits)
    script = shell_script(
        [
            "set -o pipefail",
            ': "${HOME:?}" "${CLAUDE_CONFIG_DIR:?}"',
            'rm -rf -- "$HOME" "$CLAUDE_CONFIG_DIR"',
            'mkdir -p -- "$HOME" "$CLAUDE_CONFIG_DIR"',
            f"cd -- {shlex.quote(paths.project)}",
            f"{shlex.join(cli)} < {shlex.quote(prompt_path)} | tee -- {shlex.quote(out + '/session.jsonl')}",
        ]
    )
    env = mod.build_env(key_env, paths.scratch, max_retries=driver.max_retries)
    # Seed 001: the CLI's side calls (titles, summaries: its "small, fast" model) go to the compared
    # model too, never to another one the comparison did not choose.
    env |= side_call_env(driver.harness_name, driver.model)
    return ["bash", "-c", script], env


def repair_launch(
    driver, item, limits: RepairLimits, agent_seconds: float, key_env: dict, launched: dict | None = None,
    prepared=None, base_commit: str | None = None,
):  # fmt: skip
    """The executor's LaunchBuilder for a repair attempt. `launched`, when given, receives the agent's
    command and its environment without the key variables (``argv``, ``env``): what the record's model
    settings are read from."""

    def build(paths):
        prompt_path = f"{paths.task.rstrip('/')}/{PROMPT_FILE}"
        agent, env = _agent_command(driver, paths, prompt_path, limits, key_env)
        if launched is not None and driver.external:  # the settings read only named, non-key variables
            mod = driver.module()
            launched["env"] = {k: v for k, v in env.items() if k not in (*key_env, *mod.ALLOWED_KEY_ENV)}
            launched["argv"] = (
                mod.agent_argv(
                    paths.project,
                    driver.model,
                    paths.out,
                    gateway_url=key_env.get(mod.BASE_URL_ENV) or None,
                    max_retries=driver.max_retries,
                )  # fmt: skip
                if driver.harness_name == "codex"
                else _cli_argv(driver, limits)
            )
        recorded = [
            "python3", f"{paths.harness}/recorder.py", "--out", paths.out.rstrip("/"),
            "--timeout", f"{agent_seconds:.0f}", "--", *agent,
        ]  # fmt: skip
        files = {
            PROMPT_FILE: render_prompt(item, paths.project),
            CHECK_FILE: CHECK_SCRIPT.read_text(encoding="utf-8"),
        }
        if STANDINS.get(driver.agent_id) == "gold":
            files[REPLAY_FILE] = item.gold_patch
        prepared_base = None
        if prepared is not None and prepared.status == "prepared":
            files[PREPARED_PATHSPEC_FILE] = pathspec_lines(prepared.excluded)
            files[PREPARED_EXCLUDE_FILE] = exclude_lines(prepared.excluded)
            prepared_base = base_commit
        script = working_copy_script(
            paths.project, paths.out.rstrip("/"), paths.task.rstrip("/"), recorded, prepared_base
        )
        return Launch(["bash", "-c", script], env=env, files=files)

    return build


def _read_capped(path: Path, limit: int) -> bytes | None:
    """A landed file's bytes, or None when missing or above `limit` (never read past it)."""
    if path.is_symlink() or not path.is_file():
        return None
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    return None if len(data) > limit else data


def _status(out_dir: Path) -> dict:
    data = _read_capped(out_dir / STATUS_FILE, STATUS_MAX_BYTES)
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {}
    return (
        {k: v for k, v in doc.items() if isinstance(v, int) and not isinstance(v, bool)}
        if isinstance(doc, dict)
        else {}
    )


# Claude Code's variables naming the model of its side calls (the older and the current name).


def _result_event(out_dir: Path) -> dict:
    """Claude Code's last result event in the session log ({} when there is none)."""
    path = out_dir / "session.jsonl"
    if not path.is_file() or path.is_symlink():
        return {}
    found: dict = {}
    for event in iter_jsonl(path, JsonlRead()):
        if event.get("type") == "result":
            found = event
    return found


def _result_subtype(out_dir: Path) -> str | None:
    """Claude Code's result subtype (``error_max_turns`` when the turn limit ended it)."""
    subtype = _result_event(out_dir).get("subtype")
    return subtype if isinstance(subtype, str) else None


def permission_denials(out_dir: Path) -> int | None:
    """How many tool calls the CLI refused for want of permission (Claude Code's result
    ``permission_denials``, seed 001: each still uses a turn); None when the CLI does not say."""
    denials = _result_event(out_dir).get("permission_denials")
    return len(denials) if isinstance(denials, list) else None


def repair_outcome(
    driver, result, out_dir: Path, evidence: dict, agent_seconds: float, key: dict | None = None
) -> tuple[str, str | None, str | None, Any]:
    """(end_reason, invalid_reason, limit_hit, collected run or None) of a repair attempt.

    `key` is the record's key field: a CLI that ended in error after the gateway counted the key's
    spend up to its limit hit the spend limit (the agent's own model use: its patch is graded), not
    our tooling (board.key_spent)."""
    status = _status(out_dir)
    if result.stopped is not None:  # an operator's cancel or emergency stop: ours, on record, not graded
        return result.stopped, result.stop_reason or result.stopped, None, None
    if result.error is not None:
        return "harness_error", f"executor error: {result.error}", None, None
    if result.refused is not None:
        return "harness_error", result.refused, None, None
    if result.timed_out:
        # The recorder ends the agent at its budget; a container that outlives budget + setup hung in
        # our own steps (working copy, check, collection): invalid, rerun.
        return "timeout", "the container outlived the agent's budget and its setup time", None, None
    if result.exit_code == INSTRUCTIONS_REACHABLE:
        return (
            "harness_error",
            "refused to start: an instruction file is reachable by the agent (instruction_check.json)",
            None,
            None,
        )
    if result.exit_code != 0 or "agent_exit" not in status:
        return (
            "harness_error",
            f"working copy or patch collection failed (exit code {result.exit_code})",
            None,
            None,
        )
    limit = "time" if status.get("agent_seconds", 0) >= agent_seconds - 1 else None
    run = None
    invalid = None
    if driver.external:
        run = driver.collect(out_dir)
        if not _model_answered(run):
            detail = run.end_detail or "no session events"
            invalid = f"the agent never reached its model ({run.end_state}: {detail})"
        elif _result_subtype(out_dir) == "error_max_turns":
            limit = "turns"
        elif limit is None and run.end_state == "error" and board.key_spent(key, run.end_detail):
            limit = "spend"
        elif limit is None and run.end_state == "error":
            invalid = board.cli_error(run.end_detail) + board.spend_unknown(key)
        elif limit is None and run.end_state == "truncated":
            invalid = f"session log ends without the CLI's closing event ({run.end_detail})"
    elif limit is None and status["agent_exit"] != 0:
        invalid = f"demo stand-in exited with code {status['agent_exit']}"
    if invalid is None and status.get("collect_exit", 1) != 0:
        invalid = f"patch collection failed (git exit {status.get('collect_exit')})"
    if invalid is None and (evidence["log"] is None or evidence["recording"] is None):
        missing = [n for n in ("log", "recording") if evidence[n] is None]
        invalid = f"incomplete evidence: no {' and no '.join(missing)}"
    end_reason = "harness_error" if invalid else ("timeout" if limit else "completed")
    return end_reason, invalid, limit, run


class _NotRun(Exception):
    """The agent was never started (its item's preparation failed): `result` stands for its run."""

    def __init__(self, result) -> None:
        super().__init__("not run")
        self.result = result


def prepared_cache(base_dir: Path | None) -> Path | None:
    """Where an item's prepared tree is kept (argusic.repair.prepare.cache_dir): beside the runs."""
    return None if base_dir is None else base_dir / ".prepared"


# --- one attempt ----------------------------------------------------------------------------------


def run_repair_attempt(
    spec, executor=None, store=None, base_dir: Path | None = None, broker=None, live_log: bool = False
) -> RecordFile:
    """Run one repair attempt (unless its record exists) and return its run record, parsed, with its
    path."""
    folder = attempt_dir(spec, base_dir)
    record_path = folder / RECORD_FILE
    if record_path.exists():
        try:
            record = load_record_file(record_path)
        except RecordError:
            record_path.unlink()  # a damaged record from a crashed try: measure again
        else:
            done = record.repair
            if done is None or (done.item_id, done.item_revision) != (spec.item.item_id, spec.item.revision):
                raise RepairPlanConflict(
                    f"{record_path}: {spec.attempt_id} was measured for item "
                    f"{getattr(done, 'item_id', None)!r} revision {getattr(done, 'item_revision', None)!r}, "
                    f"but is now planned for {spec.item.item_id!r} revision {spec.item.revision!r}"
                )
            return RecordFile(record_path, record)
    driver = driver_for(spec.agent_id)
    if spec.agent_id in STANDINS and not spec.demo:
        raise RepairRefused(f"{spec.agent_id} is a demo stand-in (no model): it runs in demo cycles only")
    if not (driver.external or spec.agent_id in STANDINS):
        raise RepairRefused(
            f"{spec.agent_id}: the {driver.harness_name} harness does not repair; repair agents are the "
            f"external CLIs and, in demos, {', '.join(sorted(STANDINS))}"
        )
    item = load_repair_item(spec)
    limits = repair_limits(item.item_id)
    agent_seconds = effective_budget(limits, spec.demo, spec.budget_scale)
    executor = executor or get_executor(demo=spec.demo)
    role = "agents" if driver.external else "runner"
    pin = ensure_pin(
        spec.cycle_id, executor, [role], spec.demo, spec.budget_scale, base=base_dir,
        agents=agent_pins([spec.agent_id]),
    )  # fmt: skip
    try:
        pinned_image = check_pinned_image(pin, role) if pin.executor == "docker" else None
    except DaemonUnreachable:  # the Docker executor's run fails the same way: recorded invalid, rerun
        pinned_image = pin.images[role].digest
    # The item's repository as the grader finds it (a local path, file:// or git://127.0.0.1 mirrored):
    # read on the host only, never handed to the container.
    repository = repository_of(item)  # on a cluster: unpacked from the item's bundle in the runs store
    out_dir = folder / "out"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    store = store or EvidenceStore()
    source_dir = folder / ".base-source"
    fresh = base_source(repository, item.base, source_dir)
    try:
        # Seed 001: dependencies installed and packages built before the agent's clock starts, once
        # per item (reused by its other attempts), in the attempt's image with the attempts' network.
        cache = prepared_cache(base_dir)
        prepared = prepare_item(item, source_dir, fresh, executor, pinned_image, cache=cache)
        if prepared is not None and prepared.status == "failed":
            now = datetime.now(UTC)
            result = ExecutionResult(getattr(executor, "name", "docker"), now, now, None, False, None)
            raise _NotRun(result)
        with key_for_attempt(
            driver.key_kind,
            spec.attempt_id,
            broker=board._broker_for(driver.key_kind, broker),
            shared_env_var=driver.shared_env_var,
            ttl_seconds=int(agent_seconds + limits.setup_seconds) + 600,
        ) as key:
            key_env = key.container_env(driver.key_env_var, driver.base_url_env_var)
            launched: dict = {}
            run_kwargs: dict = {
                "launch": repair_launch(
                    driver, item, limits, agent_seconds, key_env, launched, prepared, fresh
                )
            }
            if pinned_image is not None:
                run_kwargs["image"] = pinned_image
            if live_log:
                shown = LiveLog(
                    redactions=key.redactions(),
                    secrets=board.presentation_secrets(key),
                    budget_seconds=agent_seconds,
                )
                run_kwargs["watch"] = shown.watch
            result = executor.run(
                attempt_id=spec.attempt_id,
                # the prepared tree's commit, copied for this run, or base's files alone
                repo_path=prepared.repo if prepared is not None else source_dir,
                commit=prepared.commit if prepared is not None else fresh,
                harness_args=[],
                out_dir=out_dir,
                budget_seconds=agent_seconds + limits.setup_seconds,
                env={},
                redactions=key.redactions(),
                **run_kwargs,
            )
        key_record = key.record()  # after the key's deletion: with the spend the gateway counted
    except _NotRun as not_run:  # the preparation failed: no key, no agent; recorded invalid (ours)
        result, key, key_record, launched = not_run.result, None, None, {}
    finally:
        shutil.rmtree(source_dir, ignore_errors=True)
    environment = attempt_environment(pin, role, spec.tier, attempt_display(pin, out_dir))
    environment = environment.model_copy(
        update={
            "instructions": environment.instructions.model_copy(update=repair_instructions()),
            "limits": environment.limits.model_copy(update={"budget_seconds": max(1, round(agent_seconds))}),
        }
    )
    record = build_repair_record(
        spec, item, driver, result, out_dir, folder, store, limits, agent_seconds, key_record, environment,
        agent_name=identity_name(pin, spec.agent_id), launched=launched, prepared=prepared,
    )  # fmt: skip
    record = board.with_presentation(record, store, key)
    write_atomic(record_path, record.to_json() + "\n")
    return RecordFile(record_path, record)


def build_repair_record(spec, item, driver, result, out_dir: Path, folder: Path, store, limits: RepairLimits,
                        agent_seconds: float, key_record: dict | None, environment,
                        agent_name: str = IDENTITY_WORDS, launched: dict | None = None,
                        prepared=None):  # fmt: skip
    """The run record of a repair attempt: evidence stored, outcome judged, patch graded."""
    item_id = spec.item.item_id if spec.item is not None else None
    title = recording_title(agent_name, spec.project_id, spec.attempt_no, spec.rerun_no, item_id)
    board.title_recording(out_dir / board.EVIDENCE_FILES["recording"], title)  # named outside
    evidence = {}
    for name, filename in board.EVIDENCE_FILES.items():
        path = out_dir / filename
        evidence[name] = store.put_file(path).as_ref() if path.is_file() and not path.is_symlink() else None
    ending = repair_outcome(driver, result, out_dir, evidence, agent_seconds, key_record)
    end_reason, invalid, limit, run = ending
    preparation = None
    if prepared is not None:
        log_path = prepared.log_path
        log_ref = store.put_file(log_path).as_ref() if log_path is not None and log_path.is_file() else None
        preparation = prepared.part(log_ref)
        if prepared.status == "failed":
            end_reason, invalid, limit, run = (
                "harness_error",
                f"preparation failed before the agent started: {prepared.detail} (ours, not the agent's)",
                None,
                None,
            )
    patch_ref = grade_ref = None
    patch_path = out_dir / PATCH_FILE
    patch = _read_capped(patch_path, limits.patch_max_bytes)
    if patch is None and invalid is None and patch_path.is_file():
        log.warning(
            "%s: patch over %d bytes refused unread: no patch, no grade",
            spec.attempt_id,
            limits.patch_max_bytes,
        )
    if patch is not None:
        patch_ref = store.put_file(patch_path).as_ref()
    if invalid is None and patch is not None:
        try:
            grade_ref = _grade(spec, item, patch, folder, store)
        except Exception as err:  # our grader's failure, never the agent's: invalid, rerun once
            end_reason, invalid = (
                "harness_error",
                f"grading failed: {str(err).splitlines()[0][:300] if str(err) else type(err).__name__}",
            )
    key = key_record or {"kind": driver.key_kind, "limit_usd": None}
    if run is not None:
        parts = record_parts(
            run, key_kind=key["kind"], key_limit_usd=key["limit_usd"],
            harness_version=run.harness_version or driver.harness_version(),
            wall_seconds=(result.ended_at - result.started_at).total_seconds(),
            argv=(launched or {}).get("argv", ()), env=(launched or {}).get("env"),
        )  # fmt: skip
        usage, harness, model = parts["usage"], parts["harness"], parts["model"]
    else:
        usage = {
            "input_tokens": {"value": None, "status": "unavailable"},
            "output_tokens": {"value": None, "status": "unavailable"},
            "model_calls": {"value": 0, "status": "measured"}
            if spec.agent_id in STANDINS
            else {"value": None, "status": "unavailable"},
            "cost_usd": {"value": 0, "status": "measured"}
            if spec.agent_id in STANDINS
            else {"value": None, "status": "unavailable"},
            "duration_seconds": {
                "value": round((result.ended_at - result.started_at).total_seconds(), 3),
                "status": "measured",
            },
        }
        standin = spec.agent_id in STANDINS
        harness = {
            "name": STANDIN_HARNESS if standin else driver.harness_name,
            "version": STANDIN_VERSION if standin else driver.harness_version(),
        }
        model = {"requested": driver.model, "responded": None}
    doc = board._base_doc(spec, result, evidence, environment) | {
        "commit": item.base,
        "budget_seconds": limits.budget_seconds,
        "effective_budget_seconds": max(1, round(agent_seconds)) if spec.demo else None,
        "end_reason": end_reason,
        "invalid_reason": invalid,
        "report": None,  # a repair attempt's result is its patch and grade, not a report
        "usage": usage,
        "harness": harness,
        "model": model,
        "key": key,
        "tool_calls": board.tool_calls_part(run),
        "final_output": board.final_output_part(run),
        "repair": {
            "item_id": item.item_id,
            "item_revision": item.revision,
            "track": item.track,
            "patch": patch_ref,
            "grade": grade_ref,
            "limit_hit": limit,
            "permission_denials": permission_denials(out_dir) if driver.external else None,
            "preparation": preparation,
        },
    }
    return parse_record(bound_texts(doc), source=spec.attempt_id)


def _grade(spec, item, patch: bytes, folder: Path, store) -> dict:
    """Grade the patch in a fresh container (``grade_patch``) and store the grade as evidence."""
    grade = grade_patch(item, patch, source={"kind": "attempt", "attempt_id": spec.attempt_id})
    path = folder / GRADE_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(grade.to_json() + "\n", encoding="utf-8")
    tmp.replace(path)
    log.info("%s: graded %s", spec.attempt_id, getattr(grade, "verdict", "?"))
    return store.put_file(path).as_ref()


# --- planning -------------------------------------------------------------------------------------
