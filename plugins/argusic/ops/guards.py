"""The methodology guards (scripts/check-ttl-methodology.sh, scripts/check-cost-methodology.sh,
scripts/check-repair-methodology.sh): compare the time-budget table and the key spend-limit line of
METHODOLOGY.md, and the repair limits line of docs/repair-attempts.md (seed 001), with the values the
orchestrator is really configured with (argusic.core.settings.orchestrator_config(), `[repair]`).

Run as `python -m argusic.ops.guards ttl|cost|repair <document>`; the config file comes from
ARGUSIC_ORCHESTRATOR_CONFIG (default plugins/argusic/orchestrator.toml). Exit 0 when they agree;
1 with a message naming what differs or what could not be read.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import NoReturn

from argusic.core.settings import PACKAGE_DIR, orchestrator_config


class _Guard:
    def __init__(self, name: str, doc: Path) -> None:
        self.name = name
        self.doc = doc
        cfg_arg = os.environ.get("ARGUSIC_ORCHESTRATOR_CONFIG") or None
        self.cfg_path = Path(cfg_arg) if cfg_arg else PACKAGE_DIR / "orchestrator.toml"
        if not doc.is_file():
            self.fail(f"{doc}: no such file (set METHODOLOGY_FILE)")

    def fail(self, message: str) -> NoReturn:
        print(f"{self.name}: FAIL: {message}", file=sys.stderr)
        sys.exit(1)


def check_ttl(doc: Path) -> None:
    guard = _Guard("check-ttl-methodology", doc)
    fail, cfg_path = guard.fail, guard.cfg_path
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

    print(f"{guard.name}: {doc} budget table vs {cfg_path} [budgets_minutes]")
    problems = []
    for tier in [*configured, *(t for t in documented if t not in configured)]:
        doc_min, cfg_min = documented.get(tier), configured.get(tier)
        shown_doc = "absent" if doc_min is None else f"{doc_min} min"
        shown_cfg = "absent" if cfg_min is None else f"{cfg_min} min"
        state = "ok" if doc_min == cfg_min else "DIFFERS"
        print(f"  {tier}: METHODOLOGY.md {shown_doc}, orchestrator {shown_cfg}: {state}")
        if doc_min is None:
            problems.append(
                f"tier {tier}: orchestrator budget {cfg_min} min is missing from the METHODOLOGY.md table"
            )
        elif cfg_min is None:
            problems.append(
                f"tier {tier}: METHODOLOGY.md says {doc_min} min but the orchestrator has no such tier"
            )
        elif doc_min != cfg_min:
            problems.append(
                f"tier {tier}: METHODOLOGY.md says {doc_min} min, "
                f"orchestrator is configured with {cfg_min} min"
            )
    if problems:
        for problem in problems:
            print(f"{guard.name}: FAIL: {problem}", file=sys.stderr)
        sys.exit(1)
    print(f"{guard.name}: ok, {len(configured)} tiers agree")


def check_cost(doc: Path) -> None:
    guard = _Guard("check-cost-methodology", doc)
    fail, cfg_path = guard.fail, guard.cfg_path
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
    print(f"{guard.name}: {doc}:{number} spend limit vs {cfg_path} [keys] per_run_limit_usd")
    print(f"  per-run key limit: METHODOLOGY.md {text} USD, orchestrator {configured_value:g} USD: {state}")
    if documented != configured:
        fail(
            f"per-run key spend limit: METHODOLOGY.md says {text} USD, "
            f"orchestrator is configured with per_run_limit_usd = {configured_value:g} USD"
        )
    print(f"{guard.name}: ok")


_REPAIR_LINE = re.compile(
    r"^Repair limits per item:\s*(\d+)\s*min,\s*(\d+)\s*turns,\s*(\d+)\s*runs per model\s*$"
)


def check_repair(doc: Path) -> None:
    """The repair track's limits (seed 001: 25 min, 60 turns, every model running every item 3 times)
    as written in ``doc`` against ``[repair]`` and the marts' ``repair_runs_per_item``; an item's own
    limits are refused (the seed fixes one set for every item)."""
    # deferred: the ttl and cost guards run on a bare python3 (no venv); this one needs the package's
    # dependencies (the repair limits' reader, PyYAML for dbt_project.yml)
    import yaml

    from argusic.attempts.repair_run import repair_limits

    guard = _Guard("check-repair-methodology", doc)
    fail, cfg_path = guard.fail, guard.cfg_path
    found = [
        (number, match)
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1)
        if (match := _REPAIR_LINE.match(line.strip()))
    ]
    if len(found) != 1:
        fail(
            f"{doc}: {len(found)} repair limits lines; keep exactly one "
            "('Repair limits per item: <N> min, <N> turns, <N> runs per model')"
        )
    number, match = found[0]
    documented = {"minutes": int(match[1]), "turns": int(match[2]), "runs": int(match[3])}
    try:
        limits = repair_limits(config_path=cfg_path)
        overrides = sorted(tomllib.loads(cfg_path.read_text()).get("repair", {}).get("items", {}))
        dbt_file = PACKAGE_DIR.parents[1] / "dbt_project" / "dbt_project.yml"
        marts_runs = yaml.safe_load(dbt_file.read_text())["vars"]["repair_runs_per_item"]
    except Exception as err:  # noqa: BLE001 - reported, never swallowed
        fail(
            f"cannot read the repair limits from {cfg_path} and dbt_project.yml: {type(err).__name__}: {err}"
        )
    configured = {
        "minutes": limits.budget_seconds // 60,
        "turns": limits.max_turns,
        "runs": limits.attempts_per_item,
    }
    print(f"{guard.name}: {doc}:{number} repair limits vs {cfg_path} [repair]")
    problems = []
    for name, written in documented.items():
        state = "ok" if configured[name] == written else "DIFFERS"
        print(f"  {name}: documented {written}, orchestrator {configured[name]}: {state}")
        if state != "ok":
            problems.append(f"repair {name}: {doc.name} says {written}, [repair] has {configured[name]}")
    if marts_runs != documented["runs"]:
        problems.append(f"dbt var repair_runs_per_item is {marts_runs}, {doc.name} says {documented['runs']}")
    if overrides:
        problems.append(
            f"items with their own limits ({', '.join(overrides)}): the seed fixes one set for all"
        )
    for problem in problems:
        print(f"{guard.name}: FAIL: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"{guard.name}: ok")


CHECKS = {"ttl": check_ttl, "cost": check_cost, "repair": check_repair}


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] not in CHECKS:
        print("usage: python -m argusic.ops.guards ttl|cost|repair <document>", file=sys.stderr)
        sys.exit(2)
    CHECKS[argv[0]](Path(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
