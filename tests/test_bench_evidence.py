"""scripts/bench_evidence.py at a tiny size: it runs end to end, prints every stage, leaks nothing.

No timing is asserted (the machine is shared and small): only that the benchmark generates its data,
runs each stage in its own process, prints the table with the ratios and peak memory, and that the
served copies hold none of the planted secrets.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_evidence.py"
STAGES = ["sha256", "land (put_file)", "fingerprint", "mask"]


def test_tiny_bench_prints_every_stage_and_leaks_nothing(tmp_path: Path) -> None:
    work = tmp_path / "bench"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--log-mb", "0.25", "--cast-mb", "0.25", "--workdir", str(work)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "rules: " in out and " kingfisher: " in out
    for name in ("build.log", "session.cast"):
        summary = [line for line in out.splitlines() if line.startswith(f"{name}: masked ")]
        assert len(summary) == 1, out
        assert summary[0].endswith(", leaked 0") and "WITHHELD" not in summary[0], summary[0]
        rows = [line.split() for line in out.splitlines() if line.startswith(name + " ")]
        # nine figures after the stage: MB, s, MB/s, vs sha256, RSS at start, peak RSS, CPU s,
        # MB/CPU-s (issue 27: what the masking targets are stated in), worker peak
        stages = [" ".join(r[1:-9]) for r in rows]
        assert stages == STAGES, out
        for row in rows:
            assert row[-6].endswith("x") and float(row[-4]) > 0, row  # ratio to sha256, peak RSS
            assert float(row[-2]) > 0, row  # MB per CPU-second
    serve = [line for line in out.splitlines() if line.startswith("both ")]
    assert len(serve) == 1 and "serve (present_attempt)" in serve[0], out
    assert "WITHHELD" not in out
    assert not work.exists()  # the generated files and stores are removed unless --keep
