"""Per-attempt overhead of the pipeline against a bare `docker run --rm` of the same image.

Both sides do the same work on the same fixture project: fetch the pinned commit, run readme-runner.
The bare side is one `docker run --rm --network none` with the same mounts; the pipeline side is
`argusic.attempts.run.run_attempt` (Docker SDK, limits, budget watch, evidence landing with fingerprints,
run record). Runs are interleaved and repeated; medians and their ratio are printed. Timings on a
shared 2-core machine are noisy: read the ratio, not the absolute numbers.

Usage: .venv/bin/python scripts/bench_attempt_overhead.py [--repeat 5] [--project ID]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from argusic.attempts.run import run_attempt
from argusic.core.evidence import EvidenceStore
from argusic.core.settings import runner_image
from argusic.core.spec import AttemptSpec
from argusic.sandbox.executor import (
    CONTAINER_HARNESS,
    CONTAINER_OUT,
    CONTAINER_PROJECT,
    CONTAINER_SOURCE,
    HARNESS_DIR,
    DockerExecutor,
    _bootstrap_script,
)
from argusic.sources.forge import build_forge


def bare_run(repo: Path, commit: str, out_dir: Path) -> float:
    out_dir.mkdir(parents=True)
    harness = ["python3", f"{CONTAINER_HARNESS}/readme_runner.py", "--project", CONTAINER_PROJECT]
    script = _bootstrap_script(
        CONTAINER_SOURCE, CONTAINER_PROJECT, commit, [*harness, "--out", CONTAINER_OUT]
    )
    cmd = [
        "docker", "run", "--rm", "--network", "none",
        "-v", f"{HARNESS_DIR}:{CONTAINER_HARNESS}:ro",
        "-v", f"{repo}:{CONTAINER_SOURCE}:ro",
        "-v", f"{out_dir}:{CONTAINER_OUT}",
        runner_image(), "bash", "-c", script,
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--project", default=None, help="fixture project id (default: first pass_full)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="argusic-bench-") as tmp:
        work = Path(tmp)
        catalogue = json.loads(build_forge(work / "forge").read_text())["candidates"]
        if args.project:
            cand = next(c for c in catalogue if c["project_id"] == args.project)
        else:
            cand = next(c for c in catalogue if c.get("expected_outcome") == "pass_full")
        executor = DockerExecutor()
        store = EvidenceStore((work / "evidence").as_uri())
        bare, pipeline = [], []
        for i in range(args.repeat):
            bare.append(bare_run(Path(cand["repo_url"]), cand["commit"], work / f"bare-{i}"))
            spec = AttemptSpec(
                cycle_id="2026-12-bench",
                agent_id="readme-runner",
                project_id=cand["project_id"],
                repo_url=cand["repo_url"],
                commit=cand["commit"],
                tier="standard",
                attempt_no=i + 1,
            )
            start = time.perf_counter()
            run_attempt(spec, executor=executor, store=store, base_dir=work / "runs")
            pipeline.append(time.perf_counter() - start)
        b, p = statistics.median(bare), statistics.median(pipeline)
        print(f"project {cand['project_id']}, {args.repeat} interleaved runs each, image {runner_image()}")
        print(f"bare docker run --rm : median {b:.3f} s  (min {min(bare):.3f}, max {max(bare):.3f})")
        print(f"pipeline run_attempt : median {p:.3f} s  (min {min(pipeline):.3f}, max {max(pipeline):.3f})")
        print(f"overhead per attempt : {p - b:+.3f} s, ratio pipeline/bare = {p / b:.2f}x")


if __name__ == "__main__":
    main()
