"""Kill `argusic demo` with SIGKILL at random moments and check what it leaves behind.

Each round starts the whole demo cycle in a fresh folder under its own installation id, kills the
`argusic` process with SIGKILL after a random delay, then checks (README "Threat model"):

1. no attempt container of that installation is still running once its budget (the container's
   `argusic.deadline` label) plus the watchdog grace has passed;
2. after that, no container, mount, loop device, disk image or scratch folder of the installation
   remains (the per-attempt reaper cleans up as soon as the orchestrator is gone), and nothing of it
   was put in /tmp.

Usage: .venv/bin/python scripts/check_sigkill_debris.py [--rounds 5] [--seed N] [--max-delay 40]
Exit status 1 when any round left something.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from argusic.core.settings import orchestrator_config
from argusic.sandbox.containment import INSTALLATION_LABEL, loops_backed_by, mounts_under

import docker

ROOT = Path(__file__).resolve().parent.parent


def _containers(client, installation: str, running: bool):
    return client.containers.list(all=not running, filters={"label": f"{INSTALLATION_LABEL}={installation}"})


def _debris(client, installation: str, scratch: Path, tmp_before: set[str]) -> dict:
    return {
        "containers": [c.name for c in _containers(client, installation, running=False)],
        "mounts": [str(m) for m in mounts_under(scratch)],
        "loops": sorted(loops_backed_by(str(scratch))),
        "scratch folders": sorted(p.name for p in scratch.glob(f"{installation}--*")),
        "new in /tmp": sorted(p for p in set(os.listdir("/tmp")) - tmp_before if installation in p),
    }


def one_round(client, delay: float, grace: int) -> tuple[bool, str]:
    work = Path(tempfile.mkdtemp(prefix="argusic-sigkill-", dir=ROOT / "runs"))
    installation = f"sigkill-{uuid.uuid4().hex[:8]}"
    scratch = work / "scratch"
    env = dict(
        os.environ,
        ARGUSIC_INSTALLATION=installation,
        ARGUSIC_HOME=str(work),
        ARGUSIC_SCRATCH_DIR=str(scratch),
        ARGUSIC_BUILD_WORKER="",
    )
    tmp_before = set(os.listdir("/tmp"))
    proc = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "argusic"), "demo"],
        env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(delay)
    killed_at = time.time()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    seen = _containers(client, installation, running=False)
    deadline = max([float(c.labels["argusic.deadline"]) for c in seen] or [killed_at])
    late_running = []
    while time.time() < deadline + grace + 2:
        time.sleep(0.5)
    late_running = [c.name for c in _containers(client, installation, running=True)]
    end = time.time() + 30
    while time.time() < end and any(_debris(client, installation, scratch, tmp_before).values()):
        time.sleep(0.5)
    left = _debris(client, installation, scratch, tmp_before)
    ok = not late_running and not any(left.values())
    what = (
        f"killed at {delay:5.1f} s with {len(seen)} container(s) present; "
        f"running after budget + grace: {late_running or 'none'}; "
        f"left afterwards: {({k: v for k, v in left.items() if v}) or 'nothing'}"
    )
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    return ok, what


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-delay", type=float, default=40.0)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    client = docker.from_env()
    grace = orchestrator_config().watchdog_grace_seconds
    print(f"seed {seed}, watchdog grace {grace} s")
    failures = 0
    for n in range(args.rounds):
        ok, what = one_round(client, rng.uniform(1.0, args.max_delay), grace)
        failures += not ok
        print(f"round {n + 1}: {'ok  ' if ok else 'LEFT'} {what}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
