"""The landed /out against the harness's seal, and what the harness observed (issue #25, edition 1.7).

The harness seals, through a channel nothing in the container can write (argusic.harness.seal), the
sha256 of every file it wrote as it wrote it; the reference harness adds its report and what it
observed. Here the host compares the seal with the landed files' digests (taken while landing, before
any redaction) and decides, for the run record:

- the record's ``seal``: intact, altered (the files named changed after the harness wrote them),
  missing or no_channel;
- a report.json changed after the reference harness wrote it: the sealed report is put back as
  report.json and the landed one kept beside it as report.landed.json -- both versions stay, the
  sealed one counts, and the change is a finding (seal.altered), not a fault;
- anything else changed after the harness wrote it (the log, the recording, harness.json, an external
  CLI's report or session log after the CLI ended): the container's fault, a measured failure;
- a harness that ended normally but whose seal never came: ours (invalid, rerun) -- only our own
  tooling can lose it.

``observe_session`` makes the observation of an external CLI from its session log: the commands its
shell tool ran and how each ended.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from argusic.core.record import Observed, Report
from argusic.core.safe_io import write_atomic
from argusic.external.collect import CollectedRun, ToolCall
from argusic.harness.seal import json_bytes
from argusic.sandbox.launch import ExecutionResult

LANDED_REPORT_COPY = "report.landed.json"  # the landed report when it was not the sealed one
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NOT_COMPARABLE = ("over-cap", "unreadable")  # sealed as such: nothing to compare with
MAX_SEALED_FILES = 16


@dataclass(frozen=True)
class SealCheck:
    seal: dict  # the record's `seal` part
    report: dict | None = None  # the reference harness's sealed report
    observed: dict | None = None  # the reference harness's sealed observation
    fault: str | None = None  # the container changed evidence after the harness wrote it
    invalid: str | None = None  # ours: the seal was lost


def check_seal(result: ExecutionResult, out_dir: Path) -> SealCheck:
    """Compare the landed files with the seal; put back a replaced reference report (see module)."""
    if not result.seal_channel:
        return SealCheck({"status": "no_channel"})
    if result.error is not None or result.timed_out:  # nothing was expected to be sealed
        return SealCheck({"status": "missing"})
    doc, problem = _parse(result.seal_line)
    if doc is None:
        invalid = None
        if result.exit_code == 0:  # the harness ended as it does after sealing: we lost the seal
            invalid = f"the harness's seal did not reach us ({problem}): our tooling"
        return SealCheck({"status": "missing"}, invalid=invalid)
    landed = dict(result.landed_sha256 or {})
    altered = [name for name, digest in doc["files"].items() if _changed(digest, landed.get(name))]
    report = observed = None
    replaced = False
    if isinstance(doc.get("report"), dict):
        try:
            report = Report.model_validate(doc["report"]).model_dump()
            observed = Observed.model_validate(doc.get("observed")).model_dump()
        except ValidationError as err:
            return SealCheck({"status": "missing"}, invalid=f"the harness's seal is unreadable: {err}")
        if "report.json" in altered:
            _put_back(out_dir, report)
            replaced = True
    faults = [name for name in altered if not (replaced and name == "report.json")]
    fault = None
    if faults:
        fault = f"changed after the harness wrote them: {', '.join(faults)}"
    seal = {"status": "altered" if altered else "intact", "altered": altered, "report_replaced": replaced}
    return SealCheck(seal, report, observed, fault)


def _parse(line: bytes | None) -> tuple[dict | None, str]:
    if not line:
        return None, "nothing came through its channel"
    try:
        doc = json.loads(line)
    except (ValueError, UnicodeDecodeError) as err:
        return None, f"not JSON: {err}"
    if not isinstance(doc, dict) or doc.get("seal") != 1:
        return None, "not a seal of version 1"
    files = doc.get("files")
    if not isinstance(files, dict) or len(files) > MAX_SEALED_FILES:
        return None, "no list of files"
    for name, digest in files.items():
        if not isinstance(name, str) or "/" in name or not isinstance(digest, str):
            return None, f"a file entry is not a name and a digest: {name!r}"
        if not (_SHA256.match(digest) or digest == "absent" or digest in _NOT_COMPARABLE):
            return None, f"{name}: not a sha256"
    return doc, ""


def _changed(sealed: str, landed: str | None) -> bool:
    if sealed in _NOT_COMPARABLE:
        return False
    if sealed == "absent":
        return landed is not None  # written after the harness looked
    return landed != sealed  # removed, refused at landing, or changed


def _put_back(out_dir: Path, report: dict) -> None:
    """The sealed report as report.json (the harness's own bytes: same JSON layout), the landed one
    kept as report.landed.json."""
    path = out_dir / "report.json"
    if path.exists():
        os.replace(path, out_dir / LANDED_REPORT_COPY)
    write_atomic(path, json_bytes(report))


# ---------------------------------------------------------------------------------------------------
# An external CLI's session, observed


_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/bin/zsh")


def _command(call: ToolCall) -> str:
    """The command a shell tool call ran, whitespace folded; a CLI's own `bash -lc '<command>'`
    wrapper (Codex) taken off, so the command is the one the agent wrote."""
    value = call.arguments.get("command") if isinstance(call.arguments, dict) else None
    if isinstance(value, list):  # codex may give argv
        value = shlex.join(str(v) for v in value)
    text = value if isinstance(value, str) else (call.target or "")
    try:
        words = shlex.split(text)
    except ValueError:
        words = []
    if len(words) == 3 and words[0] in _SHELLS and words[1] in ("-c", "-lc", "-l -c"):
        text = words[2]
    return " ".join(text.split())


def _program(command: str) -> str:
    words = command.split()
    for word in words:  # past variable assignments (FOO=1 make) and sudo-like wrappers
        if "=" not in word and word not in ("sudo", "env", "time", "nohup"):
            return word
    return words[0] if words else ""


def observe_session(run: CollectedRun, report: dict | None, sealed_intact: bool = True) -> dict:
    """The observation of an external CLI's session (the `observed` part, source session_log).

    Commands are the shell tool's calls whose ending the log shows. An error is a command that
    failed; it is fixed when a later command of the same program succeeded. Installed and ran need
    at least one command that succeeded (the log cannot tell install from run); verified needs a
    command that succeeded and that the report's verified_how quotes. A session log changed after
    the CLI ended, or none at all, observes nothing."""
    if not sealed_intact:
        return {"source": "session_log", "note": "the session log changed after the CLI ended: not read"}
    calls = [c for c in run.tool_calls if c.category == "exec" and c.ok is not None]
    commands = [(_command(c), bool(c.ok)) for c in calls]
    failed = [i for i, (_, ok) in enumerate(commands) if not ok]
    fixed = sum(
        1
        for i in failed
        if any(ok and _program(cmd) == _program(commands[i][0]) for cmd, ok in commands[i + 1 :])
    )
    succeeded = [cmd for cmd, ok in commands if ok]
    quoted = _quoted_command(succeeded, (report or {}).get("verified_how") or "")
    note = "the session log is incomplete: counts are lower bounds" if run.partial else None
    return {
        "source": "session_log",
        "install_ok": bool(succeeded),
        "ran_ok": bool(succeeded),
        "errors_encountered": len(failed),
        "errors_fixed": fixed,
        "verified": quoted is not None,
        "verify_command": quoted,
        "commands_run": len(commands),
        "commands_failed": len(failed),
        "note": note,
    }


MIN_QUOTED_CHARS = 4  # `ls` quoted in a sentence proves nothing


def _quoted_command(succeeded: Iterable[str], verified_how: str) -> str | None:
    """The longest succeeded command that verified_how quotes (whitespace folded), if any."""
    said = " ".join(verified_how.split())
    found = [cmd for cmd in succeeded if len(cmd) >= MIN_QUOTED_CHARS and cmd in said]
    return max(found, key=len)[:500] if found else None
