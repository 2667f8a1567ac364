# Airflow settings shared by scripts/airflow_ui.sh and tests/orchestration/test_dags.py. Source it:
#   source scripts/airflow_env.sh
# Every value can be overridden by exporting it before sourcing (the tests set AIRFLOW_HOME and the
# ARGUSIC_* folders to temporary directories).

_ARGUSIC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

export AIRFLOW_HOME="${AIRFLOW_HOME:-$_ARGUSIC_ROOT/.airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="${AIRFLOW__CORE__DAGS_FOLDER:-$_ARGUSIC_ROOT/dags}"
# Airflow's plugins folder is NOT plugins/: Airflow 3.3 executes every *.py under its plugins folder as
# a top-level module (plugins_manager: SourceFileLoader(path.stem, ...)), which would run the demo
# projects' scripts (cloudsync-paid/sync.py calls sys.exit and kills the process) and register
# argusic's modules a second time under bare names ("warehouse", "record", ...). The argusic package
# is importable through PYTHONPATH below (and `pip install -e .`). Airflow plugins of our own, if any,
# go in the folder below. (A plugins/.airflowignore with `argusic/` would allow plugins/ again.)
export AIRFLOW__CORE__PLUGINS_FOLDER="${AIRFLOW__CORE__PLUGINS_FOLDER:-$AIRFLOW_HOME/plugins}"
export AIRFLOW__CORE__LOAD_EXAMPLES="${AIRFLOW__CORE__LOAD_EXAMPLES:-False}"
export AIRFLOW__CORE__EXECUTOR="${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}"
# Two cores: a handful of workers, not the default 32 (~1.2 GiB). Each attempt holds one Docker
# container with 1 CPU (plugins/argusic/orchestrator.toml), so this also bounds concurrent attempts.
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-4}"
export AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG="${AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG:-4}"
# Fan-out: one cycle run maps (agents x projects x attempts) run_attempt tasks. The default cap of
# 1,024 is far below a 3,669-project pool x 3 attempts (11,007 per agent): see docs/airflow.md.
export AIRFLOW__CORE__MAX_MAP_LENGTH="${AIRFLOW__CORE__MAX_MAP_LENGTH:-16384}"
# The DAG processor re-parses every DAG file this often (Airflow's default: 30 s). Parsing our ten files
# costs CPU the attempts compete for on two cores (at 30 s the DAG processor used 29 CPU-s over a
# 5-minute scripts/bench_cycle_airflow.py run); an edited DAG shows up within 2 minutes.
export AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL="${AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL:-120}"
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="${AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION:-True}"
export AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT="${AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT:-30}"
# Bind everything to loopback. The API server is the only listener: the scheduler and triggerer log
# servers (ports 8793/8794) hard-code host "" (all interfaces) in Airflow 3.3, so scripts/airflow_ui.sh
# starts the scheduler with --skip-serve-logs; the API server reads task logs from the local files.
export AIRFLOW_UI_HOST="${AIRFLOW_UI_HOST:-127.0.0.1}"
export AIRFLOW_UI_PORT="${AIRFLOW_UI_PORT:-8080}"
export AIRFLOW__API__HOST="${AIRFLOW__API__HOST:-$AIRFLOW_UI_HOST}"
export AIRFLOW__API__PORT="${AIRFLOW__API__PORT:-$AIRFLOW_UI_PORT}"
export AIRFLOW__API__BASE_URL="${AIRFLOW__API__BASE_URL:-http://$AIRFLOW_UI_HOST:$AIRFLOW_UI_PORT}"
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="${AIRFLOW__CORE__EXECUTION_API_SERVER_URL:-http://$AIRFLOW_UI_HOST:$AIRFLOW_UI_PORT/execution/}"
# The evidence viewer, served by the API server (argusic.orchestration.viewer_plugin): forms and attempt
# logs link the served copies there (docs/airflow.md, "Evidence viewer and cycle viewer").
export ARGUSIC_VIEWER_URL="${ARGUSIC_VIEWER_URL:-$AIRFLOW__API__BASE_URL/argusic}"
export AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT="${AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT:-8793}"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS:-admin:admin}"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE:-$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated}"

# The argusic package is importable from the plugins folder even without `pip install -e .`.
case ":${PYTHONPATH:-}:" in
  *":$_ARGUSIC_ROOT/plugins:"*) ;;
  *) export PYTHONPATH="$_ARGUSIC_ROOT/plugins${PYTHONPATH:+:$PYTHONPATH}" ;;
esac
export ARGUSIC_HOME="${ARGUSIC_HOME:-$_ARGUSIC_ROOT}"
unset _ARGUSIC_ROOT
