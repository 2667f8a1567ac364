#!/usr/bin/env bash
# The Airflow UI for ops, on this machine: API server (UI + REST + execution API) bound to 127.0.0.1,
# scheduler (LocalExecutor, low parallelism, no log server) and DAG processor, all with
# scripts/airflow_env.sh. Logs and PIDs go to $AIRFLOW_HOME/ui/.
#
#   bash scripts/airflow_ui.sh          # start (foreground: Ctrl-C stops every process it started)
#   bash scripts/airflow_ui.sh --detach # start in the background and return
#   bash scripts/airflow_ui.sh --stop   # stop a detached UI, by the PIDs it recorded
#
# Why not `airflow standalone`: it starts log servers on 0.0.0.0:8793/8794 (Airflow 3.3 hard-codes the
# bind host), and SIGTERM can leave its scheduler running. The triggerer runs (our DAGs defer nothing
# yet) because Airflow's health check, shown on the home page, counts it: without one it is red.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/airflow_env.sh
source "$ROOT/scripts/airflow_env.sh"
BIN="${AIRFLOW_BIN:-$ROOT/.venv/bin}"
export PATH="$BIN:$PATH"
RUN_DIR="$AIRFLOW_HOME/ui"
mkdir -p "$RUN_DIR" "$AIRFLOW__CORE__PLUGINS_FOLDER"

stop() {
  local pidfile pid
  for pidfile in "$RUN_DIR"/*.pid; do
    [[ -e "$pidfile" ]] || continue
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
      # each component runs in its own process group (setsid): stop the group, then make sure
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
    echo "$pid" >>"$RUN_DIR/stopping"
  done
  if [[ -e "$RUN_DIR/stopping" ]]; then
    for _ in $(seq 1 30); do
      local alive=0
      while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$RUN_DIR/stopping"
      [[ $alive == 0 ]] && break
      sleep 0.5
    done
    while read -r pid; do kill -KILL -- "-$pid" 2>/dev/null || true; done <"$RUN_DIR/stopping"
    rm -f "$RUN_DIR/stopping"
  fi
}

if [[ "${1:-}" == "--stop" ]]; then
  stop
  echo "stopped"
  exit 0
fi

if ls "$RUN_DIR"/*.pid >/dev/null 2>&1; then
  echo "an Airflow UI started from $AIRFLOW_HOME seems to be running; stop it: $0 --stop" >&2
  exit 1
fi

# Compiled bytecode for everything the services and tasks import: with PYTHONDONTWRITEBYTECODE set (as
# in many shells and containers) and a venv installed without it, every task process compiled Airflow,
# dbt and argusic from source again (~5 CPU-s for `import airflow.sdk` alone; docs/airflow.md, "Where
# the time goes"). Once done, this only compares timestamps (a few seconds).
SITE="$("$BIN/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$BIN/python" -m compileall -q -j 0 "$SITE" "$ROOT/plugins/argusic" "$ROOT/dags" >"$RUN_DIR/compileall.log" 2>&1 || true

airflow db migrate >"$RUN_DIR/db-migrate.log" 2>&1 || { tail -20 "$RUN_DIR/db-migrate.log" >&2; exit 1; }
# DuckDB has one writer: ingest, build and publish of every cycle run share one slot.
airflow pools set argusic_warehouse 1 "DuckDB single writer: ingest, build, publish" >/dev/null

start() {  # name, command...
  local name="$1"
  shift
  setsid "$@" >"$RUN_DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN_DIR/$name.pid"
}
# The build worker: build and publish go through one process that imported dbt and GX once and keeps
# the parsed project (a cold build task spent most of its time importing and parsing; docs/airflow.md).
# Unless ARGUSIC_BUILD_WORKER names one already; a task that finds none builds in its own process.
if [[ -z "${ARGUSIC_BUILD_WORKER:-}" ]]; then
  export ARGUSIC_BUILD_WORKER="$RUN_DIR/build/build.sock"
  start build-worker argusic build-worker --socket "$ARGUSIC_BUILD_WORKER"
fi
start api-server airflow api-server --host "$AIRFLOW__API__HOST" --port "$AIRFLOW__API__PORT" --workers 1
# The scheduler imports the attempt path once before its LocalExecutor forks the task processes
# (argusic.orchestration.preload): every attempt task starts with it loaded.
start scheduler env ARGUSIC_PRELOAD_TASK_MODULES=1 airflow scheduler --skip-serve-logs
start dag-processor airflow dag-processor
start triggerer airflow triggerer --skip-serve-logs

URL="http://$AIRFLOW__API__HOST:$AIRFLOW__API__PORT"
for _ in $(seq 1 120); do
  curl -fsS "$URL/api/v2/monitor/health" >/dev/null 2>&1 && break
  sleep 1
done
if ! curl -fsS "$URL/api/v2/monitor/health" >/dev/null 2>&1; then
  echo "the API server did not answer on $URL; see $RUN_DIR/api-server.log" >&2
  stop
  exit 1
fi
# Every component heartbeats within a few seconds of starting: wait until the health check says so.
for _ in $(seq 1 60); do
  health="$(curl -fsS "$URL/api/v2/monitor/health" 2>/dev/null || true)"
  [[ "$(grep -o '"status":"healthy"' <<<"$health" | wc -l)" -ge 4 ]] && break
  sleep 1
done
echo "Airflow UI: $URL   (user admin)"
echo "admin password: $AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
echo "logs and PIDs: $RUN_DIR   stop: bash scripts/airflow_ui.sh --stop"

if [[ "${1:-}" == "--detach" ]]; then
  exit 0
fi
trap 'stop; exit 0' INT TERM
wait
