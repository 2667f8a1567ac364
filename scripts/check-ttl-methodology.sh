#!/usr/bin/env bash
# Compare the time budget table of METHODOLOGY.md ("| Tier | Budget |") with the budgets the
# orchestrator is really configured with (argusic.core.settings.orchestrator_config()).
#
# Env overrides: METHODOLOGY_FILE (default: METHODOLOGY.md at the repository root),
#                ARGUSIC_ORCHESTRATOR_CONFIG (default: plugins/argusic/orchestrator.toml).
# Exit 0 when every tier agrees; 1 naming each tier that differs, or when the table is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
METHODOLOGY_FILE="${METHODOLOGY_FILE:-$ROOT/METHODOLOGY.md}"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY=python3
export PYTHONPATH="$ROOT/plugins${PYTHONPATH:+:$PYTHONPATH}"

exec "$PY" -m argusic.ops.guards ttl "$METHODOLOGY_FILE"
