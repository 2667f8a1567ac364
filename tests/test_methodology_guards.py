"""The methodology guards: METHODOLOGY.md's budget table and spend-limit line vs the orchestrator."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TTL = ROOT / "scripts" / "check-ttl-methodology.sh"
COST = ROOT / "scripts" / "check-cost-methodology.sh"
DOC = ROOT / "METHODOLOGY.md"
CONFIG = ROOT / "plugins" / "argusic" / "orchestrator.toml"


def run(script: Path, doc: Path | None = None, config: Path | None = None) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if k not in {"METHODOLOGY_FILE", "ARGUSIC_ORCHESTRATOR_CONFIG"}
    }
    if doc is not None:
        env["METHODOLOGY_FILE"] = str(doc)
    if config is not None:
        env["ARGUSIC_ORCHESTRATOR_CONFIG"] = str(config)
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=60)


def altered(src: Path, dest: Path, pattern: str, replacement: str) -> Path:
    text = src.read_text(encoding="utf-8")
    new, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    assert count == 1, f"{pattern!r} matched {count} times in {src}"
    dest.write_text(new, encoding="utf-8")
    return dest


@pytest.mark.parametrize("script", [TTL, COST], ids=["ttl", "cost"])
def test_guards_pass_on_the_real_files(script: Path) -> None:
    proc = run(script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert str(DOC) in proc.stdout and str(CONFIG) in proc.stdout  # says what it compared
    assert "ok" in proc.stdout


def test_ttl_prints_every_tier() -> None:
    out = run(TTL).stdout
    for tier, minutes in [("standard", 90), ("heavy", 120), ("gpu", 120)]:
        assert f"{tier}: METHODOLOGY.md {minutes} min, orchestrator {minutes} min: ok" in out


def test_ttl_fails_when_the_document_changes(tmp_path: Path) -> None:
    doc = altered(DOC, tmp_path / "M.md", r"^\| gpu \| 120 min \|$", "| gpu | 240 min |")
    proc = run(TTL, doc=doc)
    assert proc.returncode == 1
    assert "tier gpu: METHODOLOGY.md says 240 min, orchestrator is configured with 120 min" in proc.stderr
    assert "standard" not in proc.stderr  # only the tier that differs is blamed


def test_ttl_fails_when_the_config_changes(tmp_path: Path) -> None:
    config = altered(CONFIG, tmp_path / "o.toml", r"^standard = 90$", "standard = 45")
    proc = run(TTL, config=config)
    assert proc.returncode == 1
    assert "tier standard: METHODOLOGY.md says 90 min, orchestrator is configured with 45 min" in proc.stderr
    assert str(config) in proc.stdout


def test_ttl_fails_on_a_tier_missing_from_the_table(tmp_path: Path) -> None:
    doc = altered(DOC, tmp_path / "M.md", r"^\| heavy \| 120 min \|\n", "")
    proc = run(TTL, doc=doc)
    assert proc.returncode == 1
    assert "tier heavy: orchestrator budget 120 min is missing from the METHODOLOGY.md table" in proc.stderr


def test_ttl_fails_when_the_table_is_gone(tmp_path: Path) -> None:
    doc = altered(DOC, tmp_path / "M.md", r"^\| Tier \| Budget \|$", "| Tier | Time |")
    proc = run(TTL, doc=doc)
    assert proc.returncode == 1
    assert "time budget table not found" in proc.stderr


def test_ttl_fails_on_an_unreadable_row(tmp_path: Path) -> None:
    doc = altered(DOC, tmp_path / "M.md", r"^\| gpu \| 120 min \|$", "| gpu | two hours |")
    proc = run(TTL, doc=doc)
    assert proc.returncode == 1
    assert "unreadable budget row" in proc.stderr and "gpu" in proc.stderr


def test_cost_fails_when_the_document_changes(tmp_path: Path) -> None:
    doc = altered(
        DOC,
        tmp_path / "M.md",
        r"^Per-run model key spend limit: 3 USD$",
        "Per-run model key spend limit: 5 USD",
    )
    proc = run(COST, doc=doc)
    assert proc.returncode == 1
    assert (
        "METHODOLOGY.md says 5 USD, orchestrator is configured with per_run_limit_usd = 3 USD" in proc.stderr
    )


def test_cost_fails_when_the_config_changes(tmp_path: Path) -> None:
    config = altered(CONFIG, tmp_path / "o.toml", r"^per_run_limit_usd = 3$", "per_run_limit_usd = 2.5")
    proc = run(COST, config=config)
    assert proc.returncode == 1
    assert (
        "METHODOLOGY.md says 3 USD, orchestrator is configured with per_run_limit_usd = 2.5 USD"
        in proc.stderr
    )


def test_cost_compares_numbers_not_spelling(tmp_path: Path) -> None:
    config = altered(CONFIG, tmp_path / "o.toml", r"^per_run_limit_usd = 3$", "per_run_limit_usd = 3.00")
    proc = run(COST, config=config)
    assert proc.returncode == 0, proc.stderr


def test_cost_fails_when_the_line_is_gone(tmp_path: Path) -> None:
    doc = altered(
        DOC, tmp_path / "M.md", r"^Per-run model key spend limit: 3 USD$", "The limit is three dollars."
    )
    proc = run(COST, doc=doc)
    assert proc.returncode == 1
    assert "spend-limit line not found" in proc.stderr


def test_guards_fall_back_to_python3_without_the_venv(tmp_path: Path) -> None:
    """A checkout without .venv: the scripts use python3 with plugins/ on the path."""
    if shutil.which("python3") is None:
        pytest.skip("no python3 on PATH")
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    for script in (TTL, COST):
        shutil.copy(script, checkout / "scripts" / script.name)
    shutil.copy(DOC, checkout / "METHODOLOGY.md")
    shutil.copytree(ROOT / "plugins" / "argusic", checkout / "plugins" / "argusic",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for script in (TTL, COST):
        proc = subprocess.run(
            ["bash", str(checkout / "scripts" / script.name)], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        assert str(checkout / "plugins" / "argusic" / "orchestrator.toml") in proc.stdout


# -- The repair track's limits (seed 001: 25 min, 60 turns, every model running every item 3 times) ------

REPAIR = ROOT / "scripts" / "check-repair-methodology.sh"
REPAIR_DOC = ROOT / "docs" / "repair-attempts.md"


def run_repair(doc: Path | None = None, config: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"REPAIR_DOC", "ARGUSIC_ORCHESTRATOR_CONFIG"}}
    env |= {"REPAIR_DOC": str(doc)} if doc else {}
    env |= {"ARGUSIC_ORCHESTRATOR_CONFIG": str(config)} if config else {}
    return subprocess.run(["bash", str(REPAIR)], capture_output=True, text=True, env=env, timeout=60)


def test_the_repair_limits_are_the_seeds_and_agree() -> None:
    proc = run_repair()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in ("minutes: documented 25, orchestrator 25: ok", "turns: documented 60, orchestrator 60: ok",
                 "runs: documented 3, orchestrator 3: ok"):  # fmt: skip
        assert line in proc.stdout


@pytest.mark.parametrize(
    ("pattern", "replacement", "blamed"),
    [
        (r"^max_turns = 60$", "max_turns = 100", "turns: repair-attempts.md says 60, [repair] has 100"),
        (r"^attempts_per_item = 3$", "attempts_per_item = 1", "runs: repair-attempts.md says 3, [repair] has 1"),  # noqa: E501
        (r"^setup_seconds = 60$", "setup_seconds = 60\n[repair.items.calc-1]\nbudget_minutes = 45",
         "items with their own limits (calc-1)"),
    ],
)  # fmt: skip
def test_the_repair_guard_fails_on_a_changed_limit_or_an_items_own(
    tmp_path, pattern, replacement, blamed
) -> None:
    config = altered(CONFIG, tmp_path / "orchestrator.toml", pattern, replacement)
    proc = run_repair(config=config)
    assert proc.returncode == 1 and blamed in proc.stderr, proc.stdout + proc.stderr


def test_the_repair_guard_fails_when_the_document_changes_or_loses_its_line(tmp_path) -> None:
    doc = altered(
        REPAIR_DOC, tmp_path / "r.md", r"^Repair limits per item: 25 min", "Repair limits per item: 30 min"
    )
    proc = run_repair(doc=doc)
    assert proc.returncode == 1 and "repair minutes: r.md says 30, [repair] has 25" in proc.stderr
    doc = altered(REPAIR_DOC, tmp_path / "s.md", r"^Repair limits per item: .*$", "Limits as agreed.")
    proc = run_repair(doc=doc)
    assert proc.returncode == 1 and "0 repair limits lines; keep exactly one" in proc.stderr
