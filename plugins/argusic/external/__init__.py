"""External harnesses: drivers that start a public coding-agent CLI inside the attempt container, and
collectors that turn its session log into the parts of a run record.

Every harness gets the same standard instructions (``instructions.md``), rendered with the project
folder and the report path. A driver module exposes::

    HARNESS_NAME, NPM_PACKAGE, PINNED_VERSION, KEY_ENV, BASE_URL_ENV
    build_command(project_dir, out_dir, instructions_path, model, ...) -> list[str]
    build_env(api_key_env, config_dir) -> dict[str, str]
    key_kind(api_key_env) -> "per_run" | "shared"
    collect(session_log, report_path, *, requested_model=None) -> CollectedRun

and ``collect.record_parts(run, key_kind=...)`` gives the record's usage / model / harness / key /
report. Two harnesses: ``claude_code`` (Claude Code, ``claude -p --output-format stream-json``) and
``codex`` (OpenAI Codex CLI, ``codex exec --json``). The file names a driver and the pipeline share
(the session log, the report, the CLI's configuration folder) are in ``layout.py``.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from argusic.external import claude_code, codex
from argusic.external.layout import REPORT_FILE, SESSION_LOG

INSTRUCTIONS_TEMPLATE = Path(__file__).with_name("instructions.md")

# The package's names for the pipeline (argusic.attempts.agents reads REPORT_FILE and SESSION_LOG here).
__all__ = ["INSTRUCTIONS_TEMPLATE", "REPORT_FILE", "SESSION_LOG", "harnesses", "render_instructions"]


def render_instructions(project_dir: str, report_path: str) -> str:
    """The standard instructions with this attempt's project folder and report path filled in."""
    text = INSTRUCTIONS_TEMPLATE.read_text(encoding="utf-8")
    return text.replace("{{PROJECT_DIR}}", project_dir).replace("{{REPORT_PATH}}", report_path)


def harnesses() -> dict[str, ModuleType]:
    return {claude_code.HARNESS_NAME: claude_code, codex.HARNESS_NAME: codex}
