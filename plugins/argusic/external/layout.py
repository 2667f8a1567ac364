"""Where an external harness's files lie inside the attempt container.

Both drivers and the pipeline use these names; they live in a module of their own so that the drivers
do not import the package that lists them (``argusic.external.harnesses``).
"""

from __future__ import annotations

SESSION_LOG = "session.jsonl"  # in the attempt's output folder (/out)
REPORT_FILE = "report.json"
DEFAULT_CONFIG_DIR = "/tmp/argusic-agent-config"  # inside the container; never under /out (see drivers)
