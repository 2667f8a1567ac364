#!/usr/bin/env bash
# The routing layer for per-attempt model keys: PostgreSQL (Debian's packages) + LiteLLM's proxy,
# both on 127.0.0.1 only, in a private state folder.
#
#   scripts/start_litellm.sh install   venv .venv-litellm (litellm[proxy] + prisma) and postgresql
#   scripts/start_litellm.sh start     install if needed, start Postgres then the proxy, print URL
#   scripts/start_litellm.sh stop      stop the proxy (by its PID) and Postgres (pg_ctl, its PID)
#   scripts/start_litellm.sh status    what runs, by PID
#
# Env: ARGUSIC_LITELLM_STATE (default /tmp/argusic-litellm) holds pg data, logs, PID files and
#      env (0600: LITELLM_BASE_URL, LITELLM_MASTER_KEY, DATABASE_URL — admin values, never a
#      per-attempt key); ARGUSIC_LITELLM_PORT / ARGUSIC_LITELLM_PG_PORT (default: free ports);
#      LITELLM_MASTER_KEY (default: generated); ARGUSIC_LITELLM_START_TIMEOUT (s, default 180).
#
# Separate virtualenv: litellm[proxy] pins rich<14 and websockets<16, which conflict with the
# main venv's pins (rich 15, websockets 17 via Airflow).
#
# Known limit on machines without outbound internet: LiteLLM's database layer is Prisma Client
# Python, whose query engine is a native binary that Prisma downloads from its own host at first
# use; no PyPI/npm/Debian package ships it. Without it the proxy cannot keep virtual keys and
# `start` fails with the Prisma error (see docs/keys.md). PRISMA_QUERY_ENGINE_BINARY and
# PRISMA_SCHEMA_ENGINE_BINARY, when set to engine binaries of the expected version, are used.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ARGUSIC_LITELLM_VENV:-$ROOT/.venv-litellm}"
STATE="${ARGUSIC_LITELLM_STATE:-/tmp/argusic-litellm}"
CONFIG="${ARGUSIC_LITELLM_CONFIG:-$ROOT/scripts/litellm_config.yaml}"
LITELLM_VERSION="1.108.7"
PRISMA_PY_VERSION="0.15.0"
START_TIMEOUT="${ARGUSIC_LITELLM_START_TIMEOUT:-180}"

log() { echo "start_litellm: $*" >&2; }

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

do_install() {
  if ! pg_bin >/dev/null; then
    log "installing postgresql (Debian)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  if [ ! -x "$VENV/bin/litellm" ] || ! "$VENV/bin/python" -c 'import prisma' 2>/dev/null; then
    log "creating $VENV (litellm[proxy]==$LITELLM_VERSION prisma==$PRISMA_PY_VERSION)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check \
      "litellm[proxy]==$LITELLM_VERSION" "prisma==$PRISMA_PY_VERSION" 2>&1 | grep -v '^WARNING: Location' || true
  fi
  "$VENV/bin/litellm" --version >/dev/null 2>&1 || { log "litellm not runnable in $VENV"; exit 1; }
}

start_pg() {
  local bin; bin="$(pg_bin)"
  # 0711: the postgres user may traverse to its data folder but not list the state folder.
  mkdir -p "$STATE"
  chmod 711 "$STATE"
  if [ -f "$STATE/pg_port" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$STATE/pg" status >/dev/null 2>&1; then
    return 0
  fi
  if [ ! -f "$STATE/pg/PG_VERSION" ]; then
    mkdir -p "$STATE/pg"
    chown postgres:postgres "$STATE/pg"
    chmod 700 "$STATE/pg"
    runuser -u postgres -- "$bin/initdb" -D "$STATE/pg" -U postgres -A trust --no-sync \
      >"$STATE/initdb.log" 2>&1 || { log "initdb failed:"; tail -n 5 "$STATE/initdb.log" >&2; exit 1; }
  fi
  local PG_PORT="${ARGUSIC_LITELLM_PG_PORT:-$(free_port)}"
  runuser -u postgres -- "$bin/pg_ctl" -D "$STATE/pg" -l "$STATE/pg/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $STATE/pg -c fsync=off" start >/dev/null
  head -1 "$STATE/pg/postmaster.pid" >"$STATE/postgres.pid"
  runuser -u postgres -- "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname='litellm'" | grep -q 1 \
    || runuser -u postgres -- "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres litellm
  echo "$PG_PORT" >"$STATE/pg_port"
}

do_start() {
  do_install
  if alive "$STATE/litellm.pid"; then
    log "already running (PID $(cat "$STATE/litellm.pid"))"
    grep '^LITELLM_BASE_URL=' "$STATE/env" | cut -d= -f2-
    return 0
  fi
  start_pg
  local pg_port port master url
  pg_port="$(cat "$STATE/pg_port")"
  port="${ARGUSIC_LITELLM_PORT:-$(free_port)}"
  master="${LITELLM_MASTER_KEY:-sk-master-$(python3 -c 'import secrets; print(secrets.token_hex(16))')}"
  url="http://127.0.0.1:$port"
  (umask 077; cat >"$STATE/env" <<EOF
LITELLM_BASE_URL=$url
LITELLM_MASTER_KEY=$master
DATABASE_URL=postgresql://postgres@127.0.0.1:$pg_port/litellm
EOF
  )
  log "starting proxy on $url (logs: $STATE/litellm.log)"
  (
    cd "$STATE"
    set -a; . "$STATE/env"; set +a
    export LITELLM_OFFLINE_MODE=true LITELLM_LOCAL_MODEL_COST_MAP=True PRISMA_OFFLINE_MODE=true \
      LITELLM_TELEMETRY=False \
      PRISMA_HOME_DIR="${PRISMA_HOME_DIR:-$VENV/prisma-home}" ARGUSIC_UPSTREAM_KEY=unused \
      PATH="$VENV/bin:$PATH"
    exec setsid "$VENV/bin/litellm" --config "$CONFIG" --host 127.0.0.1 --port "$port" \
      --num_workers 1 >"$STATE/litellm.log" 2>&1 </dev/null
  ) &
  echo $! >"$STATE/litellm.pid"
  local waited=0
  until curl -fsS -m 2 "$url/health/readiness" 2>/dev/null | grep -q '"db": *"connected"'; do
    if ! alive "$STATE/litellm.pid"; then
      log "proxy exited; last lines of $STATE/litellm.log:"; tail -n 25 "$STATE/litellm.log" >&2
      do_stop
      exit 1
    fi
    if [ "$waited" -ge "$START_TIMEOUT" ]; then
      log "proxy not ready with a database after ${START_TIMEOUT}s; last log lines:"
      tail -n 25 "$STATE/litellm.log" >&2
      do_stop
      exit 1
    fi
    sleep 2; waited=$((waited + 2))
  done
  echo "$url"
}

do_stop() {
  if alive "$STATE/litellm.pid"; then
    local pid; pid="$(cat "$STATE/litellm.pid")"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    log "proxy (PID $pid) stopped"
  fi
  rm -f "$STATE/litellm.pid"
  if [ -f "$STATE/pg/postmaster.pid" ]; then
    runuser -u postgres -- "$(pg_bin)/pg_ctl" -D "$STATE/pg" -m fast -w stop >/dev/null 2>&1 || true
    log "postgres stopped"
  fi
  rm -f "$STATE/postgres.pid"
}

do_status() {
  alive "$STATE/litellm.pid" && echo "litellm: running, PID $(cat "$STATE/litellm.pid")" || echo "litellm: stopped"
  [ -f "$STATE/pg/postmaster.pid" ] && echo "postgres: running, PID $(head -1 "$STATE/pg/postmaster.pid")" || echo "postgres: stopped"
}

case "${1:-start}" in
  install) do_install ;;
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
