#!/usr/bin/env bash
# Compare the time budget table of METHODOLOGY.md ("| Tier | Budget |") with the budgets the
# orchestrator is really configured with (argusic.settings.orchestrator_config()).
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

exec "$PY" - "$METHODOLOGY_FILE" <<'PYEOF'
import os
import re
import sys
from pathlib import Path

from argusic.settings import PACKAGE_DIR, orchestrator_config

NAME = "check-ttl-methodology"
doc = Path(sys.argv[1])
cfg_arg = os.environ.get("ARGUSIC_ORCHESTRATOR_CONFIG") or None
cfg_path = Path(cfg_arg) if cfg_arg else PACKAGE_DIR / "orchestrator.toml"


def fail(message: str) -> None:
    print(f"{NAME}: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


if not doc.is_file():
    fail(f"{doc}: no such file (set METHODOLOGY_FILE)")
lines = doc.read_text(encoding="utf-8").splitlines()
header = re.compile(r"^\|\s*tier\s*\|\s*budget\s*\|\s*$", re.IGNORECASE)
separator = re.compile(r"^\|\s*:?-+:?\s*\|\s*:?-+:?\s*\|\s*$")
row = re.compile(r"^\|\s*([A-Za-z0-9_-]+)\s*\|\s*(\d+)\s*min\s*\|\s*$")

starts = [i for i, line in enumerate(lines) if header.match(line.strip())]
if not starts:
    fail(f"{doc}: time budget table not found (expected a '| Tier | Budget |' table)")
if len(starts) > 1:
    fail(f"{doc}: {len(starts)} time budget tables (lines {[i + 1 for i in starts]}); keep exactly one")

documented: dict[str, int] = {}
for number, line in enumerate(lines[starts[0] + 1 :], start=starts[0] + 2):
    text = line.strip()
    if not text.startswith("|"):
        break
    if separator.match(text):
        continue
    match = row.match(text)
    if not match:
        fail(f"{doc}:{number}: unreadable budget row {text!r} (expected '| <tier> | <N> min |')")
    tier, minutes = match.group(1), int(match.group(2))
    if tier in documented:
        fail(f"{doc}:{number}: tier {tier!r} listed twice in the budget table")
    documented[tier] = minutes
if not documented:
    fail(f"{doc}: the time budget table has no rows")

try:
    configured = orchestrator_config(str(cfg_path)).budgets_minutes
except Exception as err:  # noqa: BLE001 - reported, never swallowed
    fail(f"cannot read the orchestrator budgets from {cfg_path}: {type(err).__name__}: {err}")

print(f"{NAME}: {doc} budget table vs {cfg_path} [budgets_minutes]")
problems = []
for tier in [*configured, *(t for t in documented if t not in configured)]:
    doc_min, cfg_min = documented.get(tier), configured.get(tier)
    shown_doc = "absent" if doc_min is None else f"{doc_min} min"
    shown_cfg = "absent" if cfg_min is None else f"{cfg_min} min"
    state = "ok" if doc_min == cfg_min else "DIFFERS"
    print(f"  {tier}: METHODOLOGY.md {shown_doc}, orchestrator {shown_cfg}: {state}")
    if doc_min is None:
        problems.append(f"tier {tier}: orchestrator budget {cfg_min} min is missing from the METHODOLOGY.md table")
    elif cfg_min is None:
        problems.append(f"tier {tier}: METHODOLOGY.md says {doc_min} min but the orchestrator has no such tier")
    elif doc_min != cfg_min:
        problems.append(f"tier {tier}: METHODOLOGY.md says {doc_min} min, orchestrator is configured with {cfg_min} min")
if problems:
    for problem in problems:
        print(f"{NAME}: FAIL: {problem}", file=sys.stderr)
    sys.exit(1)
print(f"{NAME}: ok, {len(configured)} tiers agree")
PYEOF
