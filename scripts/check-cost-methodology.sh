#!/usr/bin/env bash
# Compare the spend-limit line of METHODOLOGY.md ("Per-run model key spend limit: <N> USD") with
# the per-run key limit the orchestrator is really configured with ([keys] per_run_limit_usd, read
# through argusic.core.settings.orchestrator_config()).
#
# Env overrides: METHODOLOGY_FILE (default: METHODOLOGY.md at the repository root),
#                ARGUSIC_ORCHESTRATOR_CONFIG (default: plugins/argusic/orchestrator.toml).
# Exit 0 when they agree; 1 naming both values when they differ, or when the line is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
METHODOLOGY_FILE="${METHODOLOGY_FILE:-$ROOT/METHODOLOGY.md}"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY=python3
export PYTHONPATH="$ROOT/plugins${PYTHONPATH:+:$PYTHONPATH}"

exec "$PY" -m argusic.ops.guards cost "$METHODOLOGY_FILE"
