"""scripts/bench_warehouse.py --quick: 10k synthetic attempts, the floor and the full build agree.

No timing is asserted (the machine is shared and small): only that the benchmark runs end to end,
prints its ratio line, and that the hand-written floor's board equals marts.board.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_warehouse.py"


def test_quick_bench_prints_ratio_and_agrees(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--keep", str(tmp_path / "bench")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    ratio = [line for line in out.splitlines() if line.startswith("ratio build/floor at ")]
    assert len(ratio) == 1, out
    assert "x through the build worker (" in ratio[0] and "x as a cold process" in ratio[0], ratio[0]
    assert "MB" in ratio[0]
    # the worker's builds after the first reused the parsed project
    assert "; 1 parse(s); worker peak" in out, out
    agreement = [line for line in out.splitlines() if line.startswith("agreement (10,000): ")]
    assert len(agreement) == 1, out
    assert agreement[0].startswith("agreement (10,000): agree:"), agreement[0]
    assert ", 0 differences" in agreement[0]
    # the synthetic history has the shape the brief asks for
    assert "verdict attempts" in out and "reruns" in out and "timeouts" in out
    # dbt wrote its target/ into the bench folder, not into dbt_project/target
    assert (tmp_path / "bench" / "n10000" / "dbt_target" / "run_results.json").exists()
    assert "slowest dbt nodes (median worker build): " in out
