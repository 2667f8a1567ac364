"""Recordings for the renderer's tests, written the way the reference harness writes them
(argusic.harness.recorder: a bold prompt per command, dim `# note` lines for the harness's notes)."""

from __future__ import annotations

import json


def prompt(command: str) -> str:
    return f"\x1b[1m~/project$ \x1b[0m{command}\r\n"


def note(text: str) -> str:
    return f"\x1b[2m# {text}\x1b[0m\r\n"


def cast(events: list[tuple[float, str]], width: int = 80, height: int = 24) -> bytes:
    head = {"version": 2, "width": width, "height": height, "timestamp": 1764000000}
    lines = [json.dumps(head)] + [json.dumps([t, "o", data]) for t, data in events]
    return ("\n".join(lines) + "\n").encode()


def failure_then_fix(idle: float = 30.0, busy: int = 0) -> bytes:
    """pip install fails (exit code 1), a recovery move, the install passes, the tool runs; an idle
    pause of `idle` seconds before the run, and `busy` lines of download output a second apart."""
    events: list[tuple[float, str]] = [
        (0.1, note("README: 2 blocks, 2 commands")),
        (0.5, prompt("pip install -r requirements.txt")),
        (1.0, "Collecting wavgen==9.9\r\n"),
        (1.6, "\x1b[31mERROR: No matching distribution found for wavgen==9.9\x1b[0m\r\n"),
        (1.7, note("step failed with exit code 1; counted as an error")),
        (
            1.8,
            note(
                "recovery move loosen-pin: retry without the version pin; "
                "retrying from `pip install -r requirements.txt`"
            ),
        ),
        (2.0, prompt("pip install -r requirements.txt")),
    ]
    t = 2.5
    for n in range(busy):
        events.append((t, f"Downloading part-{n}.whl (1.2 MB)\r\n"))
        t += 1.0
    events += [
        (t, "Successfully installed wavgen-1.0\r\n"),
        (t + 0.1, note("the command succeeded after the recovery move; error fixed")),
        (t + 0.1 + idle, prompt("wavgen --help")),
        (t + 0.6 + idle, "usage: wavgen [-h] [--rate RATE] out.wav\r\n"),
        (t + 1.0 + idle, note('report written: {"install_ok": true}')),
    ]
    return cast(events)


def failing_at_the_end() -> bytes:
    """A run that fails and is never fixed (no recovery move applies)."""
    return cast(
        [
            (0.2, prompt("make build")),
            (0.8, "cc -o tool tool.c\r\n"),
            (1.4, "\x1b[31mtool.c:3: error: expected ';'\x1b[0m\r\n"),
            (1.5, note("step failed with exit code 2; counted as an error")),
            (1.6, note("no recovery move applies")),
        ]
    )
