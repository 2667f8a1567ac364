#!/usr/bin/env bash
# The Airflow cluster on this machine's loopback (issue 12): CeleryExecutor on PostgreSQL and Redis,
# moto's S3 server as the object store, the api-server, scheduler, dag-processor and triggerer, two
# attempt workers and the warehouse worker with the build worker: from Debian packages and PyPI only.
# Each worker is a "host" that shares no folder with the others: they share only the object store,
# Postgres and Redis (docs/airflow.md "The cluster on this machine").
#
#   bash scripts/cluster.sh start              # start everything, wait until healthy (make cluster)
#   bash scripts/cluster.sh stop               # stop everything it recorded (make cluster-stop)
#   bash scripts/cluster.sh status             # each component, its PID, alive or not, memory
#   bash scripts/cluster.sh kill-worker NAME   # SIGKILL a worker's whole session, as a lost host
#   bash scripts/cluster.sh start-worker NAME  # start it again (attempts-1, attempts-2, warehouse)
#   bash scripts/cluster.sh restart-scheduler [--kill]   # TERM (or SIGKILL) the scheduler, start it
#
# Every process is started with setsid (its own session and process group), its PID recorded in
# <cluster>/pids/, and stopped by that PID: TERM to its group, then SIGKILL to whatever is left in
# its session after a grace (an Airflow task process moves to a process group of its own, but stays
# in the worker's session). Every listener binds 127.0.0.1; workers run with --skip-serve-logs
# (Airflow 3.3's log server binds all interfaces) and write task logs to the object store.
#
# Settings (environment; ports are recorded at start so that the other subcommands find them):
#   ARGUSIC_CLUSTER_DIR        state folder (default <repo>/.cluster)
#   ARGUSIC_CLUSTER_API_PORT   api-server / UI (8090)     ARGUSIC_CLUSTER_PG_PORT     Postgres (15432)
#   ARGUSIC_CLUSTER_REDIS_PORT Redis (16379)              ARGUSIC_CLUSTER_S3_PORT     moto S3 (15000)
#   ARGUSIC_CLUSTER_DAGS_FOLDER  DAGs (default <repo>/dags)
#   ARGUSIC_CLUSTER_ATTEMPT_CONCURRENCY  per attempt worker (default: cores / cpus of one attempt)
#   ARGUSIC_CLUSTER_WAREHOUSE_CONCURRENCY (2)   ARGUSIC_CLUSTER_STOP_GRACE seconds (30)
#   ARGUSIC_CLUSTER_PG_USER    the unprivileged user Postgres runs as when started by root (postgres)
#   ARGUSIC_CLUSTER_START_TIMEOUT seconds (240)   ARGUSIC_CLUSTER_PG_BIN (/usr/lib/postgresql/15/bin)
# Any other AIRFLOW__* exported before a subcommand reaches the processes it starts (e.g.
# AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT, AIRFLOW__SCHEDULER__MAX_TIS_PER_QUERY).
# Missing Debian packages (postgresql-15, redis-server) are installed with apt-get when run as root.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${AIRFLOW_BIN:-$ROOT/.venv/bin}"
PY="$BIN/python"
CLUSTER_DIR="${ARGUSIC_CLUSTER_DIR:-$ROOT/.cluster}"
PG_BIN="${ARGUSIC_CLUSTER_PG_BIN:-/usr/lib/postgresql/15/bin}"
PIDS="$CLUSTER_DIR/pids"
LOGS="$CLUSTER_DIR/logs"
GRACE="${ARGUSIC_CLUSTER_STOP_GRACE:-30}"
START_TIMEOUT="${ARGUSIC_CLUSTER_START_TIMEOUT:-240}"
BUCKET=argusic
ATTEMPT_HOSTS=(attempts-1 attempts-2)
WORKER_HOSTS=("${ATTEMPT_HOSTS[@]}" warehouse)
# Start order; stop goes in three waves: workers, then Airflow's services, then the stores.
INFRA=(postgres redis s3)
SERVICES=(api-server scheduler dag-processor triggerer)
WORKERS=(worker-attempts-1 worker-attempts-2 worker-warehouse build-worker)
COMPONENTS=("${INFRA[@]}" "${SERVICES[@]}" "${WORKERS[@]}")

die() { echo "cluster: $*" >&2; exit 1; }
log() { echo "cluster: $*" >&2; }

host_of() {  # component -> the "host" it runs on
  case "$1" in
    worker-attempts-*) echo "${1#worker-}" ;;
    worker-warehouse | build-worker) echo warehouse ;;
    *) echo control ;;
  esac
}

# ---------------------------------------------------------------------------------------------------
# Processes: recorded PIDs, sessions, groups.

pid_of() { [[ -f "$PIDS/$1.pid" ]] && cat "$PIDS/$1.pid" || true; }

session_pids() {  # every process whose session id is $1 (the session setsid made for a component)
  ps -eo pid=,sid= | awk -v s="$1" '$2 == s { print $1 }'
}

alive() {  # component: its recorded PID is alive and still leads the session we made for it
  local pid
  pid="$(pid_of "$1")"
  [[ -n "$pid" ]] || return 1
  [[ "$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')" == "$pid" ]]
}

session_rss_kib() {  # total resident memory of a session
  local pids
  pids="$(session_pids "$1" | paste -sd, -)"
  [[ -n "$pids" ]] || { echo 0; return; }
  ps -o rss= -p "$pids" | awk '{ s += $1 } END { print s + 0 }'
}

stop_components() {  # signal components... : signal every group, wait for their sessions, KILL the rest
  local signal="$1" name pid deadline left
  shift
  local pids=()
  for name in "$@"; do
    pid="$(pid_of "$name")"
    [[ -n "$pid" ]] || continue
    if [[ -n "$(session_pids "$pid")" ]]; then
      kill "-$signal" -- "-$pid" 2>/dev/null || kill "-$signal" "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
    rm -f "$PIDS/$name.pid"
  done
  [[ ${#pids[@]} -gt 0 ]] || return 0
  deadline=$((SECONDS + GRACE))
  while ((SECONDS < deadline)); do
    left=0
    for pid in "${pids[@]}"; do [[ -n "$(session_pids "$pid")" ]] && left=1; done
    [[ $left == 0 ]] && return 0
    sleep 0.5
  done
  for pid in "${pids[@]}"; do
    local stray
    stray="$(session_pids "$pid")"
    if [[ -n "$stray" ]]; then
      log "SIGKILL to what is left of session $pid after ${GRACE}s: $(echo "$stray" | paste -sd' ' -)"
      # shellcheck disable=SC2086
      kill -KILL $stray 2>/dev/null || true
    fi
  done
}

kill_session() {  # component: SIGKILL its whole session at once, as a host that loses power
  local name="$1" pid stray
  pid="$(pid_of "$name")"
  [[ -n "$pid" ]] || return 0
  stray="$(session_pids "$pid")"
  # shellcheck disable=SC2086
  [[ -z "$stray" ]] || kill -KILL $stray 2>/dev/null || true
  for _ in $(seq 1 40); do
    [[ -z "$(session_pids "$pid")" ]] && break
    sleep 0.25
  done
  rm -f "$PIDS/$name.pid"
}

# ---------------------------------------------------------------------------------------------------
# Settings: ports and secrets chosen once per start / once per cluster folder.

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

choose_settings() {  # at start: from the environment or the defaults, recorded in cluster.env
  API_PORT="${ARGUSIC_CLUSTER_API_PORT:-8090}"
  PG_PORT="${ARGUSIC_CLUSTER_PG_PORT:-15432}"
  REDIS_PORT="${ARGUSIC_CLUSTER_REDIS_PORT:-16379}"
  S3_PORT="${ARGUSIC_CLUSTER_S3_PORT:-15000}"
  DAGS_FOLDER="${ARGUSIC_CLUSTER_DAGS_FOLDER:-$ROOT/dags}"
  local var port
  for var in API_PORT PG_PORT REDIS_PORT S3_PORT; do
    port="${!var}"
    [[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "$var=$port is not a TCP port"
    port_free "$port" || die "port $port ($var) is taken on 127.0.0.1: set ARGUSIC_CLUSTER_$var"
  done
  [[ -d "$DAGS_FOLDER" ]] || die "no DAGs folder $DAGS_FOLDER"
  {
    echo "API_PORT=$API_PORT"
    echo "PG_PORT=$PG_PORT"
    echo "REDIS_PORT=$REDIS_PORT"
    echo "S3_PORT=$S3_PORT"
    printf 'DAGS_FOLDER=%q\n' "$DAGS_FOLDER"
  } >"$CLUSTER_DIR/cluster.env"
}

load_settings() {
  [[ -f "$CLUSTER_DIR/cluster.env" ]] || die "no cluster was started from $CLUSTER_DIR (no cluster.env)"
  # shellcheck disable=SC1091
  source "$CLUSTER_DIR/cluster.env"
}

ensure_secrets() {  # generated once per cluster folder, mode 600, never on a command line
  local file="$CLUSTER_DIR/secrets.env"
  if [[ ! -f "$file" ]]; then
    (
      umask 077
      "$PY" - >"$file.tmp" <<'EOF'
import base64, secrets
token = secrets.token_urlsafe
print(f"PG_PASSWORD={token(24)}")
print(f"REDIS_PASSWORD={token(24)}")
print(f"JWT_SECRET={token(48)}")
print(f"API_SECRET_KEY={token(48)}")
print(f"FERNET_KEY={base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()}")
print(f"S3_ACCESS_KEY=argusic{secrets.token_hex(6)}")
print(f"S3_SECRET_KEY={token(24)}")
print(f"INSTALLATION=argusic-cluster-{secrets.token_hex(4)}")
EOF
      mv "$file.tmp" "$file"
    )
  fi
  chmod 600 "$file"
  # shellcheck disable=SC1090
  source "$file"
}

# ---------------------------------------------------------------------------------------------------
# Environment of the Airflow processes: scripts/airflow_env.sh's settings, with the cluster's
# executor, database, broker, secrets and object store, and the host's own folders.

airflow_common_env() {
  export AIRFLOW__CORE__EXECUTOR=CeleryExecutor
  export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="postgresql+psycopg2://airflow:$PG_PASSWORD@127.0.0.1:$PG_PORT/airflow"
  export AIRFLOW__CELERY__BROKER_URL="redis://:$REDIS_PASSWORD@127.0.0.1:$REDIS_PORT/0"
  export AIRFLOW__CELERY__RESULT_BACKEND="db+postgresql+psycopg2://airflow:$PG_PASSWORD@127.0.0.1:$PG_PORT/airflow"
  # Airflow's default, made explicit: a message a lost worker had taken is redelivered after this
  # long; the scheduler notices the lost task itself much sooner (task instance heartbeat timeout)
  # and retries it, and Airflow refuses to run a task instance that is no longer queued.
  export AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT=86400
  # A lost worker's running tasks are failed (then retried) once they miss heartbeats this long:
  # Airflow's 300 s by default; 90 s here, still well above a loaded task's heartbeat gaps.
  export AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT="${AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT:-90}"
  # A restarted scheduler checks heartbeats only of the task instances it queued itself, and adopts
  # those a dead scheduler queued every this many seconds (Airflow's 300 s by default): measured, a
  # worker lost just before a scheduler restart had its tasks retried 5 min later; 60 s here.
  export AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL="${AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL:-60}"
  export AIRFLOW__CORE__DAGS_FOLDER="$DAGS_FOLDER"
  export AIRFLOW_UI_HOST=127.0.0.1 AIRFLOW_UI_PORT="$API_PORT"
  export AIRFLOW__API__HOST=127.0.0.1 AIRFLOW__API__PORT="$API_PORT"
  export AIRFLOW__API__BASE_URL="http://127.0.0.1:$API_PORT"
  export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$API_PORT/execution/"
  # One JWT secret, API secret key and Fernet key for every process: the scheduler signs the
  # execution tokens the api-server checks, and connections are encrypted with the same key.
  export AIRFLOW__API_AUTH__JWT_SECRET="$JWT_SECRET"
  export AIRFLOW__API__SECRET_KEY="$API_SECRET_KEY"
  export AIRFLOW__CORE__FERNET_KEY="$FERNET_KEY"
  export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=admin:admin
  export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$CLUSTER_DIR/simple_auth_manager_passwords.json.generated"
  export AIRFLOW__CORE__HOSTNAME_CALLABLE=argusic.ops.cluster_host.hostname
  # Sized for a cycle's fan-out (11,007 mapped attempts per agent): the scheduler queues this many
  # task instances at once; the workers' concurrency bounds what actually runs.
  export AIRFLOW__CORE__MAX_MAP_LENGTH=16384
  export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-64}"
  export AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG="${AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG:-64}"
  # Task logs: written on the worker's host, uploaded to the object store when the task ends; the
  # api-server reads them from there (no worker log server listens anywhere).
  export AIRFLOW__LOGGING__REMOTE_LOGGING=True
  export AIRFLOW__LOGGING__REMOTE_BASE_LOG_FOLDER="s3://$BUCKET/logs"
  export AIRFLOW__LOGGING__REMOTE_LOG_CONN_ID=argusic_object_store
  AIRFLOW_CONN_ARGUSIC_OBJECT_STORE="$(printf '{"conn_type": "aws", "login": "%s", "password": "%s", "extra": {"endpoint_url": "http://127.0.0.1:%s", "region_name": "us-east-1"}}' \
    "$S3_ACCESS_KEY" "$S3_SECRET_KEY" "$S3_PORT")"
  export AIRFLOW_CONN_ARGUSIC_OBJECT_STORE
  export AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
  export AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY"
  export AWS_DEFAULT_REGION=us-east-1
  export ARGUSIC_RUNS_URL="s3://$BUCKET/runs"
  export ARGUSIC_EVIDENCE_URL="s3://$BUCKET/evidence"
  export ARGUSIC_INSTALLATION="$INSTALLATION"
  export ARGUSIC_HOME="$ROOT"
}

host_env() {  # host: this host's own folders (never shared), then airflow_env.sh for the rest
  local host="$1" dir="$CLUSTER_DIR/hosts/$1"
  airflow_common_env
  export ARGUSIC_HOSTNAME="$host"
  export AIRFLOW_HOME="$dir/airflow"
  export AIRFLOW__LOGGING__BASE_LOG_FOLDER="$dir/airflow/logs"
  export AIRFLOW__CORE__PLUGINS_FOLDER="$dir/airflow/plugins"
  export ARGUSIC_RUNS_DIR="$dir/runs" ARGUSIC_SCRATCH_DIR="$dir/scratch" TMPDIR="$dir/tmp"
  # Each host mirrors the repositories it runs and compiles its own masking rules. (The demo forge,
  # ARGUSIC_FORGE_DIR, stays where the checkout keeps it: it stands in for the public forges every
  # host can reach; a catalogue of git:// or https:// URLs needs nothing shared.)
  export ARGUSIC_MIRROR_DIR="$dir/mirror" ARGUSIC_CACHE_DIR="$dir/cache"
  unset ARGUSIC_WAREHOUSE ARGUSIC_PUBLISH_DIR ARGUSIC_BUILD_WORKER
  if [[ "$host" == warehouse ]]; then
    export ARGUSIC_WAREHOUSE="$dir/warehouse/argusic.duckdb"
    export ARGUSIC_PUBLISH_DIR="$dir/published"
    export ARGUSIC_BUILD_WORKER="$dir/run/build.sock"
  fi
  mkdir -p "$AIRFLOW__LOGGING__BASE_LOG_FOLDER" "$AIRFLOW__CORE__PLUGINS_FOLDER" "$ARGUSIC_RUNS_DIR" \
    "$ARGUSIC_SCRATCH_DIR" "$TMPDIR" "$ARGUSIC_MIRROR_DIR" "$ARGUSIC_CACHE_DIR"
  [[ "$host" != warehouse ]] || mkdir -p "$dir/warehouse" "$dir/published" "$dir/run"
  # shellcheck source=scripts/airflow_env.sh
  source "$ROOT/scripts/airflow_env.sh"
  export PATH="$BIN:$PATH"
}

launch() {  # component command... : in its host's environment, own session, PID recorded
  local name="$1" host
  shift
  host="$(host_of "$name")"
  (
    case "$name" in
      postgres | redis | s3) ;;  # the stores need none of Airflow's settings (nor its secrets)
      *) host_env "$host" ;;
    esac
    cd "$CLUSTER_DIR/hosts/$host" 2>/dev/null || cd "$CLUSTER_DIR"
    # Logs are appended across restarts: readiness is read only from what this start writes.
    stat -c %s "$LOGS/$name.log" 2>/dev/null >"$PIDS/$name.logstart" || echo 0 >"$PIDS/$name.logstart"
    setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
    echo $! >"$PIDS/$name.pid"
  )
}

# ---------------------------------------------------------------------------------------------------
# Components.

apt_install() {  # Debian package: installed when missing, as scripts/setup_docker.sh does for docker
  log "installing Debian's $1"
  [[ $EUID -eq 0 ]] || die "$1 is missing and only root can install it: apt-get install $1"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$1" >/dev/null
}

pg_user() {
  if [[ $EUID -eq 0 ]]; then echo "${ARGUSIC_CLUSTER_PG_USER:-postgres}"; else id -un; fi
}

as_pg() {  # run as the Postgres user (root cannot run postgres); setpriv execs, no extra process
  if [[ $EUID -eq 0 ]]; then
    setpriv --reuid="$(pg_user)" --regid="$(id -g "$(pg_user)")" --clear-groups -- "$@"
  else
    "$@"
  fi
}

start_postgres() {
  local dir="$CLUSTER_DIR/postgres"
  [[ -x "$PG_BIN/postgres" ]] || apt_install postgresql-15
  [[ -x "$PG_BIN/postgres" ]] || die "no PostgreSQL 15 in $PG_BIN (ARGUSIC_CLUSTER_PG_BIN)"
  mkdir -p "$dir/run"
  [[ $EUID -ne 0 ]] || chown -R "$(pg_user):" "$dir"
  chmod 700 "$dir"
  as_pg test -w "$dir" ||
    die "user $(pg_user) cannot write $dir (a parent folder not traversable?): choose ARGUSIC_CLUSTER_DIR elsewhere"
  if [[ ! -s "$dir/data/PG_VERSION" ]]; then
    rm -rf "$dir/data"
    (umask 077 && printf '%s\n' "$PG_PASSWORD" >"$dir/pwfile")
    [[ $EUID -ne 0 ]] || chown "$(pg_user):" "$dir/pwfile"
    (cd "$dir" && as_pg "$PG_BIN/initdb" -D "$dir/data" -U airflow --pwfile="$dir/pwfile" \
      --auth-host=scram-sha-256 --auth-local=peer -E UTF8 --locale=C.UTF-8) >"$LOGS/postgres-initdb.log" 2>&1 ||
      { rm -f "$dir/pwfile"; tail -20 "$LOGS/postgres-initdb.log" >&2; die "initdb failed"; }
    rm -f "$dir/pwfile"
  fi
  local as=()
  [[ $EUID -ne 0 ]] || as=(setpriv --reuid="$(pg_user)" --regid="$(id -g "$(pg_user)")" --clear-groups --)
  launch postgres "${as[@]}" "$PG_BIN/postgres" -D "$dir/data" -c listen_addresses=127.0.0.1 \
    -c port="$PG_PORT" -c unix_socket_directories="$dir/run" -c max_connections=300
  for _ in $(seq 1 60); do
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    sleep 0.5
  done
  "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || { tail -20 "$LOGS/postgres.log" >&2; die "Postgres did not start"; }
  local url="postgresql://airflow@127.0.0.1:$PG_PORT/postgres"
  if [[ "$(PGPASSWORD="$PG_PASSWORD" psql -Atq "$url" -c "SELECT 1 FROM pg_database WHERE datname = 'airflow'")" != 1 ]]; then
    PGPASSWORD="$PG_PASSWORD" psql -q "$url" -c "CREATE DATABASE airflow" >/dev/null
  fi
}

start_redis() {
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  local dir="$CLUSTER_DIR/redis"
  mkdir -p "$dir"
  # The password in a file (mode 600), not on a command line; no persistence: the broker's queue is
  # rebuilt by the scheduler from the metadata DB (queued task instances are re-sent after a timeout).
  (
    umask 077
    printf 'bind 127.0.0.1\nport %s\nrequirepass %s\nsave ""\nappendonly no\ndir %s\nprotected-mode yes\n' \
      "$REDIS_PORT" "$REDIS_PASSWORD" "$dir" >"$dir/redis.conf"
  )
  launch redis redis-server "$dir/redis.conf"
  for _ in $(seq 1 40); do
    [[ "$(REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]] && return 0
    sleep 0.25
  done
  tail -20 "$LOGS/redis.log" >&2
  die "Redis did not answer on 127.0.0.1:$REDIS_PORT"
}

start_s3() {
  launch s3 "$BIN/moto_server" -H 127.0.0.1 -p "$S3_PORT"
  AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT" AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
    AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" AWS_DEFAULT_REGION=us-east-1 "$PY" - "$BUCKET" <<'EOF' ||
import sys, time
import boto3, botocore.exceptions
s3 = boto3.client("s3")
for _ in range(120):
    try:
        s3.create_bucket(Bucket=sys.argv[1])
        break
    except botocore.exceptions.EndpointConnectionError:
        time.sleep(0.25)
else:
    sys.exit("moto's S3 server did not answer")
EOF
    { tail -20 "$LOGS/s3.log" >&2; die "the object store did not start"; }
}

compile_bytecode() {
  # Compiled bytecode for the project's own modules and DAG files: `make install` compiles the
  # installed packages, not the project's source tree, and with PYTHONDONTWRITEBYTECODE set every task
  # process would compile argusic again (docs/airflow.md, "Where the time goes"). A few seconds.
  "$PY" -m compileall -q -j 0 "$ROOT/plugins/argusic" "$ROOT/dags" >"$LOGS/compileall.log" 2>&1 || true
}

migrate() {
  (
    host_env control
    airflow db migrate >"$LOGS/db-migrate.log" 2>&1 || { tail -30 "$LOGS/db-migrate.log" >&2; exit 1; }
    # DuckDB has one writer: ingest, build and publish of every cycle run share one slot.
    airflow pools set argusic_warehouse 1 "DuckDB single writer: ingest, build, publish" >/dev/null
  ) || die "airflow db migrate failed; see $LOGS/db-migrate.log"
}

attempt_concurrency() {
  if [[ -n "${ARGUSIC_CLUSTER_ATTEMPT_CONCURRENCY:-}" ]]; then
    echo "$ARGUSIC_CLUSTER_ATTEMPT_CONCURRENCY"
  else
    PYTHONPATH="$ROOT/plugins" "$PY" -m argusic.ops.cluster_host concurrency
  fi
}

start_worker() {  # host
  local host="$1"
  case "$host" in
    attempts-*)
      # The worker imports the attempt path once before Celery forks its pool, and each task is a
      # fork of a pool process: every attempt task starts with it loaded (argusic.orchestration.preload).
      launch "worker-$host" env ARGUSIC_PRELOAD_TASK_MODULES=1 airflow celery worker --queues argusic_attempts \
        --concurrency "$(attempt_concurrency)" --celery-hostname "$host@$INSTALLATION" --skip-serve-logs
      ;;
    warehouse)
      launch worker-warehouse airflow celery worker --queues default,argusic_warehouse \
        --concurrency "${ARGUSIC_CLUSTER_WAREHOUSE_CONCURRENCY:-2}" --celery-hostname "warehouse@$INSTALLATION" \
        --skip-serve-logs
      ;;
    *) die "no worker host $host: one of ${WORKER_HOSTS[*]}" ;;
  esac
}

start_build_worker() {
  # It exits cleanly after 500 requests (bounded memory): this loop is its supervisor.
  local sock="$CLUSTER_DIR/hosts/warehouse/run/build.sock"
  ((${#sock} < 100)) || die "the build worker's socket path is too long for a Unix socket: $sock"
  rm -f "$sock"  # left by a killed build worker; readiness is the new socket
  launch build-worker bash -c 'while :; do argusic build-worker --socket "$0"; sleep 1; done' "$sock"
}

worker_ready() {  # component: Celery logs "<node> ready." once it consumes (since this start)
  local name="$1" from
  alive "$name" || return 1
  from="$(cat "$PIDS/$name.logstart" 2>/dev/null || echo 0)"
  tail -c "+$((from + 1))" "$LOGS/$name.log" 2>/dev/null | grep -q "@$INSTALLATION ready\."
}

health() { curl -fsS --max-time 5 "http://127.0.0.1:$API_PORT/api/v2/monitor/health" 2>/dev/null; }

services_healthy() {  # metadatabase, scheduler, triggerer and dag processor all "healthy"
  local body
  body="$(health)" || return 1
  [[ "$(grep -o '"status":"healthy"' <<<"${body// /}" | wc -l)" -ge 4 ]]
}

scheduler_beat_since() {  # epoch: the health check shows a scheduler heartbeat after it
  health | "$PY" -c '
import datetime, json, sys
beat = json.load(sys.stdin)["scheduler"]["latest_scheduler_heartbeat"]
sys.exit(0 if beat and datetime.datetime.fromisoformat(beat).timestamp() >= float(sys.argv[1]) else 1)
' "$1" 2>/dev/null
}

wait_for() {  # description check-command... : until it succeeds, a component dies or time runs out
  local what="$1" deadline=$((SECONDS + START_TIMEOUT)) name
  shift
  while ((SECONDS < deadline)); do
    "$@" && return 0
    for name in "${COMPONENTS[@]}"; do
      if [[ -f "$PIDS/$name.pid" ]] && ! alive "$name"; then
        log "$name exited while waiting for $what; the end of $LOGS/$name.log:"
        tail -25 "$LOGS/$name.log" >&2 || true
        return 1
      fi
    done
    sleep 1
  done
  log "timed out after ${START_TIMEOUT}s waiting for $what"
  return 1
}

all_workers_ready() {
  local name
  for name in worker-attempts-1 worker-attempts-2 worker-warehouse; do worker_ready "$name" || return 1; done
  [[ -S "$CLUSTER_DIR/hosts/warehouse/run/build.sock" ]]
}

print_summary() {
  echo "Airflow UI: http://127.0.0.1:$API_PORT   user admin, password in $AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
  echo "object store: http://127.0.0.1:$S3_PORT  bucket $BUCKET (runs/, evidence/, logs/); keys in $CLUSTER_DIR/secrets.env"
  echo "Postgres 127.0.0.1:$PG_PORT  Redis 127.0.0.1:$REDIS_PORT  installation $INSTALLATION"
  echo "logs: $LOGS   hosts: $CLUSTER_DIR/hosts/   stop: bash scripts/cluster.sh stop"
}

# ---------------------------------------------------------------------------------------------------
# Subcommands.

cmd_start() {
  mkdir -p "$CLUSTER_DIR" "$PIDS" "$LOGS"
  local name running=() dead=()
  for name in "${COMPONENTS[@]}"; do
    if alive "$name"; then running+=("$name"); elif [[ -f "$PIDS/$name.pid" ]]; then dead+=("$name"); fi
  done
  if [[ ${#running[@]} -eq ${#COMPONENTS[@]} ]]; then
    load_settings
    ensure_secrets
    echo "the cluster in $CLUSTER_DIR is already running"
    AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$CLUSTER_DIR/simple_auth_manager_passwords.json.generated"
    print_summary
    return 0
  fi
  if [[ ${#running[@]} -gt 0 ]]; then
    die "the cluster in $CLUSTER_DIR is partly running (${running[*]}; not: ${dead[*]:-none}): stop it first"
  fi
  rm -f "$PIDS"/*.pid "$PIDS"/*.logstart
  local started=$SECONDS
  choose_settings
  ensure_secrets
  local host
  for host in control "${WORKER_HOSTS[@]}"; do mkdir -p "$CLUSTER_DIR/hosts/$host"; done
  START_OK=0
  trap '[[ $START_OK == 1 ]] || { log "start failed: stopping what was started"; stop_all >/dev/null 2>&1 || true; }' EXIT
  start_postgres
  start_redis
  start_s3
  compile_bytecode
  migrate
  launch api-server airflow api-server --host 127.0.0.1 --port "$API_PORT" --workers 1
  launch scheduler airflow scheduler --skip-serve-logs
  launch dag-processor airflow dag-processor
  launch triggerer airflow triggerer --skip-serve-logs
  for host in "${WORKER_HOSTS[@]}"; do start_worker "$host"; done
  start_build_worker
  wait_for "the scheduler, dag processor and triggerer (api-server health)" services_healthy ||
    die "the services did not become healthy; logs in $LOGS"
  wait_for "the Celery workers and the build worker" all_workers_ready || die "the workers did not start; logs in $LOGS"
  START_OK=1
  AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$CLUSTER_DIR/simple_auth_manager_passwords.json.generated"
  echo "cluster started in $((SECONDS - started)) s"
  print_summary
}

stop_all() {
  local t=$SECONDS
  stop_components TERM "${WORKERS[@]}"
  log "workers stopped in $((SECONDS - t)) s"
  t=$SECONDS
  stop_components TERM "${SERVICES[@]}"
  log "Airflow's services stopped in $((SECONDS - t)) s"
  t=$SECONDS
  stop_components TERM s3 redis
  # Postgres: SIGINT is its fast shutdown (SIGTERM waits for every client to disconnect).
  stop_components INT postgres
  log "the stores stopped in $((SECONDS - t)) s"
}

cmd_stop() {
  [[ -d "$PIDS" ]] || { echo "nothing recorded in $CLUSTER_DIR"; return 0; }
  stop_all
  echo "stopped"
}

cmd_status() {
  local name pid state rss total=0 down=0
  printf '%-18s %-11s %-8s %-6s %s\n' COMPONENT HOST PID STATE RSS_MIB
  for name in "${COMPONENTS[@]}"; do
    pid="$(pid_of "$name")"
    if alive "$name"; then
      state=alive
      rss="$(session_rss_kib "$pid")"
      total=$((total + rss))
    else
      state="${pid:+dead}"
      state="${state:-down}"
      rss=0
      down=1
    fi
    printf '%-18s %-11s %-8s %-6s %s\n' "$name" "$(host_of "$name")" "${pid:--}" "$state" "$((rss / 1024))"
  done
  echo "total RSS: $((total / 1024)) MiB"
  [[ -f "$CLUSTER_DIR/cluster.env" ]] && { load_settings; echo "UI: http://127.0.0.1:$API_PORT"; }
  return $((down * 3))
}

cmd_kill_worker() {
  local host="${1:-}"
  [[ " ${WORKER_HOSTS[*]} " == *" $host "* ]] || die "kill-worker NAME: one of ${WORKER_HOSTS[*]}"
  alive "worker-$host" || die "worker $host is not running"
  kill_session "worker-$host"
  if [[ "$host" == warehouse ]] && alive build-worker; then kill_session build-worker; fi
  echo "killed worker $host (SIGKILL to its session)"
}

cmd_start_worker() {
  local host="${1:-}"
  [[ " ${WORKER_HOSTS[*]} " == *" $host "* ]] || die "start-worker NAME: one of ${WORKER_HOSTS[*]}"
  load_settings
  ensure_secrets
  alive "worker-$host" && { echo "worker $host is already running"; return 0; }
  start_worker "$host"
  if [[ "$host" == warehouse ]] && ! alive build-worker; then start_build_worker; fi
  wait_for "worker $host" worker_ready "worker-$host" || die "worker $host did not start"
  if [[ "$host" == warehouse ]]; then
    wait_for "the build worker" test -S "$CLUSTER_DIR/hosts/warehouse/run/build.sock" ||
      die "the build worker did not start"
  fi
  echo "worker $host started"
}

cmd_restart_scheduler() {
  load_settings
  ensure_secrets
  local since
  if [[ "${1:-}" == "--kill" ]]; then kill_session scheduler; else stop_components TERM scheduler; fi
  since="$(date +%s)"
  launch scheduler airflow scheduler --skip-serve-logs
  wait_for "the scheduler" scheduler_beat_since "$since" || die "the scheduler did not come back"
  echo "scheduler restarted (PID $(pid_of scheduler))"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill-worker) cmd_kill_worker "${2:-}" ;;
  start-worker) cmd_start_worker "${2:-}" ;;
  restart-scheduler) cmd_restart_scheduler "${2:-}" ;;
  *)
    sed -n '8,14p' "$0" >&2
    exit 2
    ;;
esac
