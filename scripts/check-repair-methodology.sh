#!/usr/bin/env bash
# Compare the repair track's limits line of docs/repair-attempts.md ("Repair limits per item: <N> min,
# <N> turns, <N> runs per model": seed 001's 25 min, 60 turns, 3 runs) with the orchestrator's
# [repair] budget_minutes, max_turns and attempts_per_item and the marts' dbt var repair_runs_per_item;
# items with their own limits are refused (the seed fixes one set for every item).
#
# Env overrides: REPAIR_DOC (default: docs/repair-attempts.md),
#                ARGUSIC_ORCHESTRATOR_CONFIG (default: plugins/argusic/orchestrator.toml).
# Exit 0 when they agree; 1 naming what differs, or when the line is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPAIR_DOC="${REPAIR_DOC:-$ROOT/docs/repair-attempts.md}"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY=python3
export PYTHONPATH="$ROOT/plugins${PYTHONPATH:+:$PYTHONPATH}"

exec "$PY" -m argusic.ops.guards repair "$REPAIR_DOC"
