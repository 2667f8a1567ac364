"""The reference agent harness `readme-runner` (and its `--no-recovery` twin).

The files in this directory run INSIDE the attempt container, which has python3 and nothing else:
they import only the standard library. The pipeline mounts this directory read-only at
/opt/argusic/harness and runs `python3 /opt/argusic/harness/readme_runner.py --project ... --out ...`.
"""

from pathlib import Path

from .readme_runner import HARNESS_NAME, HARNESS_VERSION

HARNESS_DIR = Path(__file__).resolve().parent
ENTRYPOINT = "readme_runner.py"

__all__ = ["ENTRYPOINT", "HARNESS_DIR", "HARNESS_NAME", "HARNESS_VERSION"]
