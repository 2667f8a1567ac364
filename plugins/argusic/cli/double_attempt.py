"""`argusic model-double attempt --agent claude-code|codex --scenario install|budget|fails-500|fails-429|
spent [--project tinydata] [--out DIR]`: one whole attempt of a real agent CLI against the scripted
model, as a stranger runs it (issue #28).

What runs is what a cycle runs, with only the model scripted:

- the model double (``argusic.sandbox.model_double``) starts as a LiteLLM gateway (a master key of its
  own, the seed's ``model_prices``) in the runner image, on a fresh internal Docker network of its own
  (``argusic.sandbox.double_container.DoubleContainer``, the judges' double too), answering the
  script ``plugins/argusic/model_scripts/<project>/<agent>.<kind>.json``;
- the real key broker (``LiteLLMKeyBroker``) mints the attempt's per-run key against it, with the
  orchestrator's limit (``spent``: a limit the install script's first two answers spend, so the
  gateway refuses the third request as LiteLLM does);
- the real attempt (``argusic.attempts.run.run_attempt``) of the pinned CLI in the agents image, its
  container on the double's network, on the project built on the fly from its files here
  (``TRIAL_PROJECTS``: a bare git repository and a commit, in ``--out``); the CLI's model-request
  retries are off for the run, so a scripted 500 or 429 ends the session instead of being retried.

It prints the commands the CLI executed (its session log, through the driver's ``collect``), how the
attempt ended (end reason, invalid reason, container fault), what the harness observed and the points
the rubric gives (dbt's ``attempt_scores`` on a scratch DuckDB, never the warehouse), the usage and
cost the CLI stated, the gateway's spend, the key's life (minted, requests carrying it, deleted) and
where the record, log and recording are, with the ``argusic play`` line that replays them. Nothing
lands in the operator's runs folder, evidence store or warehouse: everything is under ``--out``.

The double and its network are removed however the attempt ends (also on Ctrl-C). Exit codes: 0 the
attempt ran and is on record (whatever its ending); 1 it could not run (no key, no record); 2 refused
(an unknown agent, scenario or project, no script for that CLI, no Docker, a missing image).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer

from argusic.attempts import agents
from argusic.attempts.keys import IssuedKey, KeyUnavailable, LiteLLMKeyBroker
from argusic.attempts.run import run_attempt
from argusic.cli.common import console, fail, shown_path
from argusic.core.evidence import EvidenceStore
from argusic.core.record import RecordError, load_record_file
from argusic.core.settings import agents_image, runner_image
from argusic.core.spec import AttemptSpec
from argusic.sandbox.containment import NETWORK_ENV
from argusic.sandbox.double_container import DoubleContainer
from argusic.sandbox.executor import docker_available
from argusic.sandbox.model_double import (
    DEFAULT_PRICES_FILE,
    ScriptError,
    load_prices,
    load_script_file,
    script_file,
)
from argusic.workflows.reproduce import score_records

CYCLE = "model-double"  # each trial is a cycle of its own, model-double-<UTC time>: a cycle pins its
# environment (the attempt network among it), and each trial's double has a network of its own
AGENTS = agents.EXTERNAL_HARNESSES  # the agent ids whose CLIs the double speaks to
SCENARIOS = {  # scenario -> the script kind it runs
    "install": "install",
    "budget": "budget",
    "fails-500": "fails-500",
    "fails-429": "fails-429",
    "spent": "install",  # the install script, with a key whose limit two answers spend
}
DEFAULT_BUDGET = 180
BUDGET_FOR = {("budget", "claude-code"): 30, ("budget", "codex"): 20}  # the hang outlasts these
STANDARD_BUDGET = 5400  # the standard tier's budget: the demo scale is budget / this

# The projects the scripts are for, built on the fly (a bare repository with one commit): the same
# files as the tests' (tests/external/test_model_double.py builds tinydata with hostile_repo).
TRIAL_PROJECTS: dict[str, dict[str, str]] = {
    "tinydata": {
        "README.md": "# tinydata\n\nA tiny data maker (the model double's trial project).\n\n## Usage\n\n"
        "```sh\npython3 make_data.py out/data.json\n```\n",
        "make_data.py": 'import json, sys\npath = sys.argv[1]\nwith open(path, "w") as f:\n'
        '    json.dump({"items": [1, 2, 3]}, f)\nprint("wrote", path)\n',
    },
}


class TrialRefused(ValueError):
    """The trial cannot start as asked (the message says why and what to do)."""


@dataclasses.dataclass(frozen=True)
class TrialPlan:
    agent: str
    scenario: str
    project: str
    script: Path
    turns: list[dict]
    budget: int
    limit_usd: float | None  # the key's limit (None: the orchestrator's)


def plan_trial(agent: str, scenario: str, project: str, budget: int | None = None) -> TrialPlan:
    """Check the arguments (no Docker needed): TrialRefused naming what is wrong."""
    if agent not in AGENTS:
        raise TrialRefused(f"--agent {agent!r}: the model double speaks to {', '.join(AGENTS)}")
    if scenario not in SCENARIOS:
        raise TrialRefused(f"--scenario {scenario!r}: one of {', '.join(SCENARIOS)}")
    if project not in TRIAL_PROJECTS:
        raise TrialRefused(f"--project {project!r}: the trial builds {', '.join(TRIAL_PROJECTS)}")
    try:
        script = script_file(project, agent, SCENARIOS[scenario])
        turns = load_script_file(script)
    except ScriptError as err:
        raise TrialRefused(f"scenario {scenario!r} has no script for {agent}: {err}") from None
    limit = spent_limit(agent, turns) if scenario == "spent" else None
    chosen = budget or BUDGET_FOR.get((scenario, agent), DEFAULT_BUDGET)
    return TrialPlan(agent, scenario, project, script, turns, chosen, limit)


def answer_cost(turn: dict, model: str, prices: dict[str, tuple[float, float]]) -> Decimal:
    """What the gateway charges for one scripted answer: its tokens x the seed's prices."""
    price_in, price_out = (Decimal(str(p)) for p in prices[model])
    usage = turn.get("usage", {})
    return usage.get("input_tokens", 100) * price_in + usage.get("output_tokens", 20) * price_out


def spent_limit(agent: str, turns: list[dict]) -> float:
    """A key limit the first answer does not reach and the first two pass: the gateway serves two
    answers, then refuses the key (LiteLLM's budget_exceeded)."""
    model = agents.DRIVERS[agent].model
    prices = load_prices(DEFAULT_PRICES_FILE)
    if model not in prices or len(turns) < 2:
        raise TrialRefused(f"scenario 'spent' needs a price for {model} and two scripted answers")
    return float(answer_cost(turns[0], model, prices) + answer_cost(turns[1], model, prices) / 2)


def check_docker() -> None:
    """TrialRefused when no Docker daemon answers or an image the trial needs is missing."""
    if not docker_available():
        raise TrialRefused("no Docker daemon answers (the CLI and the model double run in containers)")
    import docker  # deferred: the Docker SDK is slow to import; only a trial that runs needs it

    client = docker.from_env()
    for image, how in ((agents_image(), "make agents-image"), (runner_image(), "make image")):
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            raise TrialRefused(f"no image {image} on this Docker daemon (build it: `{how}`)") from None


def build_project(project: str, folder: Path) -> tuple[Path, str]:
    """The project's files committed in a fresh repository under ``folder``; (bare repository, commit)."""
    folder = folder.resolve()  # git runs in more than one folder: a relative path would name two places
    work, bare = folder / f"src-{project}", folder / f"{project}.git"
    work.mkdir(parents=True)
    for name, text in TRIAL_PROJECTS[project].items():
        (work / name).write_text(text)

    def git(*args: str, cwd: Path = work) -> str:
        ident = ["-c", "user.name=argusic", "-c", "user.email=model-double@argusic.invalid"]
        done = subprocess.run(["git", *ident, *args], cwd=cwd, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-qm", f"{project}: the model double's trial project")
    git("clone", "-q", "--bare", str(work), str(bare), cwd=folder)
    git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=bare)
    return bare, git("rev-parse", "HEAD")


class TrialBroker(LiteLLMKeyBroker):
    """The real broker against the double's gateway; keeps the keys it made (to tell their life) and
    mints them with ``limit`` when one is set (scenario spent)."""

    def __init__(self, *args: Any, limit: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit = limit
        self.issued: list[IssuedKey] = []

    def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None) -> IssuedKey:
        key = super().create(attempt_id, self.limit or limit_usd, ttl_seconds=ttl_seconds)
        self.issued.append(key)
        return key


@contextlib.contextmanager
def attempt_conditions(agent: str, network: str) -> Iterator[None]:
    """For the run only: attempts join the double's network, the CLI's model-request retries off."""
    driver, before = agents.DRIVERS[agent], os.environ.get(NETWORK_ENV)
    agents.DRIVERS[agent] = dataclasses.replace(driver, max_retries=0)
    os.environ[NETWORK_ENV] = network
    try:
        yield
    finally:
        agents.DRIVERS[agent] = driver
        if before is None:
            os.environ.pop(NETWORK_ENV, None)
        else:
            os.environ[NETWORK_ENV] = before


def next_attempt_no(folder: Path, agent: str, project: str) -> int:
    """The first attempt number with no folder in the cycle's ``folder`` (a record on file is never
    measured again)."""
    taken = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    n = 1
    while f"{folder.name}.board.{agent}.{project}.a{n}" in taken:
        n += 1
    return n


@dataclasses.dataclass
class TrialRun:
    plan: TrialPlan
    record_path: Path
    record: Any
    double_url: str
    network: str
    requests: list[dict]  # the double's request log (never a key)
    key: IssuedKey | None
    broker: TrialBroker
    store_url: str
    runs: Path


def run_trial(plan: TrialPlan, out: Path, say=lambda text: None) -> TrialRun:
    """Start the double, run the attempt, stop the double (however it ends); the record and the rest."""
    out.mkdir(parents=True, exist_ok=True)
    runs, evidence = out / "runs", out / "evidence"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    cycle = f"{CYCLE}-{stamp}"
    bare, commit = build_project(plan.project, out / "projects" / stamp)
    attempt_no = next_attempt_no(runs / cycle, plan.agent, plan.project)
    spec = AttemptSpec(
        cycle_id=cycle, agent_id=plan.agent, project_id=plan.project, repo_url=str(bare), commit=commit,
        tier="standard", attempt_no=attempt_no, demo=True, budget_scale=plan.budget / STANDARD_BUDGET,
    )  # fmt: skip
    master = f"sk-master-{os.urandom(24).hex()}"
    store = EvidenceStore(evidence.resolve().as_uri())
    with DoubleContainer(plan.script.read_bytes(), master_key=master) as double:
        url = double.start()
        assert double.network is not None
        say(
            f"model double: {url} on internal network {double.network} (LiteLLM gateway, seed prices), "
            f"answering {shown_path(plan.script)} ({len(plan.turns)} turns)"
        )
        broker = TrialBroker(url, master, limit=plan.limit_usd, backoff_seconds=0.05)
        say(f"attempt {spec.attempt_id}: {plan.agent} in {agents_image()}, budget {plan.budget} s …")
        with attempt_conditions(plan.agent, double.network):
            path = run_attempt(spec, None, store, runs, broker=broker)
        network = double.network
    return TrialRun(
        plan, path, load_record_file(path), url, network, double.requests,
        broker.issued[0] if broker.issued else None, broker, store.url, runs,
    )  # fmt: skip


# -- what is printed ---------------------------------------------------------------------------------


def _measure(measure) -> str:
    if measure is None:
        return "—"
    value = "—" if measure.value is None else f"{measure.value:g}"
    return f"{value} ({measure.status})"


def _yes(value) -> str:
    return {True: "yes", False: "no", None: "—"}[value]


def trial_lines(run: TrialRun, points: dict | str | None) -> list[str]:
    """What a stranger reads of the trial, every figure from the record, the CLI's session log, the
    gateway's request log and the broker."""
    record, out = run.record, run.record_path.parent / "out"
    lines = [f"attempt: {record.attempt_id} ({record.harness.name if record.harness else '—'} "
             f"{record.harness.version if record.harness else ''}, model requested "
             f"{record.model.requested if record.model else '—'})"]  # fmt: skip
    try:
        collected = agents.DRIVERS[run.plan.agent].collect(out)
        calls = [c for c in collected.tool_calls if c.category == "exec"]
    except Exception as err:  # a session log the collector cannot read is said, not raised
        calls, lines = [], [*lines, f"commands executed: the session log could not be read ({err})"]
    lines.append(f"commands executed (the CLI's session log): {len(calls)}")
    for n, call in enumerate(calls, 1):
        state = {True: "ok", False: "failed", None: "no result"}[call.ok]
        lines.append(f"  {n}. [{state}] {call.arguments.get('command')}")
    lines.append(f"end reason: {record.end_reason}")
    lines.append(f"invalid reason: {record.invalid_reason or '—'}")
    lines.append(f"container fault: {record.container_fault or '—'}")
    seen = record.observed
    if seen is None:
        lines.append("observed: —")
    else:
        lines.append(
            f"observed ({seen.source}): installed {_yes(seen.install_ok)}, ran {_yes(seen.ran_ok)}, "
            f"errors {seen.errors_encountered} found / {seen.errors_fixed} fixed, verified "
            f"{_yes(seen.verified)}, commands {seen.commands_run} run / {seen.commands_failed} failed"
        )
    if isinstance(points, dict):
        points = {k: "—" if v is None else v for k, v in points.items()}
        lines.append(
            f"points (the rubric, dbt attempt_scores): outcome {points['outcome']}, install "
            f"{points['install_points']}, run {points['run_points']}, recovery {points['recovery_points']}, "
            f"depth {points['depth_points']}, score {points['score']}"
        )
    else:
        lines.append(f"points: {points or 'not computed (--no-points)'}")
    usage = record.usage
    if usage is None:
        lines.append("usage: —")
    else:
        lines.append(
            f"usage (the CLI's own count): input tokens {_measure(usage.input_tokens)}, output tokens "
            f"{_measure(usage.output_tokens)}, model calls {_measure(usage.model_calls)}, cost USD "
            f"{_measure(usage.cost_usd)}"
        )
    key = run.key
    spend = key.gateway_spend if key is not None else None
    if spend:
        lines.append(
            f"gateway spend: {spend['spend_usd']:.6f} USD of max_budget {spend['max_budget_usd']} USD "
            "(the tokens it served x seed model_prices)"
        )
    else:
        lines.append("gateway spend: — (not read)")
    model = [r for r in run.requests if str(r["path"]).startswith("/v1/")]
    carried = [r for r in model if key is not None and r.get("key") == key.alias]
    statuses: dict[int, int] = {}
    for r in model:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    shown_statuses = ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items())) or "none"
    key_calls = [(r["method"], r["path"], r["status"]) for r in run.requests if r["path"].startswith("/key/")]
    deleted = ("POST", "/key/delete", 200) in key_calls
    stats = run.broker.stats
    if key is None:
        lines.append(f"key: none minted (broker: created {stats.created}, failed {stats.create_failed})")
    else:
        lines.append(
            f"key: minted {key.alias} (fingerprint {key.fingerprint}, limit {key.limit_usd} USD); "
            f"model requests {len(model)} ({shown_statuses}), the key accepted on {len(carried)}; "
            f"deleted {'yes' if deleted and stats.deleted == 1 else 'NO'} "
            f"(broker: created {stats.created}, deleted {stats.deleted}, delete failed {stats.delete_failed})"
        )
    lines.append(f"record: {run.record_path}")
    for name in ("log.txt", "recording.cast", "session.jsonl", "report.json"):
        lines.append(f"{name}: {out / name}" if (out / name).is_file() else f"{name}: none")
    shown = record.presentation
    for kind in ("log", "recording"):
        ref = getattr(shown, kind, None) if shown is not None else None
        lines.append(f"served {kind}: {ref.uri if ref else '—'}")
    lines.append(
        f"replay: ARGUSIC_RUNS_DIR={run.runs.resolve()} ARGUSIC_EVIDENCE_URL={run.store_url} "
        f"argusic play {record.attempt_id}"
    )
    lines.append(f"model double and its network {run.network}: removed")
    return lines


def attempt(
    agent: Annotated[str, typer.Option(help=f"The agent CLI: {', '.join(AGENTS)}")],
    scenario: Annotated[
        str,
        typer.Option(
            help="install (install, fail, fix, verify), budget (a command outlasts the budget), "
            "fails-500 / fails-429 (the model fails mid-session), spent (the key's limit is reached)"
        ),
    ] = "install",
    project: Annotated[
        str, typer.Option(help="The project the scripts are for (built on the fly)")
    ] = "tinydata",
    out: Annotated[
        Path, typer.Option(file_okay=False, help="Where the project, runs and evidence go")
    ] = Path("model-double-attempts"),
    budget_seconds: Annotated[
        int | None,
        typer.Option(
            min=10, max=STANDARD_BUDGET, help="The attempt's budget (default 180 s; budget: 30 / 20 s)"
        ),
    ] = None,
    points: Annotated[
        bool, typer.Option("--points/--no-points", help="Score the record with the rubric (dbt, ~30 s)")
    ] = True,
) -> None:
    """One whole attempt of a real agent CLI (Claude Code, Codex) against the scripted model: the
    model double as the LiteLLM gateway on a Docker network of its own, the attempt's key minted by the
    real broker, the real attempt; prints the commands the CLI ran, the ending, points, usage, the
    gateway's spend, the key's life and where the record, log and recording are."""
    try:
        plan = plan_trial(agent, scenario, project, budget_seconds)
        check_docker()
    except TrialRefused as err:
        fail(str(err))
    say = lambda text: console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    try:
        run = run_trial(plan, out, say)
    except (KeyUnavailable, RecordError, OSError, subprocess.CalledProcessError, RuntimeError) as err:
        console.print(f"error: the attempt did not run: {err}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None
    scored: dict | str | None = None
    if points:
        try:
            scored = score_records([run.record]).get(run.record.attempt_id) or "not scored by the rubric"
        except Exception as err:  # the points are a reading of the record: say why there are none
            scored = f"not computed ({str(err).splitlines()[0] if str(err) else type(err).__name__})"
    for line in trial_lines(run, scored):
        say(line)
