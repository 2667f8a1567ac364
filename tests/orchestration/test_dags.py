"""The Airflow DAGs: integrity, and `dag.test()` of the DAGs end to end (real DuckDB; the cycle in
Docker, twice, is in tests/ops/test_cluster_cycle.py beside the cluster's run of the same cycle).

Airflow reads its settings once per process (AIRFLOW_HOME, the metadata DB), so everything that
imports Airflow runs in a subprocess with the environment of scripts/airflow_env.sh, pointed at a
temporary AIRFLOW_HOME and temporary ARGUSIC_* folders. The pytest process never imports Airflow.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import pytest
from test_pickers import CYCLES, analyst_copy, published_cycle

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
MARK = "@@RESULT@@"

# Runs in a subprocess: one or more dag.test() runs, then a JSON summary of every task instance.
DRIVER = r"""
import json, os, sys, time
import pendulum
from airflow.dag_processing.dagbag import DagBag
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from sqlalchemy import select

bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
assert not bag.import_errors, bag.import_errors
results = []
for run in json.loads(sys.argv[1]):
    dag = bag.get_dag(run["dag_id"])
    kwargs = {"run_conf": run.get("conf") or {}}
    if run.get("logical_date"):
        kwargs["logical_date"] = pendulum.parse(run["logical_date"])
    if run.get("mark_success_pattern"):
        kwargs["mark_success_pattern"] = run["mark_success_pattern"]
    started = time.perf_counter()
    dr = dag.test(**kwargs)
    out = {"dag_id": dag.dag_id, "state": str(dr.state), "seconds": round(time.perf_counter() - started, 2)}
    with create_session() as session:
        tis = dr.get_task_instances(session=session)
        out["tis"] = [
            {"task_id": ti.task_id, "map_index": ti.map_index, "state": str(ti.state),
             "label": ti.rendered_map_index, "try": ti.try_number, "seconds": ti.duration}
            for ti in tis
        ]
        rows = session.execute(
            select(XComModel.task_id, XComModel.map_index, XComModel.value).where(
                XComModel.dag_id == dag.dag_id, XComModel.run_id == dr.run_id,
                XComModel.key == "return_value",
            )
        ).all()
        def decode(value):
            if isinstance(value, str):
                try:
                    return json.loads(value)
                except ValueError:
                    return value
            return value
        out["xcom"] = [{"task_id": t, "map_index": m, "value": decode(v)} for t, m, v in rows]
    results.append(out)
print("@@RESULT@@" + json.dumps(results, default=str))
"""


def airflow_env(base: Path, **extra: str) -> dict[str, str]:
    """The environment scripts/airflow_env.sh exports, with Airflow and Argusic state under `base`."""
    seed = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIRFLOW", "ARGUSIC_")) or k == "ARGUSIC_HOME"
    }
    seed |= {
        "AIRFLOW_HOME": str(base / "airflow"),
        "ARGUSIC_RUNS_DIR": str(base / "runs"),
        "ARGUSIC_PUBLISH_DIR": str(base / "published"),
        "ARGUSIC_WAREHOUSE": str(base / "warehouse" / "argusic.duckdb"),
        "ARGUSIC_EVIDENCE_URL": (base / "evidence_store").as_uri(),
        # A retry (a form answered without its note, a failed ingest) waits 2 s here, not a minute.
        "ARGUSIC_RETRY_DELAY_SECONDS": "2",
        "PATH": f"{Path(PYTHON).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        **extra,
    }
    dump = subprocess.run(
        ["bash", "-c", f"source {ROOT / 'scripts' / 'airflow_env.sh'} && env -0"],
        env=seed,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)


def migrate_metadata_db(env: dict[str, str]) -> None:
    """`airflow db migrate` for env's AIRFLOW_HOME (its SQLite airflow.db), done once for the whole run:
    the first call migrates a template, under a lock the xdist workers share; every call copies the
    template's airflow.db (milliseconds; a migration takes 8-35 s on this machine). The template is
    keyed by Airflow's version, so a changed schema is migrated anew."""
    key = f"{version('apache-airflow-core')}-{os.getuid()}"
    template = Path(tempfile.gettempdir()) / f"argusic-airflow-db-{key}"
    with open(f"{template}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (template / "airflow.db").exists():
            home = Path(tempfile.mkdtemp(prefix=f"{template.name}.", dir=template.parent))
            migrated = subprocess.run(
                [str(Path(PYTHON).parent / "airflow"), "db", "migrate"],
                env=env | {"AIRFLOW_HOME": str(home)},
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert migrated.returncode == 0, migrated.stderr[-4000:]
            shutil.rmtree(template, ignore_errors=True)
            home.rename(template)  # whole or not at all
    target = Path(env["AIRFLOW_HOME"])
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template / "airflow.db", target / "airflow.db")


def run_python(env: dict[str, str], code: str, *args: str, timeout: float = 240) -> str:
    proc = subprocess.run(
        [PYTHON, "-c", code, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc.stdout


def dag_test(env: dict[str, str], runs: list[dict], timeout: float = 240) -> list[dict]:
    out = run_python(env, DRIVER, json.dumps(runs), timeout=timeout)
    line = next(line for line in out.splitlines() if line.startswith(MARK))
    results = json.loads(line[len(MARK) :])
    return results


def states(result: dict, task_id: str) -> list[str]:
    return [ti["state"] for ti in result["tis"] if ti["task_id"] == task_id]


@pytest.fixture(scope="module")
def airflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated Airflow metadata DB (SQLite) for the module; each test brings its own ARGUSIC_*."""
    home = tmp_path_factory.mktemp("airflow-home")
    migrate_metadata_db(airflow_env(home))
    return home / "airflow"


def env_for(airflow_home: Path, base: Path, **extra: str) -> dict[str, str]:
    return airflow_env(base, AIRFLOW_HOME=str(airflow_home), **extra)


# --- integrity ---------------------------------------------------------------------------------------

INTEGRITY = r"""
import json, os, sys, time
started = time.perf_counter()
from airflow.dag_processing.dagbag import DagBag
before = {m.partition(".")[0] for m in sys.modules}
bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
out = {"errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": {},
       "loaded": sorted({m.partition(".")[0] for m in sys.modules} - before),
       "parse_seconds": {str(s.file): s.duration.total_seconds() if hasattr(s.duration, "total_seconds")
                         else float(s.duration) for s in bag.dagbag_stats}}
for dag_id, dag in bag.dags.items():
    out["dags"][dag_id] = {
        "tags": sorted(dag.tags), "doc_md": bool(dag.doc_md), "catchup": dag.catchup,
        "schedule": str(dag.schedule),
        "params": {k: dag.params.get_param(k).description for k in dag.params.keys()},
        "examples": {k: dag.params.get_param(k).schema.get("examples") for k in dag.params.keys()},
        "tasks": {t.task_id: {"retries": t.retries, "retry_delay": t.retry_delay.total_seconds(),
                              "pool": t.pool,
                              "mapped": "Mapped" in type(t).__name__, "queue": t.queue,
                              "trigger_rule": getattr(t.trigger_rule, "value", t.trigger_rule),
                              "map_index_template": getattr(t, "map_index_template", None)}
                  for t in dag.tasks},
    }
print("@@RESULT@@" + json.dumps(out))
"""


def test_dagbag_integrity(tmp_path: Path) -> None:
    # a warehouse's analyst copy and a published cycle, for the forms' pick lists (issue #29)
    analyst = analyst_copy(tmp_path / "wh", CYCLES)
    env = airflow_env(tmp_path, ARGUSIC_RETRY_DELAY_SECONDS="", ARGUSIC_ANALYST_DIR=str(analyst))
    published_cycle(Path(env["ARGUSIC_PUBLISH_DIR"]), "2026-12-demo", ["2026-12-demo.board.A-2.p2.a1"])
    out = run_python(env, INTEGRITY)
    info = json.loads(next(x for x in out.splitlines() if x.startswith(MARK))[len(MARK) :])

    assert info["errors"] == {}
    ours = (
        "argusic_pool_rotation",
        "argusic_cycle",
        "argusic_maintenance",
        "argusic_review",
        "argusic_disputes",
        "argusic_verdicts",
        "argusic_items",
        "argusic_judging_review",
        "argusic_emergency_stop",
        "argusic_key_sweep",
        "argusic_paired_review",
    )
    assert set(ours) <= set(info["dags"])
    for dag_id in ours:
        dag = info["dags"][dag_id]
        assert "argusic" in dag["tags"] and len(dag["tags"]) >= 2, dag_id
        assert dag["doc_md"], dag_id
        assert dag["catchup"] is False, dag_id
        for task_id, task in dag["tasks"].items():
            assert task["retries"] >= 1, f"{dag_id}.{task_id} has no retries"
            assert task["retry_delay"] >= 15, f"{dag_id}.{task_id} retries at once"
    # No heavy work at import time: parsing the DAG files loads none of the heavy libraries (they are
    # deferred to the tasks that need them). Checked by what is loaded, not by the clock: parse times
    # are printed, they vary with the machine's load.
    heavy = {
        "dbt",
        "great_expectations",
        "pandas",
        "numpy",
        "docker",
        "hyperscan",
        "pydantic",
        "requests",
        "fsspec",
    }
    assert not heavy & set(info["loaded"]), sorted(heavy & set(info["loaded"]))
    assert info["parse_seconds"], "the DagBag parsed no file"
    print("DAG file parse seconds:", info["parse_seconds"])

    # The paired review's person (issue #31, Layer 3): one mapped form per reported bug, labelled.
    paired = info["dags"]["argusic_paired_review"]["tasks"]
    # judge_pairs (issue #31): chooses and judges the pairs first, so nobody types ids (deliberate)
    assert set(paired) == {"judge_pairs", "load_reviews", "bugs_to_check", "check_bug", "build"}
    assert paired["check_bug"]["mapped"] and "bug_label" in paired["check_bug"]["map_index_template"]
    assert paired["build"]["pool"] == paired["load_reviews"]["pool"] == "argusic_warehouse"

    # Pick lists (issue #29): the warehouse's cycles newest first, the published attempts to dispute.
    cycles = ["2026-12-demo", "2026-12", "2026-11", "2026-10"]
    assert info["dags"]["argusic_review"]["examples"]["cycle_id"] == cycles
    assert info["dags"]["argusic_judging_review"]["examples"]["cycle_id"] == cycles
    assert info["dags"]["argusic_emergency_stop"]["examples"]["cycle"] == cycles
    assert info["dags"]["argusic_disputes"]["examples"]["attempt_id"] == ["2026-12-demo.board.A-2.p2.a1"]

    rotation = info["dags"]["argusic_pool_rotation"]
    assert "@monthly" in rotation["schedule"] or "0 0 1 * *" in rotation["schedule"]
    assert set(rotation["tasks"]) == {"rotate_pool", "reveal_previous_private"}

    cycle = info["dags"]["argusic_cycle"]["tasks"]
    assert set(cycle) == {
        "prepare_pool", "plan", "run_attempt", "ingest", "build", "prepare_publication",
        "approve_publication", "publish", "plan_repair", "run_repair_attempt", "judge", "ingest_judgements",
        "tally", "share_images",
    }  # fmt: skip
    # The run at a glance (issue 29): one tally instance after every attempt task is done, labelled with
    # the counts, beside ingest (ingest does not wait for it).
    tally = cycle["tally"]
    assert tally["mapped"] and "tally_summary" in tally["map_index_template"]
    assert tally["trigger_rule"] == "all_done" and tally["queue"] != "argusic_attempts"
    # Repair attempts (opt-in): mapped like the board's, on the attempt workers, with their label.
    assert (
        cycle["run_repair_attempt"]["mapped"] and cycle["run_repair_attempt"]["queue"] == "argusic_attempts"
    )
    assert cycle["run_repair_attempt"]["map_index_template"] == cycle["run_attempt"]["map_index_template"]
    assert cycle["ingest"]["queue"] == "argusic_warehouse"
    assert info["dags"]["argusic_cycle"]["params"]["repair"]
    assert "condition" in info["dags"]["argusic_cycle"]["params"]["conditions"]  # seed 002, issue #31
    judging = info["dags"]["argusic_judging_review"]["tasks"]  # issue #14, Layer 3
    # the queue in one form (bulk: true) beside the one form per attempt (issue 29, point 10)
    assert set(judging) == {
        "items_to_review",
        "review_attempt",
        "queue_for_one_form",
        "review_queue",
        "build",
    }
    assert not judging["review_queue"]["mapped"]
    assert (
        judging["review_attempt"]["mapped"]
        and "attempt_label" in judging["review_attempt"]["map_index_template"]
    )
    assert judging["build"]["pool"] == "argusic_warehouse"
    items = info["dags"]["argusic_items"]["tasks"]
    assert set(items) == {"find_manifests", "build_items", "validate_items", "ingest"}
    for container_task in ("build_items", "validate_items"):  # test containers: on the attempt workers
        assert items[container_task]["mapped"] and items[container_task]["queue"] == "argusic_attempts"
    assert items["ingest"]["pool"] == "argusic_warehouse" and items["ingest"]["queue"] == "argusic_warehouse"
    assert cycle["run_attempt"]["mapped"] and "attempt_label" in cycle["run_attempt"]["map_index_template"]
    assert "attempt_result" in cycle["run_attempt"]["map_index_template"]  # how it ended, once known
    # An invalid attempt is skipped (not scored, its records still loaded); a failed one stops ingest.
    assert cycle["ingest"]["trigger_rule"] == "none_failed"
    # Every param says what it is for (the trigger form shows it under the field).
    for dag_id in ("argusic_cycle", "argusic_pool_rotation", "argusic_verdicts", "argusic_items"):
        described = info["dags"][dag_id]["params"]
        assert all(d and len(d) > 20 for d in described.values()), (dag_id, described)
    for single_writer in ("ingest", "ingest_judgements", "build", "prepare_publication", "publish"):
        assert cycle[single_writer]["pool"] == "argusic_warehouse"
        assert not cycle[single_writer]["mapped"]
    assert {
        "cycle_id",
        "agents",
        "catalogue",
        "pool",
        "pool_size",
        "demo",
        "shard_index",
        "shard_count",
    } <= set(info["dags"]["argusic_cycle"]["params"])


def test_env_script_binds_loopback_and_raises_map_length(tmp_path: Path) -> None:
    env = airflow_env(tmp_path)
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert int(env["AIRFLOW__CORE__PARALLELISM"]) <= 8
    assert int(env["AIRFLOW__CORE__MAX_MAP_LENGTH"]) >= 3669 * 3
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(ROOT / "dags")
    # Airflow executes every .py in its plugins folder: the argusic package must not be under it.
    assert not (Path(env["AIRFLOW__CORE__PLUGINS_FOLDER"]) / "argusic").exists()


# --- sharding (no Airflow) ---------------------------------------------------------------------------


def _one_commit_repo(folder: Path) -> tuple[Path, str]:
    """A real bare repository with one commit: every synthetic candidate pins it (the pool checks
    that each candidate's repository and commit exist before drawing)."""
    repo = folder / "synthetic.git"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    env |= {f"GIT_{who}_{what}": "t" for who in ("AUTHOR", "COMMITTER") for what in ("NAME", "EMAIL")}
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], env=env, check=True)
    tree = (
        subprocess.run(
            ["git", "--git-dir", str(repo), "mktree"], input=b"", env=env, check=True, capture_output=True
        )
        .stdout.decode()
        .strip()
    )
    commit = (
        subprocess.run(
            ["git", "--git-dir", str(repo), "commit-tree", tree, "-m", "synthetic"],
            env=env,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .strip()
    )
    subprocess.run(
        ["git", "--git-dir", str(repo), "update-ref", "refs/heads/main", commit], env=env, check=True
    )
    return repo, commit


def _synthetic_catalogue(path: Path, established: int, recent: int) -> Path:
    """A catalogue of many candidates on one real repository, under the folder passed as a repo root."""
    repo, commit = _one_commit_repo(path.parent)

    def cand(i: int, popular_since: str) -> dict:
        return {
            "project_id": f"p{i:05d}",
            "repo_url": str(repo),
            "commit": commit,
            "language": ["python", "go", "rust", "js"][i % 4],
            "licence": "MIT",
            "has_readme": True,
            "difficulty": ["easy", "medium", "hard"][i % 3],
            "size_mb": 1.0,
            "popular_since": popular_since,
        }

    items = [cand(i, "2025-01-01") for i in range(established)]
    items += [cand(established + i, "2026-11-15") for i in range(recent)]
    path.write_text(json.dumps({"schema": "argusic.catalogue/1", "candidates": items}))
    return path


def test_shards_partition_the_plan_and_keep_pairs_together(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("ARGUSIC_PUBLISH_DIR", str(tmp_path / "published"))
    monkeypatch.setenv("ARGUSIC_REPO_ROOTS", str(tmp_path))
    from argusic.core.spec import read_spec
    from argusic.cycle.plan import PlanTooLarge, write_plan
    from argusic.cycle.pools import resolve_pool

    catalogue = _synthetic_catalogue(tmp_path / "catalogue.json", established=40, recent=10)
    pool = resolve_pool("2026-12", catalogue=str(catalogue), size=50)
    whole = write_plan(pool, ["readme-runner", "readme-runner-norecover"])
    assert len(whole) == 50 * 2 * 3
    shards = [write_plan(pool, ["readme-runner"], shard_index=i, shard_count=4) for i in range(4)]
    single = write_plan(pool, ["readme-runner"])
    assert sorted(p for shard in shards for p in shard) == sorted(single)  # a partition
    for shard in shards:
        specs = [read_spec(p) for p in shard]
        projects = {s.project_id for s in specs}
        assert len(specs) == 3 * len(projects)  # every attempt of a pair in the same run
    assert write_plan(pool, ["readme-runner"]) == single  # re-planning is stable
    with pytest.raises(PlanTooLarge, match="max_map_length"):
        write_plan(pool, ["readme-runner"], max_specs=100)


# --- dag.test() end to end ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    forge_mod = pytest.importorskip(
        "argusic.sources.forge", reason="argusic.sources.forge.build_forge not written yet"
    )
    return forge_mod.build_forge(tmp_path_factory.mktemp("forge"))


@pytest.mark.slow
def test_pool_rotation_dag_publishes_then_reveals_after_the_cycle(airflow_db, forge, tmp_path) -> None:
    env = env_for(airflow_db, tmp_path, ARGUSIC_REPO_ROOTS=str(forge.parent))
    december, january = dag_test(
        env,
        [
            {
                "dag_id": "argusic_pool_rotation",
                "logical_date": "2026-12-01T00:00:00+00:00",
                "conf": {"catalogue": str(forge)},
            },
            {  # a month later: the December pool is revealed; January's pool is drawn
                "dag_id": "argusic_pool_rotation",
                "logical_date": "2027-01-01T00:00:00+00:00",
                "conf": {"catalogue": str(forge), "pool_size": 2},
            },
        ],
    )
    published = tmp_path / "published"
    assert december["state"] == "success", december
    assert states(december, "rotate_pool") == ["success"]
    assert states(december, "reveal_previous_private") == ["skipped"]  # no November pool: nothing to do
    public = json.loads((published / "2026-12" / "public_pool.json").read_text())
    assert public["cycle_id"] == "2026-12" and public["projects"] and public["private_count"] >= 1
    internal = json.loads((tmp_path / "runs" / "pools" / "2026-12" / "pool.json").read_text())
    private_ids = {e["project_id"] for e in internal["entries"] if e["visibility"] == "private"}
    assert not private_ids & {p["project_id"] for p in public["projects"]}

    assert january["state"] == "success", january
    assert states(january, "reveal_previous_private") == ["success"]
    revealed = json.loads((published / "2026-12" / "private_pool.json").read_text())
    assert {p["project_id"] for p in revealed["projects"]} == private_ids
    assert (published / "2027-01" / "public_pool.json").exists()
    assert not (published / "2027-01" / "private_pool.json").exists()


# The cycle DAG end to end in Docker with dag.test(), run twice (idempotent), is in
# tests/ops/test_cluster_cycle.py: the same cycle as the cluster's, whose board it must equal.


@pytest.mark.slow
def test_fan_out_above_1024_attempts_in_one_run(airflow_db, tmp_path) -> None:
    """400 projects × 1 agent × 3 attempts = 1,200 mapped run_attempt instances in one DAG run.

    The attempts themselves are marked successful (mark_success_pattern): what is under test is the
    expansion. Under Airflow's default [core] max_map_length (1,024) the same run fails at plan.
    """
    catalogue = _synthetic_catalogue(tmp_path / "catalogue.json", established=320, recent=80)
    conf = {"cycle_id": "2026-12", "catalogue": str(catalogue), "pool_size": 400, "agents": ["readme-runner"]}
    run = {
        "dag_id": "argusic_cycle",
        "conf": conf,
        # publish marked, not run: nothing is published for the step after it (share_images) to draw
        "mark_success_pattern": (
            "run_attempt|ingest|build|prepare_publication|approve_publication|publish|share_images"
        ),
    }

    roots = str(tmp_path)
    (ours,) = dag_test(env_for(airflow_db, tmp_path / "ours", ARGUSIC_REPO_ROOTS=roots), [run], timeout=300)
    assert ours["state"] == "success", [t for t in ours["tis"] if t["state"] != "success"][:5]
    mapped = [t for t in ours["tis"] if t["task_id"] == "run_attempt"]
    assert len(mapped) == 1200 and sorted(t["map_index"] for t in mapped) == list(range(1200))
    assert all(t["state"] == "success" for t in mapped)
    # Marked successful without running: their labels are the ones the scheduler gave them when it
    # expanded the plan (argusic.orchestration.policy), what attempts that wait for a worker show.
    labels = {t["map_index"]: t["label"] for t in mapped}
    assert labels[0] == "readme-runner / p00000 / attempt 1" and labels[1199].endswith(" / attempt 3")
    assert not [label for label in labels.values() if not label or label.isdigit()]

    default_env = env_for(
        airflow_db, tmp_path / "default", AIRFLOW__CORE__MAX_MAP_LENGTH="1024", ARGUSIC_REPO_ROOTS=roots
    )
    (capped,) = dag_test(default_env, [run])
    assert capped["state"] == "failed"
    assert states(capped, "plan") == ["failed"]
    assert [t for t in capped["tis"] if t["task_id"] == "plan"][0]["try"] == 1  # not retried: re-plan


@pytest.mark.slow
def test_maintenance_dag_audits_evidence_and_fails_on_tampering(airflow_db, tmp_path) -> None:
    env = env_for(airflow_db, tmp_path)
    seed = r"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, os.environ["TESTS_DIR"])
from conftest import VALID_RECORD, write_record
from argusic.core.evidence import EvidenceStore
from argusic.warehouse.load_runs import ingest
base = Path(os.environ["BASE"])
store = EvidenceStore()
doc = json.loads(json.dumps(VALID_RECORD))
for kind in ("log", "recording", "report"):
    (base / kind).write_bytes(kind.encode() * 3)
    doc["evidence"][kind] = store.put_file(base / kind).as_ref()
ingest([write_record(base / "rec", doc)])
print("@@RESULT@@" + json.dumps(doc["evidence"]))
"""
    env_seed = dict(env, TESTS_DIR=str(Path(__file__).resolve().parents[1]), BASE=str(tmp_path))
    out = run_python(env_seed, seed)
    evidence = json.loads(next(x for x in out.splitlines() if x.startswith(MARK))[len(MARK) :])
    # A past date: the orphan sweep then treats every live container on the shared daemon as within
    # its budget (a future date would remove other attempts' containers mid-run).
    run = {"dag_id": "argusic_maintenance", "logical_date": "2026-01-02T10:00:00+00:00"}
    (clean,) = dag_test(env, [run])
    assert states(clean, "audit_evidence") == ["success"], clean
    assert states(clean, "remove_orphaned_containers") == ["success"], clean
    assert states(clean, "sweep_model_keys") == ["success"], clean
    report = json.loads((tmp_path / "runs" / "audit" / "2026-01-02.json").read_text())
    assert report == {"checked": 3, "ok": True, "findings": []}

    uri = evidence["log"]["uri"]
    stored = Path(uri.removeprefix("file://"))
    stored.chmod(0o644)
    stored.write_bytes(b"tampered")
    (tampered,) = dag_test(env, [dict(run, logical_date="2026-01-02T11:00:00+00:00")])
    assert states(tampered, "audit_evidence") == ["failed"], tampered
    report = json.loads((tmp_path / "runs" / "audit" / "2026-01-02.json").read_text())
    assert [(f["kind"], f["problem"]) for f in report["findings"]] == [("log", "mismatch")]


@pytest.mark.slow
def test_the_emergency_stop_from_the_ui_records_who_when_and_why(airflow_db, tmp_path) -> None:
    """Stop (one cycle), resume, and a resume with nothing to lift (refused at once, not retried)."""
    env = env_for(airflow_db, tmp_path)
    cycle = "2026-12-stop-dag"  # a cycle no other test runs: the stop ends nothing of theirs
    stop, lifted, refused = dag_test(
        env,
        [
            {"dag_id": "argusic_emergency_stop",
             "conf": {"action": "stop", "reason": "incident 7: keys leaking", "cycle": cycle}},
            {"dag_id": "argusic_emergency_stop", "conf": {"action": "resume", "reason": "keys rotated"}},
            {"dag_id": "argusic_emergency_stop", "conf": {"action": "resume", "reason": "again"}},
        ],
    )  # fmt: skip
    assert states(stop, "decide") == ["success"], stop
    assert states(lifted, "decide") == ["success"], lifted
    assert states(refused, "decide") == ["failed"], refused
    decisions = sorted((tmp_path / "runs" / "control" / "decisions").iterdir())
    recorded = [json.loads(p.read_text()) for p in decisions]
    assert [(d["active"], d["reason"], d["cycle"]) for d in recorded] == [
        (True, "incident 7: keys leaking", cycle),
        (False, "keys rotated", cycle),
    ]
    assert all(d["by"] and d["at"].startswith("20") for d in recorded)  # who, and when Airflow recorded it
    switch = json.loads((tmp_path / "runs" / "control" / "emergency_stop.json").read_text())
    assert switch["active"] is False and switch["reason"] == "keys rotated"


@pytest.mark.slow
def test_configuration_errors_fail_at_once_with_the_fix(airflow_db, tmp_path) -> None:
    """A different pool for a recorded cycle, and real budgets on the demo forge: each fails its task
    on the first try (no retries), saying how to go on."""
    from argusic.sources.forge import build_forge

    catalogue = _synthetic_catalogue(tmp_path / "catalogue.json", established=8, recent=2)
    forge = build_forge(tmp_path / "forge")
    env = env_for(
        airflow_db, tmp_path, ARGUSIC_REPO_ROOTS=str(tmp_path), ARGUSIC_FORGE_DIR=str(tmp_path / "forge")
    )
    base = {"agents": ["readme-runner"], "catalogue": str(catalogue)}
    marked = "run_attempt|ingest|build|prepare_publication|approve_publication|publish|share_images"
    first, other_size, forge_real = dag_test(
        env,
        [
            {"dag_id": "argusic_cycle", "conf": base | {"cycle_id": "2026-12", "pool_size": 10},
             "mark_success_pattern": marked},
            {"dag_id": "argusic_cycle", "conf": base | {"cycle_id": "2026-12", "pool_size": 5}},
            {"dag_id": "argusic_cycle",
             "conf": {"cycle_id": "2026-12-f", "catalogue": str(forge), "pool_size": 3}},
        ],
    )  # fmt: skip
    assert first["state"] == "success", first
    prepare = [t for t in other_size["tis"] if t["task_id"] == "prepare_pool"]
    assert other_size["state"] == "failed" and [(t["state"], t["try"]) for t in prepare] == [("failed", 1)]
    assert states(forge_real, "prepare_pool") == ["success"]
    plan = [t for t in forge_real["tis"] if t["task_id"] == "plan"]
    assert forge_real["state"] == "failed" and [(t["state"], t["try"]) for t in plan] == [("failed", 1)]


def _empty_image(tag: str) -> str:
    """A local image with nothing in it: every attempt container fails to start (our tooling's
    failure: invalid), without any registry being asked."""
    import io
    import tarfile

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("empty")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    subprocess.run(["docker", "import", "-", tag], input=data.getvalue(), check=True, capture_output=True)
    return tag


@pytest.mark.slow
@pytest.mark.docker
def test_invalid_attempts_are_skipped_and_a_run_with_nothing_valid_fails_at_ingest(
    airflow_db, forge, tmp_path
):
    from argusic.sandbox.executor import docker_available

    if not docker_available():
        pytest.skip("no Docker daemon")
    image = _empty_image(f"argusic-test-empty:{os.getpid()}")
    image_id = subprocess.run(
        ["docker", "image", "inspect", "-f", "{{.Id}}", image], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        env = env_for(
            airflow_db, tmp_path, ARGUSIC_EXECUTOR="docker", ARGUSIC_RUNNER_IMAGE=image,
            ARGUSIC_REPO_ROOTS=str(forge.parent),
        )  # fmt: skip
        conf = {"cycle_id": "2026-12-inv", "catalogue": str(forge), "pool_size": 2,
                "agents": ["readme-runner"], "demo": True, "attempts_per_pair": 1}  # fmt: skip
        (run,) = dag_test(env, [{"dag_id": "argusic_cycle", "conf": conf}])
    finally:  # by id: its pinned tag (the cycle's pin keeps it) goes too
        subprocess.run(["docker", "image", "rm", "-f", image_id], capture_output=True)
    attempts = [t for t in run["tis"] if t["task_id"] == "run_attempt"]
    assert len(attempts) == 2 and {t["state"] for t in attempts} == {"skipped"}, attempts
    assert all("· INVALID: executor error" in t["label"] for t in attempts), attempts
    # the run's tally: both invalid, said in its label and returned with the counts
    (tally,) = [t for t in run["tis"] if t["task_id"] == "tally"]
    assert tally["state"] == "success"
    assert tally["label"] == "2 attempts: 0 pass · 0 fail · 0 timeout · 2 invalid"
    (counts,) = [x["value"] for x in run["xcom"] if x["task_id"] == "tally"]
    assert counts == {"planned": 2, "fail": 0, "timeout": 0, "invalid": 2, "pass": 0, "without_record": 0,
                      "summary": tally["label"]}  # fmt: skip
    ingest = [t for t in run["tis"] if t["task_id"] == "ingest"]
    assert [(t["state"], t["try"]) for t in ingest] == [("failed", 1)]  # nothing valid: not retried
    assert run["state"] == "failed" and states(run, "publish") == ["upstream_failed"]
    # containers that were created but never started (the image has no python3) are gone too
    installation = subprocess.run(
        [sys.executable, "-c", "from argusic.core.settings import installation_id; print(installation_id())"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=argusic.installation={installation}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert left == [], f"containers left behind: {left}"
