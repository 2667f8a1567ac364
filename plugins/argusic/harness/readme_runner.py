#!/usr/bin/env python3
"""readme-runner: the deterministic reference agent. No model calls; standard library only.

    python3 readme_runner.py --project DIR --out DIR [--no-recovery] [--command-timeout SECONDS]

It reads the project's README as a careful engineer would (readme_parser.py: which commands install,
which run, which are output, other systems' routes or the reader's own files), runs each README code
block as one shell script (block_runner.py: stopping at its first failing command, the error the
recovery moves of recovery_moves.py see; desktop_watch.py tells a desktop application that ran),
then verifies by decoding the output files the README's verification section names (or, failing
that, the ones a "verify with a mock" section names, against the mock it starts). Everything runs
under the terminal recorder: DIR/recording.cast (asciicast v2, each command at its prompt) and
DIR/log.txt. The report goes to DIR/report.json and a step-by-step account to DIR/harness.json. The
rules are documented in README.md next to this file.

Exit status: 0 whenever a report was written, whatever the project did; 2 on bad usage; 3 when the
harness itself broke (no report then).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import traceback
from dataclasses import asdict

if __package__:
    from . import decode as _decode  # noqa: F401 - the decoder runs as a script; imported for packaging
    from .block_runner import BACKGROUND_RE, Runner, Step, one_line
    from .desktop_watch import GUI_UP_SECONDS
    from .readme_document import Checkout, find_readme
    from .readme_parser import parse_readme
    from .recorder import Recorder
    from .seal import SealChannel, json_bytes, not_dumpable
    from .xdisplay import seal_video
else:  # run as a script from the (read-only) harness directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from block_runner import BACKGROUND_RE, Runner, Step, one_line  # type: ignore[no-redef]
    from desktop_watch import GUI_UP_SECONDS  # type: ignore[no-redef]
    from readme_document import Checkout, find_readme  # type: ignore[no-redef]
    from readme_parser import parse_readme  # type: ignore[no-redef]
    from recorder import Recorder  # type: ignore[no-redef]
    from seal import SealChannel, json_bytes, not_dumpable  # type: ignore[no-redef]
    from xdisplay import seal_video  # type: ignore[no-redef]

HARNESS_NAME = "readme-runner"
HARNESS_VERSION = "2.2.0"

DEFAULT_COMMAND_TIMEOUT = 1800.0
MAX_README_BYTES = 2_000_000  # a README larger than this is read up to here

__all__ = ["HARNESS_NAME", "HARNESS_VERSION", "main", "session"]

# ---------------------------------------------------------------------------------------------------
# The session
# ---------------------------------------------------------------------------------------------------


def _failure(step: Step, timeout: float) -> str:
    if step.timed_out:
        return f"was killed after {timeout:g} s without finishing"
    tail = f' (last output: "{step.last_output}")' if step.last_output else ""
    return f"exited with code {step.exit_code}{tail}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _read_readme(path: str) -> str:
    with open(path, "rb") as f:
        data = f.read(MAX_README_BYTES)
    return data.decode("utf-8", "replace")


def session(project: str, out: str, recovery: bool, timeout: float, rec: Recorder) -> dict:
    runner = Runner(project, out, recovery, timeout, rec)
    rec.note(
        f"{HARNESS_NAME} {HARNESS_VERSION}: recovery {'on' if recovery else 'off'}, "
        f"command timeout {timeout:g} s, project {project}"
    )
    report = {
        "install_ok": False,
        "ran_ok": False,
        "errors_encountered": 0,
        "errors_fixed": 0,
        "test_depth": "tier3_none",
        "verified_how": "not verified",
        "final_state": "",
    }
    details: dict = {"harness": {"name": HARNESS_NAME, "version": HARNESS_VERSION}, "recovery": recovery}
    readme = find_readme(project)
    if readme is None:
        rec.note("no README found")
        report["final_state"] = "No README was found in the project, so nothing was installed or run."
        shutil.rmtree(runner.state_dir, ignore_errors=True)
        return _finish(report, details, runner)
    plan = parse_readme(_read_readme(readme), os.path.basename(readme), Checkout.from_dir(project))
    details["readme"] = os.path.basename(readme)
    details["plan"] = asdict(plan)
    blocks = {phase: _count(len(plan.phase_blocks(phase)), "block") for phase in ("install", "run")}
    rec.note(
        f"{os.path.basename(readme)} ({plan.format}): "
        f"{_count(len(plan.install), 'install command')} in {blocks['install']}"
        + (f" (route: {plan.install_route})" if plan.install_route else "")
        + f", {_count(len(plan.run), 'run command')} in {blocks['run']}, "
        f"{_count(len(plan.verify), 'verify command')} naming {_count(len(plan.verify_artifacts), 'file')}, "
        f"{_count(len(plan.mock), 'mock command')} naming {_count(len(plan.mock_artifacts), 'file')}"
    )
    for note in plan.notes:
        rec.log_line(f"README: {note}")

    def recovery_clause() -> str:
        if not runner.errors_encountered:
            return ""
        moves = "; ".join(runner.moves_applied)
        return (
            f" ({_count(runner.errors_encountered, 'error')} encountered, {runner.errors_fixed} fixed"
            + (f" by: {moves}" if moves and runner.errors_fixed else "")
            + ")"
        )

    def run_phase(phase: str) -> Step | None:
        for block in plan.phase_blocks(phase):
            failed = runner.run_block(phase, block.commands, block=block.line)
            if failed:
                return failed
        return None

    try:
        # Install: claimed only when install commands ran and succeeded (or, below, when nothing
        # needed installing and a run proved the project usable).
        failed = run_phase("install")
        if failed:
            report["final_state"] = (
                f"The install command `{one_line(failed.command)}` {_failure(failed, timeout)}, "
                "so nothing was run" + recovery_clause() + "."
            )
            return _finish(report, details, runner)
        installed = f"Installed with {_count(len(plan.install), 'command')}" if plan.install else ""

        # Run.
        if not plan.run:
            rec.note("the README names no run or test command that can run here")
            if plan.install:
                report["install_ok"] = True
                report["final_state"] = (
                    f"{installed}; the README names no run or test command that can run here, "
                    "so nothing was run" + recovery_clause() + "."
                )
            else:
                report["final_state"] = (
                    "The README names no install, run or test command that can run here, "
                    "so nothing was installed or run."
                )
            return _finish(report, details, runner)
        failed = run_phase("run")
        if failed:
            report["install_ok"] = bool(plan.install)
            report["final_state"] = (
                (
                    f"{installed}, but the run command "
                    if plan.install
                    else "The README names no install command and its run command "
                )  # fmt: skip
                + f"`{one_line(failed.command)}` {_failure(failed, timeout)}"
                + recovery_clause()
                + "."
            )
            return _finish(report, details, runner)
        report["install_ok"] = True  # installed, or nothing needed installing: the run just proved it
        report["ran_ok"] = True
        ran = (
            f"{installed} and ran {_count(len(plan.run), 'command')} successfully"
            if plan.install
            else f"Nothing needed installing: the README names no install command and its "
            f"{_count(len(plan.run), 'run command')} succeeded"
        )
        desktop = [s for s in runner.steps if s.phase == "run" and s.desktop]
        if desktop:  # what "ran" means for a desktop application (methodology section 7, item 6)
            for d in desktop:
                ran += f" (`{one_line(d.command)}` is a desktop application: {d.desktop})"

        # Verify for real, then with the mock the README offers.
        why_not = "the README names no output file to decode"
        if plan.verify or plan.verify_artifacts:
            ok, returned, why_not = _verify(runner, "verify", plan.verify, plan.verify_artifacts, [])
            if ok:
                report["test_depth"] = "tier1_real"
                report["verified_how"] = returned
                report["final_state"] = f"{ran}; {returned}" + recovery_clause() + "."
                return _finish(report, details, runner)
        if plan.mock or plan.mock_artifacts:
            ok, returned, why_mock = _verify(runner, "mock", plan.mock, plan.mock_artifacts, plan.mock_ports)
            runner.stop_background()
            if ok:
                mocks = [c for c in plan.mock if BACKGROUND_RE.search(c)]
                with_mock = (
                    f"with the local mock started by `{mocks[0]}`, " if mocks else "in the mock setup, "
                )
                report["test_depth"] = "tier2_mock"
                report["verified_how"] = with_mock + returned
                report["final_state"] = f"{ran}; {with_mock}{returned}" + recovery_clause() + "."
                return _finish(report, details, runner)
            why_not = why_mock if why_not.startswith("the README names no") else f"{why_not}; {why_mock}"
        report["verified_how"] = f"not verified: {why_not}"
        if desktop:  # seen running is not verified: only a decoding is (section 16)
            report["verified_how"] += (
                f"; the desktop application `{one_line(desktop[0].command)}` was only seen running "
                f"(its main process up on {runner.display} for {GUI_UP_SECONDS:g} s), nothing was decoded"
            )
        report["final_state"] = f"{ran}, but nothing was decoded: {why_not}" + recovery_clause() + "."
        return _finish(report, details, runner)
    finally:
        runner.stop_background()
        shutil.rmtree(runner.state_dir, ignore_errors=True)


def _verify(
    runner: Runner, phase: str, commands: list[str], artifacts: list[str], ports: list[int]
) -> tuple[bool, str, str]:
    """Run a verification section and decode its files: (ok, proof, why not)."""
    if commands:
        failed = runner.run_block(phase, commands, ports)
        if failed:
            return (
                False,
                "",
                f"the {phase} command `{one_line(failed.command)}` {_failure(failed, runner.timeout)}",
            )
    if not artifacts:
        return False, "", f"the README's {phase} section names no output file to decode"
    proofs = []
    for artifact in artifacts:
        ok, command, returned = runner.decode_step(phase, artifact)
        if not ok:
            return False, "", f"`{command}` returned: {returned or 'nothing'}"
        proofs.append(f"`{command}` returned: {returned}")
    return True, "; ".join(proofs), ""


def _finish(report: dict, details: dict, runner: Runner) -> dict:
    report["errors_encountered"] = runner.errors_encountered
    report["errors_fixed"] = runner.errors_fixed
    details["steps"] = [asdict(s) for s in runner.steps]
    details["report"] = report
    report["_details"] = details
    return report


def _write_json(path: str, value: dict) -> bytes:
    """Write `value` as indented JSON (through a temporary file) and return the bytes written."""
    data = json_bytes(value)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return data


def observed(report: dict, steps: list[dict]) -> dict:
    """What this harness saw, in the run record's `observed` shape. The reference agent is its own
    observer: every fact of its report comes from a command it ran and whose exit code it read, and
    its depth from a decode it ran itself, so the observation is the report's facts, with the
    commands behind them counted."""
    verified = report["test_depth"] in ("tier1_real", "tier2_mock")
    return {
        "source": "harness",
        "install_ok": report["install_ok"],
        "ran_ok": report["ran_ok"],
        "errors_encountered": report["errors_encountered"],
        "errors_fixed": report["errors_fixed"],
        "verified": verified,
        "verify_command": report["verified_how"][:500] if verified else None,
        "commands_run": len(steps),
        "commands_failed": sum(1 for s in steps if not s["ok"]),
        "note": None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="readme_runner.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", required=True, help="the project checkout (writable)")
    parser.add_argument("--out", required=True, help="where recording.cast, log.txt and report.json go")
    parser.add_argument(
        "--no-recovery", action="store_true", help="apply no recovery move (readme-runner-norecover)"
    )
    parser.add_argument(
        "--command-timeout",
        type=float,
        default=DEFAULT_COMMAND_TIMEOUT,
        help="seconds before one command is killed and counted as an error "
        f"(default {DEFAULT_COMMAND_TIMEOUT:g})",
    )
    parser.add_argument(
        "--title",
        default=None,
        help="the recording's title; the orchestrator passes '<agent> / <project> / attempt N' "
        "(default: readme-runner / <project folder>)",
    )
    args = parser.parse_args(argv)
    if args.command_timeout <= 0:
        parser.error("--command-timeout must be positive")
    project = os.path.abspath(args.project)
    out = os.path.abspath(args.out)
    if not os.path.isdir(project):
        parser.error(f"--project {project} is not a directory")
    os.makedirs(out, exist_ok=True)
    not_dumpable()  # before anything of the project runs: its /proc entries and memory out of reach
    channel = SealChannel.take()
    rec = Recorder(
        os.path.join(out, "recording.cast"),
        os.path.join(out, "log.txt"),
        title=args.title or f"{HARNESS_NAME} / {os.path.basename(project)}",
    )
    try:
        report = session(project, out, not args.no_recovery, args.command_timeout, rec)
        details = report.pop("_details")
        channel.file_written("harness.json", _write_json(os.path.join(out, "harness.json"), details))
        channel.file_written("report.json", _write_json(os.path.join(out, "report.json"), report))
        rec.note(f"report written: {json.dumps(report, ensure_ascii=False)}")
        rec.close()
        rec.seal_files(channel)
        seal_video(channel, out)  # the display's video, stopped cleanly and sealed as it is now
        channel.send(report=report, observed=observed(report, details["steps"]))
        return 0
    except Exception:  # the harness itself broke: say so, write no report
        text = traceback.format_exc()
        with contextlib.suppress(Exception):
            rec.note("HARNESS ERROR, no report written")
            rec.output(text.replace("\n", "\r\n"))
        sys.stderr.write(text)
        return 3
    finally:
        rec.close()


if __name__ == "__main__":
    sys.exit(main())
