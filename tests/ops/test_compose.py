"""docker-compose.yml, the production description (docs/deployment.md), checked by a real validator.

Debian's docker-compose (1.29.2, installed by scripts/setup_compose.sh when missing, as on a fresh CI
machine) validates the file against its Compose specification schema and resolves it with
.env.example; the layout properties are read from what the tool resolved (`config`), not from the
raw YAML: workers that share nothing but object storage, queues, one store for every Airflow
service, the warehouse on one worker, nothing published beyond 127.0.0.1."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"

ATTEMPT_QUEUE = "argusic_attempts"
WAREHOUSE_QUEUE = "argusic_warehouse"
ATTEMPT_WORKER = "airflow-worker-attempts"
WAREHOUSE_WORKER = "airflow-worker-warehouse"
# The host's Docker engine: on one host every worker talks to the same engine (it is not storage).
DOCKER_SOCKET = "/var/run/docker.sock"
# The same for every Airflow component of the cluster (contract of issue 12, and Airflow's own).
CLUSTER_WIDE = (
    "ARGUSIC_RUNS_URL",
    "ARGUSIC_EVIDENCE_URL",
    "ARGUSIC_INSTALLATION",
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "AIRFLOW__CORE__EXECUTOR",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
    "AIRFLOW__CELERY__BROKER_URL",
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__API__SECRET_KEY",
    "AIRFLOW__CORE__FERNET_KEY",
    "AIRFLOW__CORE__HOSTNAME_CALLABLE",
    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
    "AIRFLOW_CONN_ARGUSIC_S3",
    "AIRFLOW__LOGGING__REMOTE_LOGGING",
    "AIRFLOW__LOGGING__REMOTE_BASE_LOG_FOLDER",
    "AIRFLOW__LOGGING__REMOTE_LOG_CONN_ID",
)
WAREHOUSE_ONLY = ("ARGUSIC_WAREHOUSE", "ARGUSIC_PUBLISH_DIR", "ARGUSIC_BUILD_WORKER")


# --- the validator ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose_tool() -> str:
    """Debian's docker-compose, installed when missing (needs root and the Debian archive)."""
    if shutil.which("docker-compose") is None:
        subprocess.run(["bash", str(ROOT / "scripts" / "setup_compose.sh")], check=True, timeout=600)
    tool = shutil.which("docker-compose")
    assert tool, "scripts/setup_compose.sh did not install docker-compose"
    return tool


def run_compose(tool: str, compose_file: Path, *args: str) -> subprocess.CompletedProcess:
    """The tool on `compose_file` with .env.example, in an environment that holds nothing else of
    ours: a variable the file needs but .env.example lacks fails here as on a fresh host."""
    return subprocess.run(
        [
            tool,
            "--project-directory",
            str(ROOT),
            "-f",
            str(compose_file),
            "--env-file",
            str(ENV_EXAMPLE),
            *args,
        ],
        env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def resolved(compose_tool: str) -> dict:
    """The file as the tool resolved it (interpolated, merged, defaults filled in)."""
    done = run_compose(compose_tool, COMPOSE_FILE, "config")
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_the_file_validates(compose_tool: str) -> None:
    done = run_compose(compose_tool, COMPOSE_FILE, "config", "-q")
    assert done.returncode == 0, f"docker-compose config -q refused docker-compose.yml:\n{done.stderr}"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        # a key the Compose specification does not have
        (("stop_grace_period: 2h10m", "stop_grace_periodd: 2h10m"), "stop_grace_periodd"),
        # a condition it does not know
        (("condition: service_completed_successfully", "condition: service_done"), "service_done"),
    ],
)
def test_the_validator_refuses_a_broken_file(compose_tool: str, tmp_path: Path, change, named) -> None:
    """The same tool, on the file with one mistake, refuses it naming the mistake: the check above can
    fail."""
    text = COMPOSE_FILE.read_text()
    old, new = change
    assert old in text
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(text.replace(old, new, 1))
    done = run_compose(compose_tool, broken, "config", "-q")
    assert done.returncode != 0
    assert named in done.stderr


def test_env_example_names_every_variable_the_file_reads() -> None:
    """Every ${VARIABLE} of the file is in .env.example (besides what the resolving test proves, this
    also covers those with a default), and .env.example holds no placeholder for a variable the file
    does not read."""
    text = COMPOSE_FILE.read_text().replace("$$", "")  # $$ is a literal dollar for the container's shell
    wanted = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", text))
    example = {
        line.split("=", 1)[0]
        for line in ENV_EXAMPLE.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    assert wanted - example == set(), "missing from .env.example"
    assert example - wanted == set(), "in .env.example but not read by docker-compose.yml"


# --- reading the resolved file -----------------------------------------------------------------------


def services(resolved: dict) -> dict[str, dict]:
    return resolved["services"]


def command_of(service: dict) -> list[str]:
    command = service.get("command") or []
    return command.split() if isinstance(command, str) else [str(part) for part in command]


def celery_workers(resolved: dict) -> dict[str, dict]:
    return {
        name: svc for name, svc in services(resolved).items() if command_of(svc)[:2] == ["celery", "worker"]
    }


def airflow_services(resolved: dict) -> dict[str, dict]:
    """Every service that runs the Airflow image (the one with AIRFLOW__CORE__EXECUTOR set)."""
    return {
        name: svc
        for name, svc in services(resolved).items()
        if "AIRFLOW__CORE__EXECUTOR" in (svc.get("environment") or {})
    }


def queues_of(service: dict) -> list[str]:
    command = command_of(service)
    for flag in ("--queues", "-q"):
        if flag in command:
            return command[command.index(flag) + 1].split(",")
    return ["default"]  # Airflow's default queue when none is given


def mounts(service: dict) -> list[tuple[str, str]]:
    """(source, target) of every volume: named volumes by name, bind mounts by host path. 1.29 prints
    the short syntax ("src:dst:mode"); the long syntax (dicts) is read too."""
    found = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            found.append((str(volume.get("source", "")), str(volume["target"])))
        else:
            parts = str(volume).split(":")
            found.append((parts[0], parts[1]) if len(parts) > 1 else ("", parts[0]))
    return found


def published_ports(service: dict) -> list[tuple[str, str]]:
    """(host ip, host port) of every published port (short "ip:host:container/proto" or long)."""
    found = []
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            if port.get("published") is not None:
                found.append((str(port.get("host_ip", "")), str(port["published"])))
            continue
        parts = str(port).split("/")[0].split(":")
        if len(parts) == 3:
            found.append((parts[0], parts[1]))
        elif len(parts) == 2:
            found.append(("", parts[0]))  # no ip: every interface
        else:
            found.append(("", "(ephemeral)"))
    return found


# --- the layout ----------------------------------------------------------------------------------


def test_two_kinds_of_worker_and_their_queues(resolved: dict) -> None:
    workers = celery_workers(resolved)
    assert set(workers) == {ATTEMPT_WORKER, WAREHOUSE_WORKER}
    assert queues_of(workers[ATTEMPT_WORKER]) == [ATTEMPT_QUEUE]
    assert sorted(queues_of(workers[WAREHOUSE_WORKER])) == sorted(["default", WAREHOUSE_QUEUE])
    # The attempt worker's concurrency is the env var's (.env.example says 2).
    command = command_of(workers[ATTEMPT_WORKER])
    assert command[command.index("--concurrency") + 1] == "2"


def test_queue_names_are_the_dags(resolved: dict) -> None:
    """The names the DAGs route by (argusic.orchestration.dag_support), once they are there."""
    import argusic.orchestration.dag_support as dag_support

    assert getattr(dag_support, "ATTEMPT_QUEUE", ATTEMPT_QUEUE) == ATTEMPT_QUEUE
    assert getattr(dag_support, "WAREHOUSE_QUEUE", WAREHOUSE_QUEUE) == WAREHOUSE_QUEUE


def test_workers_share_no_volume(resolved: dict) -> None:
    """No named volume or host folder is mounted by two Celery workers: they share only the object
    store (and, on one Docker host, the engine's socket, which is not storage)."""
    workers = celery_workers(resolved)
    for (a, svc_a), (b, svc_b) in itertools.combinations(sorted(workers.items()), 2):
        shared = {src for src, _ in mounts(svc_a)} & {src for src, _ in mounts(svc_b)}
        assert shared <= {DOCKER_SOCKET}, f"{a} and {b} share {sorted(shared - {DOCKER_SOCKET})}"
    # Nor does any worker mount the checkout: code, DAGs and dbt project are in the image.
    for name, svc in workers.items():
        for src, _ in mounts(svc):
            assert not src.startswith(str(ROOT)), f"{name} mounts {src} from the checkout"


def test_the_warehouse_is_on_the_warehouse_worker_alone(resolved: dict) -> None:
    airflow = airflow_services(resolved)
    for variable in WAREHOUSE_ONLY:
        having = sorted(name for name, svc in airflow.items() if variable in svc["environment"])
        assert having == [WAREHOUSE_WORKER], f"{variable} is set on {having}"
    warehouse_path = airflow[WAREHOUSE_WORKER]["environment"]["ARGUSIC_WAREHOUSE"]
    (volume,) = [
        src
        for src, dst in mounts(airflow[WAREHOUSE_WORKER])
        if warehouse_path.startswith(dst.rstrip("/") + "/")
    ]
    # The volume that holds it: the warehouse worker and the build worker beside it (same host), no other.
    holders = sorted(
        name for name, svc in services(resolved).items() if volume in {s for s, _ in mounts(svc)}
    )
    assert holders == sorted(["argusic-build-worker", WAREHOUSE_WORKER])
    assert volume in resolved["volumes"]  # a named volume of the warehouse host, not a host folder


def test_every_airflow_service_has_one_store_and_one_installation(resolved: dict) -> None:
    airflow = airflow_services(resolved)
    assert {
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
        "airflow-init",
        "argusic-build-worker",
        ATTEMPT_WORKER,
        WAREHOUSE_WORKER,
    } <= set(airflow)
    for variable in CLUSTER_WIDE:
        values = {name: svc["environment"].get(variable) for name, svc in airflow.items()}
        assert None not in values.values(), (
            f"{variable} missing on {[n for n, v in values.items() if v is None]}"
        )
        assert len(set(values.values())) == 1, f"{variable} differs: {values}"
    env = airflow[ATTEMPT_WORKER]["environment"]
    bucket = env["ARGUSIC_RUNS_URL"].removeprefix("s3://").split("/")[0]
    assert env["ARGUSIC_RUNS_URL"] == f"s3://{bucket}/runs"
    assert env["ARGUSIC_EVIDENCE_URL"] == f"s3://{bucket}/evidence"
    assert env["AIRFLOW__LOGGING__REMOTE_BASE_LOG_FOLDER"] == f"s3://{bucket}/logs"
    assert env["AWS_ENDPOINT_URL"] == "http://minio:9000"
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__CORE__HOSTNAME_CALLABLE"] == "argusic.ops.cluster_host.hostname"


def test_every_airflow_setting_is_one_airflow_knows(resolved: dict) -> None:
    """Each AIRFLOW__SECTION__KEY of the file names an option of Airflow's configuration (or of an
    installed provider's): a misspelt or misplaced one would be ignored in silence. The celery
    section's are checked where the Celery provider is installed (pinned for the cluster)."""
    import importlib.util

    from airflow.configuration import conf

    known = conf.configuration_description
    celery_installed = importlib.util.find_spec("airflow.providers.celery") is not None
    checked = 0
    for name, svc in airflow_services(resolved).items():
        for variable in svc["environment"]:
            if not variable.startswith("AIRFLOW__"):
                continue
            section, _, option = variable.removeprefix("AIRFLOW__").partition("__")
            section, option = section.lower(), option.lower()
            if section == "celery" and not celery_installed:
                continue
            assert option in known.get(section, {}).get("options", {}), (
                f"{name}: {variable} is no Airflow option"
            )
            checked += 1
    assert checked > 100


def test_the_log_connection_is_one_airflow_reads(resolved: dict) -> None:
    """AIRFLOW_CONN_ARGUSIC_S3 parses as an Airflow connection to the same store, without credentials
    of its own (boto3 reads the AWS_* variables)."""
    from airflow.models.connection import Connection

    env = services(resolved)[WAREHOUSE_WORKER]["environment"]
    assert env["AIRFLOW__LOGGING__REMOTE_LOG_CONN_ID"] == "argusic_s3"
    connection = Connection.from_json(env["AIRFLOW_CONN_ARGUSIC_S3"], conn_id="argusic_s3")
    assert connection.conn_type == "aws"
    assert connection.extra_dejson["endpoint_url"] == env["AWS_ENDPOINT_URL"]
    assert connection.login is None and connection.password is None


# Parses each command line with Airflow's own CLI parser (no command runs); prints what it refused.
PARSE_COMMANDS = """
import json, sys
from airflow.cli.cli_parser import get_parser

parser = get_parser()
refused = []
for argv in json.loads(sys.argv[1]):
    try:
        parser.parse_args(argv)
    except SystemExit:
        refused.append(argv)
if json.loads(sys.argv[2]):  # the Celery app the workers' health check pings
    from airflow.providers.celery.executors import celery_executor
    if not hasattr(celery_executor, "app"):
        refused.append(["celery", "--app", "airflow.providers.celery.executors.celery_executor.app"])
print(json.dumps(refused))
"""


def airflow_command_lines(resolved: dict) -> list[list[str]]:
    """Every `airflow …` command line of the file: services run by the image's entrypoint (airflow),
    the one-shot's shell command, and the health checks."""
    import shlex

    lines = []
    for svc in airflow_services(resolved).values():
        entrypoint = svc.get("entrypoint")
        if entrypoint is None:
            lines.append(command_of(svc))
        elif entrypoint[:2] == ["/bin/bash", "-c"]:
            for part in " ".join(command_of(svc)).split("&&"):
                words = shlex.split(part)
                assert words[0] == "airflow", part
                lines.append(words[1:])
        test = (svc.get("healthcheck") or {}).get("test") or []
        if test[:2] == ["CMD", "airflow"]:
            lines.append(test[2:])
    return lines


def test_airflow_accepts_every_command_line(resolved: dict, tmp_path: Path) -> None:
    """api-server, scheduler, dag-processor, `triggerer --skip-serve-logs`, `celery worker --queues …
    --concurrency …`, `db migrate`, `pools set …` and the health checks' `jobs check …` as Airflow's
    CLI parses them (with the CeleryExecutor, as in the file). The Celery commands where the Celery
    provider is installed (pinned for the cluster)."""
    import importlib.util
    import json
    import os
    import sys

    celery = importlib.util.find_spec("airflow.providers.celery") is not None
    lines = [line for line in airflow_command_lines(resolved) if celery or line[0] != "celery"]
    assert len(lines) >= 10
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor" if celery else "LocalExecutor",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    done = subprocess.run(
        [sys.executable, "-c", PARSE_COMMANDS, json.dumps(lines), json.dumps(celery)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stderr[-2000:]


def test_per_host_folders_are_the_containers_own(resolved: dict) -> None:
    """Runs cache, temp space and Airflow's log folder live on no volume (each container's own file
    system); the scratch folder only on the attempt worker, at the same path on the host."""
    for name, svc in airflow_services(resolved).items():
        env = svc["environment"]
        for variable in ("ARGUSIC_RUNS_DIR", "TMPDIR", "AIRFLOW__LOGGING__BASE_LOG_FOLDER"):
            path = env[variable].rstrip("/") + "/"
            on = [dst for _, dst in mounts(svc) if path.startswith(dst.rstrip("/") + "/")]
            assert on == [], f"{name}: {variable}={env[variable]} is on a mounted volume {on}"
    scratch = {
        name: svc
        for name, svc in airflow_services(resolved).items()
        if "ARGUSIC_SCRATCH_DIR" in svc["environment"]
    }
    assert list(scratch) == [ATTEMPT_WORKER]
    path = scratch[ATTEMPT_WORKER]["environment"]["ARGUSIC_SCRATCH_DIR"]
    assert (path, path) in mounts(scratch[ATTEMPT_WORKER])


def test_attempt_worker_bind_mounts_are_at_the_same_path_on_the_host(resolved: dict) -> None:
    """dockerd resolves bind sources on the host: whatever the worker hands to attempt containers (the
    scratch folder, the harness) must be at the same path there and here."""
    worker = services(resolved)[ATTEMPT_WORKER]
    for src, dst in mounts(worker):
        assert src == dst, f"{src} is mounted at {dst}"
    assert worker["privileged"] is True
    assert ("/opt/argusic/plugins/argusic/harness", "/opt/argusic/plugins/argusic/harness") in mounts(worker)


def test_hostnames_tell_the_services_apart(resolved: dict) -> None:
    named = {
        name: svc["environment"].get("ARGUSIC_HOSTNAME")
        for name, svc in airflow_services(resolved).items()
        if name != ATTEMPT_WORKER
    }
    assert named == {name: name for name in named}  # reachable by that name on the compose network
    # Replicas of the attempt worker: empty, so each records its container's own host name.
    assert services(resolved)[ATTEMPT_WORKER]["environment"]["ARGUSIC_HOSTNAME"] == ""


def test_published_ports_are_on_loopback(resolved: dict) -> None:
    published = {
        name: published_ports(svc) for name, svc in services(resolved).items() if published_ports(svc)
    }
    assert published == {"airflow-apiserver": [("127.0.0.1", "8080")]}


def test_dependencies_wait_for_health(resolved: dict) -> None:
    """A service waited for as healthy has a health check; one waited for to complete is a one-shot."""
    every = services(resolved)
    for name, svc in every.items():
        for needed, how in (svc.get("depends_on") or {}).items():
            condition = how["condition"] if isinstance(how, dict) else "service_started"
            if condition == "service_healthy":
                assert "healthcheck" in every[needed], (
                    f"{name} waits for {needed}'s health, which has no check"
                )
            if condition == "service_completed_successfully":
                assert every[needed].get("restart") == "no", f"{needed} is not a one-shot"
    for name in (
        "postgres",
        "redis",
        "minio",
        "airflow-apiserver",
        "airflow-scheduler",
        ATTEMPT_WORKER,
        WAREHOUSE_WORKER,
    ):
        assert "healthcheck" in every[name], name
    assert every["airflow-init"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert every[ATTEMPT_WORKER]["depends_on"]["minio-init"]["condition"] == "service_completed_successfully"


# --- images move between hosts as `docker save` archives -----------------------------------------


@pytest.mark.slow
def test_image_id_survives_save_and_load(tmp_path: Path) -> None:
    """The cycle pin records the runner image by id; a `docker save` archive loaded on another engine
    gives the same id (here: saved, removed, loaded again on this engine)."""
    from argusic.sandbox.executor import docker_available

    if not docker_available():
        pytest.skip("no Docker engine answers")
    tag = f"argusic-test-saveload:{uuid.uuid4().hex[:12]}"
    (tmp_path / "hello.txt").write_text("hello\n")
    (tmp_path / "Dockerfile").write_text(
        'FROM scratch\nCOPY hello.txt /\nLABEL argusic.test=saveload\nCMD ["/hello.txt"]\n'
    )
    docker = ["docker"]
    subprocess.run(
        [*docker, "build", "-q", "-t", tag, str(tmp_path)], check=True, capture_output=True, timeout=300
    )
    image_id = subprocess.run(
        [*docker, "image", "inspect", "-f", "{{.Id}}", tag], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        archive = tmp_path / "image.tar"
        subprocess.run([*docker, "save", "-o", str(archive), tag], check=True, timeout=300)
        subprocess.run([*docker, "rmi", image_id], check=True, capture_output=True, timeout=300)
        gone = subprocess.run([*docker, "image", "inspect", image_id], capture_output=True, check=False)
        assert gone.returncode != 0  # really gone: the load below brings it back
        subprocess.run([*docker, "load", "-i", str(archive)], check=True, capture_output=True, timeout=300)
        loaded = subprocess.run(
            [*docker, "image", "inspect", "-f", "{{.Id}}", tag], check=True, capture_output=True, text=True
        ).stdout.strip()
        assert loaded == image_id
    finally:
        subprocess.run([*docker, "rmi", "-f", image_id], capture_output=True, check=False)
