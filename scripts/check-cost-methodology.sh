#!/usr/bin/env bash
# Compare the spend-limit line of METHODOLOGY.md ("Per-run model key spend limit: <N> USD") with
# the per-run key limit the orchestrator is really configured with ([keys] per_run_limit_usd, read
# through argusic.settings.orchestrator_config()).
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

exec "$PY" - "$METHODOLOGY_FILE" <<'PYEOF'
import os
import re
import sys
from decimal import Decimal
from pathlib import Path

from argusic.settings import PACKAGE_DIR, orchestrator_config

NAME = "check-cost-methodology"
doc = Path(sys.argv[1])
cfg_arg = os.environ.get("ARGUSIC_ORCHESTRATOR_CONFIG") or None
cfg_path = Path(cfg_arg) if cfg_arg else PACKAGE_DIR / "orchestrator.toml"


def fail(message: str) -> None:
    print(f"{NAME}: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


if not doc.is_file():
    fail(f"{doc}: no such file (set METHODOLOGY_FILE)")
line_re = re.compile(r"^Per-run model key spend limit:\s*(\d+(?:\.\d+)?)\s*USD\s*$")
found = [
    (number, match.group(1))
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1)
    if (match := line_re.match(line.strip()))
]
if not found:
    fail(f"{doc}: spend-limit line not found (expected 'Per-run model key spend limit: <N> USD')")
if len(found) > 1:
    fail(f"{doc}: {len(found)} spend-limit lines (lines {[n for n, _ in found]}); keep exactly one")
number, text = found[0]
documented = Decimal(text)

try:
    configured_value = orchestrator_config(str(cfg_path)).per_run_key_limit_usd
except Exception as err:  # noqa: BLE001 - reported, never swallowed
    fail(f"cannot read [keys] per_run_limit_usd from {cfg_path}: {type(err).__name__}: {err}")
configured = Decimal(str(configured_value))

state = "ok" if documented == configured else "DIFFERS"
print(f"{NAME}: {doc}:{number} spend limit vs {cfg_path} [keys] per_run_limit_usd")
print(f"  per-run key limit: METHODOLOGY.md {text} USD, orchestrator {configured_value:g} USD: {state}")
if documented != configured:
    fail(
        f"per-run key spend limit: METHODOLOGY.md says {text} USD, "
        f"orchestrator is configured with per_run_limit_usd = {configured_value:g} USD"
    )
print(f"{NAME}: ok")
PYEOF
