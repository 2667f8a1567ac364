"""The reference agent readme-runner, run locally (as a subprocess) on checkouts of the demo forge."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import wave
from pathlib import Path

import pytest
from argusic.attempts.agents import DRIVERS
from argusic.harness import HARNESS_DIR, HARNESS_NAME, HARNESS_VERSION, decode
from argusic.harness.readme_commands import block_commands
from argusic.harness.readme_document import Checkout, find_readme
from argusic.harness.readme_parser import parse_readme
from argusic.harness.readme_sections import classify_heading
from argusic.sources.forge import build_forge, checkout

RUNNER = HARNESS_DIR / "readme_runner.py"
REPORT_KEYS = {
    "install_ok",
    "ran_ok",
    "errors_encountered",
    "errors_fixed",
    "test_depth",
    "verified_how",
    "final_state",
}


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    path = build_forge(tmp_path_factory.mktemp("forge"))
    return {c["project_id"]: c for c in json.loads(path.read_text())["candidates"]}


def run_harness(
    project: Path, out: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> tuple[subprocess.CompletedProcess, dict | None]:
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--project", str(project), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    report_path = out / "report.json"
    return proc, json.loads(report_path.read_text()) if report_path.exists() else None


def run_fixture(catalogue, project_id: str, tmp_path: Path, *args: str) -> tuple[dict, Path]:
    c = catalogue[project_id]
    project = checkout(c["repo_url"], c["commit"], tmp_path / "project")
    proc, report = run_harness(project, tmp_path / "out", *args)
    assert proc.returncode == 0, proc.stderr
    assert report is not None
    assert set(report) == REPORT_KEYS
    return report, tmp_path / "out"


def read_cast(path: Path) -> tuple[dict, list[list]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    events = [json.loads(line) for line in lines[1:]]
    return header, events


def assert_valid_cast(path: Path) -> tuple[dict, list[list]]:
    header, events = read_cast(path)
    assert header["version"] == 2
    assert isinstance(header["width"], int) and isinstance(header["height"], int)
    assert isinstance(header["timestamp"], int)
    assert isinstance(header["env"], dict)
    assert events, "no events recorded"
    times = [e[0] for e in events]
    assert all(isinstance(t, float | int) for t in times)
    assert times == sorted(times), "event times must not go backwards"
    assert all(len(e) == 3 and e[1] == "o" and isinstance(e[2], str) for e in events)
    return header, events


def cast_text(events: list[list]) -> str:
    return "".join(e[2] for e in events)


# --- every fixture, both agents -------------------------------------------------------------------

# (install_ok, ran_ok, errors_encountered, errors_fixed, test_depth) per (project, agent).
EXPECTED = {
    ("tonegen-sh", "readme-runner"): (True, True, 0, 0, "tier1_real"),
    ("tonegen-sh", "readme-runner-norecover"): (True, True, 0, 0, "tier1_real"),
    ("pixelart-py", "readme-runner"): (True, True, 0, 0, "tier1_real"),
    ("pixelart-py", "readme-runner-norecover"): (True, True, 0, 0, "tier1_real"),
    ("weatherfetch", "readme-runner"): (True, True, 0, 0, "tier2_mock"),
    ("weatherfetch", "readme-runner-norecover"): (True, True, 0, 0, "tier2_mock"),
    ("csvstats", "readme-runner"): (True, False, 1, 0, "tier3_none"),
    ("csvstats", "readme-runner-norecover"): (True, False, 1, 0, "tier3_none"),
    ("zigfmt", "readme-runner"): (False, False, 1, 0, "tier3_none"),
    ("zigfmt", "readme-runner-norecover"): (False, False, 1, 0, "tier3_none"),
    ("banner-sh", "readme-runner"): (True, True, 1, 1, "tier1_real"),
    ("banner-sh", "readme-runner-norecover"): (True, False, 1, 0, "tier3_none"),
    ("greeter-env", "readme-runner"): (True, True, 1, 1, "tier1_real"),
    ("greeter-env", "readme-runner-norecover"): (True, False, 1, 0, "tier3_none"),
}

OUTCOME_OF = {
    (True, True, "tier1_real"): {"pass_full", "recovered"},
    (True, True, "tier2_mock"): {"pass_mock"},
    (True, False, "tier3_none"): {"fail_run"},
    (False, False, "tier3_none"): {"fail_install"},
}


@pytest.mark.parametrize(("project_id", "agent"), sorted(EXPECTED))
def test_fixture_outcome(catalogue, tmp_path, project_id, agent):
    # The harness's own --title option (run by hand); the orchestrator titles the recording on the
    # host instead, so that the container never learns which attempt it is.
    title = f"{agent} / {project_id} / attempt 1"
    report, out = run_fixture(catalogue, project_id, tmp_path, *DRIVERS[agent].harness_args, "--title", title)
    got = (
        report["install_ok"],
        report["ran_ok"],
        report["errors_encountered"],
        report["errors_fixed"],
        report["test_depth"],
    )
    assert got == EXPECTED[(project_id, agent)], report
    # The catalogue documents the same outcome.
    expected_outcome = catalogue[project_id]["expected_outcome_by_agent"][agent]
    assert expected_outcome in OUTCOME_OF[(got[0], got[1], got[4])]
    assert report["final_state"].endswith(".") and report["final_state"].strip()
    if report["test_depth"] == "tier3_none":
        assert report["verified_how"].startswith("not verified")
    else:
        assert "decode.py" in report["verified_how"] and "returned:" in report["verified_how"]
    # Evidence: a valid recording holding the commands, a log, the step account.
    header, events = assert_valid_cast(out / "recording.cast")
    assert header["title"] == title
    log = (out / "log.txt").read_text()
    details = json.loads((out / "harness.json").read_text())
    assert details["harness"] == {"name": HARNESS_NAME, "version": HARNESS_VERSION}
    for step in details["steps"]:
        assert step["command"] in cast_text(events).replace("\r\n> ", "\n")
        assert f"STEP {step['phase']}: {step['command']}" in log


def test_pass_full_decodes_the_wav(catalogue, tmp_path):
    report, out = run_fixture(catalogue, "tonegen-sh", tmp_path)
    assert "WAV out/tone.wav: decoded 8000 frames" in report["verified_how"]
    assert "decoded 8000 frames" in report["final_state"]
    with wave.open(str(tmp_path / "project" / "out" / "tone.wav")) as w:
        assert w.getnframes() == 8000


def test_pass_full_decodes_the_png(catalogue, tmp_path):
    report, _ = run_fixture(catalogue, "pixelart-py", tmp_path)
    assert "PNG out/gradient.png: decoded 64x32 pixels" in report["verified_how"]


def test_pass_mock_starts_and_stops_the_mock(catalogue, tmp_path):
    report, out = run_fixture(catalogue, "weatherfetch", tmp_path)
    assert "python3 mock_server.py --port 8765 &" in report["verified_how"]
    assert '"city": "Paris"' in report["verified_how"]
    assert "GET /forecast?city=Paris" in (out / "background-1.log").read_text()
    _, events = read_cast(out / "recording.cast")
    assert "stopped background command" in cast_text(events)
    # The mock is gone: its port no longer answers.
    import socket

    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", 8765), timeout=0.5):
        pass


def test_recovery_moves_are_recorded(catalogue, tmp_path):
    report, out = run_fixture(catalogue, "greeter-env", tmp_path)
    assert "copied .env.example to .env" in report["final_state"]
    assert "mkdir -p out" in report["final_state"]
    steps = json.loads((out / "harness.json").read_text())["steps"]
    run = [s for s in steps if s["phase"] == "run"][0]
    assert run["recovered"] and [m.split(":")[0] for m in run["recovery"]] == ["dotenv", "mkdir"]
    assert (tmp_path / "project" / ".env").exists()


def test_no_recovery_leaves_the_project_alone(catalogue, tmp_path):
    report, _ = run_fixture(catalogue, "banner-sh", tmp_path, "--no-recovery")
    assert "Permission denied" in report["final_state"]
    assert not os.access(tmp_path / "project" / "bin" / "banner.sh", os.X_OK)


def test_hang_is_killed_by_command_timeout(catalogue, tmp_path):
    started = time.monotonic()
    report, out = run_fixture(catalogue, "tickerd", tmp_path, "--command-timeout", "1")
    assert time.monotonic() - started < 15
    assert report["install_ok"] is True
    assert report["ran_ok"] is False
    assert report["errors_encountered"] == 1 and report["errors_fixed"] == 0
    assert report["test_depth"] == "tier3_none"
    assert "was killed after 1 s" in report["final_state"]
    assert "--command-timeout" in (out / "log.txt").read_text()
    _, events = assert_valid_cast(out / "recording.cast")
    assert "tickerd listening on" in cast_text(events)
    step = json.loads((out / "harness.json").read_text())["steps"][-1]
    assert step["timed_out"] is True and step["recovery"] == []


def test_killed_harness_leaves_a_valid_partial_recording(catalogue, tmp_path):
    """The container killed at its budget: no report, but the recording and log so far are valid."""
    c = catalogue["tickerd"]
    project = checkout(c["repo_url"], c["commit"], tmp_path / "project")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, str(RUNNER), "--project", str(project), "--out", str(out)], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            cast = out / "recording.cast"
            if cast.exists() and "tickerd listening" in cast.read_text():
                break
            time.sleep(0.1)
        else:
            pytest.fail("the hanging step never showed up in the recording")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kill_leftovers(tmp_path)
    assert not (out / "report.json").exists()
    _, events = assert_valid_cast(out / "recording.cast")
    assert "python3 tickerd.py" in cast_text(events)
    assert "STEP run: python3 tickerd.py" in (out / "log.txt").read_text()


def kill_leftovers(root: Path) -> None:
    """The killed harness left its step running (a container would take it down): end it by pid."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(root)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


# --- small READMEs written here ---------------------------------------------------------------------


def write_project(tmp_path: Path, readme: str, files: dict[str, str] | None = None) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text(readme)
    for name, text in (files or {}).items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


def test_no_readme_still_reports(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    proc, report = run_harness(project, tmp_path / "out")
    assert proc.returncode == 0
    assert report["install_ok"] is False and report["ran_ok"] is False
    assert report["final_state"] == "No README was found in the project, so nothing was installed or run."


def test_shell_state_carries_over_between_commands(tmp_path):
    readme = """# t

## Install

```sh
mkdir -p sub
cd sub
export GREETING=hello
```

## Usage

```sh
echo "$GREETING from $(basename "$PWD")" > ../out.txt
```

## Verify

See `out.txt`.
"""
    project = write_project(tmp_path, readme)
    proc, report = run_harness(project, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert (project / "out.txt").read_text() == "hello from sub\n"
    assert report["test_depth"] == "tier1_real"
    assert "hello from sub" in report["verified_how"]


def test_python_alias_move(tmp_path):
    readme = (
        "# t\n\n## Usage\n\n```sh\npython -c 'print(42)' > answer.txt\n```\n\n## Verify\n\n`answer.txt`\n"
    )
    project = write_project(tmp_path, readme)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    if not Path("/usr/bin/python3").exists() or Path("/usr/bin/python").exists():
        pytest.skip("needs /usr/bin/python3 and no /usr/bin/python")
    proc, report = run_harness(project, tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (report["errors_encountered"], report["errors_fixed"], report["ran_ok"]) == (1, 1, True)
    assert "`python` not found" in report["final_state"]
    proc, report = run_harness(project, tmp_path / "out2", "--no-recovery", env=env)
    assert (report["errors_encountered"], report["errors_fixed"], report["ran_ok"]) == (1, 0, False)


def test_sudo_move_as_root(tmp_path):
    if os.geteuid() != 0 or shutil.which("sudo", path="/usr/sbin:/usr/bin:/sbin:/bin"):
        pytest.skip("needs root and no sudo, like the attempt image")
    readme = "# t\n\n## Usage\n\n```sh\nsudo -E touch made.txt\n```\n"
    project = write_project(tmp_path, readme)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    proc, report = run_harness(project, tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (report["ran_ok"], report["errors_encountered"], report["errors_fixed"]) == (True, 1, 1)
    assert (project / "made.txt").exists()
    assert "`sudo` not found and already root" in report["final_state"]
    (project / "made.txt").unlink()
    _, report = run_harness(project, tmp_path / "out2", "--no-recovery", env=env)
    assert (report["ran_ok"], report["errors_encountered"], report["errors_fixed"]) == (False, 1, 0)
    assert "sudo: command not found" in report["final_state"]


def test_undecodable_output_is_not_verified(tmp_path):
    readme = "# t\n\n## Run\n\n```sh\nprintf 'not a png' > pic.png\n```\n\n## Verify\n\nOpen `pic.png`.\n"
    project = write_project(tmp_path, readme)
    proc, report = run_harness(project, tmp_path / "out")
    assert proc.returncode == 0
    assert report["ran_ok"] is True
    assert report["test_depth"] == "tier3_none"
    assert report["verified_how"].startswith("not verified: ")
    assert "no PNG signature" in report["verified_how"]
    assert report["errors_encountered"] == 1 and report["errors_fixed"] == 0


def test_ran_but_nothing_named_to_decode(tmp_path):
    project = write_project(tmp_path, "# t\n\n## Usage\n\n```bash\necho hi\n```\n")
    _, report = run_harness(project, tmp_path / "out")
    assert (report["install_ok"], report["ran_ok"], report["test_depth"]) == (True, True, "tier3_none")
    assert report["verified_how"] == "not verified: the README names no output file to decode"
    assert report["errors_encountered"] == 0


def test_bad_usage_exits_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--project", str(tmp_path / "missing"), "--out", str(tmp_path / "o")],
        capture_output=True,
    )
    assert proc.returncode == 2


# --- README parsing ---------------------------------------------------------------------------------

SAMPLE = """# Project

Intro with `not/a/file.wav` outside any categorised section.

## Installation

```bash
./configure --prefix=/usr \\
  --quiet
# a comment
$ make
```

```python
print("never run")
```

```
unlabelled: never run
```

Quick start
-----------

```console
$ ./tool --demo
demo output line
$ ./tool --version
tool 1.0
```

### Examples

```sh
./tool example.txt
```

## Verification

Decode `out/tone.wav` and `out/meta.json`; ignore `--flag`, `https://x.y/z.png` and `$HOME/a.txt`.

```sh
ls out
```

## Verify with a mock service

```sh
python3 mock.py --port 9001 &
API=http://127.0.0.1:9001 ./tool fetch > out/fetched.json
```

The result lands in `out/fetched.json`.

## License

```sh
echo never run
```
"""


def test_parse_readme_sections():
    plan = parse_readme(SAMPLE)
    assert plan.install == ["./configure --prefix=/usr \\\n  --quiet", "make"]
    assert plan.run == ["./tool --demo", "./tool --version", "./tool example.txt"]
    assert plan.verify == ["ls out"]
    assert plan.verify_artifacts == ["out/tone.wav", "out/meta.json"]
    assert plan.mock == [
        "python3 mock.py --port 9001 &",
        "API=http://127.0.0.1:9001 ./tool fetch > out/fetched.json",
    ]
    assert plan.mock_artifacts == ["out/fetched.json"]
    assert plan.mock_ports == [9001]


@pytest.mark.parametrize(
    ("heading", "category"),
    [
        ("Install", "install"),
        ("Installation", "install"),
        ("Setup", "install"),
        ("Building from source", "install"),
        ("Compiling", "install"),
        ("Prerequisites", "install"),
        ("Installing and Updating", "install"),
        ("Usage", "run"),
        ("Running the tests", "run"),
        ("Quick start", "run"),
        ("Getting Started", "run"),
        ("Examples", "run"),
        ("Verify installation", "run"),
        ("Verify", "verify"),
        ("Verifying the output", "verify"),
        ("Verify with a mock service", "mock"),
        ("Development", "dev"),
        ("Contributing", "dev"),
        ("Configuration", "skip"),
        ("Environment variables", "skip"),
        ("Advanced usage", "skip"),
        ("Upgrading", "skip"),
        ("Uninstall", "skip"),
        ("Licence", "skip"),
        ("Pronouncing the name", None),
    ],
)
def test_classify_heading(heading, category):
    assert classify_heading(heading) == category


def test_console_blocks_only_take_prompted_lines():
    assert block_commands("console", ["$ a", "output", "$ b \\", "  --c", "more output"])[0] == [
        "a",
        "b \\\n  --c",
    ]
    # A shell block that shows prompts shows output too: the unprompted line is output.
    assert block_commands("sh", ["", "# note", "$ x", "y"])[0] == ["x"]
    assert block_commands("sh", ["", "# note", "x", "y"])[0] == ["x", "y"]


def test_headings_inherit_and_reset():
    text = "## Usage\n\n### From a file\n\n```sh\nrun-a\n```\n\n## FAQ\n\n```sh\nrun-b\n```\n"
    assert parse_readme(text).run == ["run-a"]
    # A skipped heading covers its subsections, whatever their own words.
    text = "## Configuration\n\n### Usage\n\n```sh\nrun-c\n```\n"
    assert parse_readme(text).run == []


def test_fence_inside_code_is_not_a_heading():
    text = "## Usage\n\n````sh\n# Install\nrun-a\n```\n````\n"
    plan = parse_readme(text)
    assert plan.install == []
    assert plan.run == ["run-a", "```"]


# --- decoders and constraints -----------------------------------------------------------------------


def test_decoders(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    assert decode.decode(str(empty))[0] is False
    js = tmp_path / "a.json"
    js.write_text('{"a": 1}')
    assert decode.decode(str(js)) == (True, f'JSON {js}: parsed an object with 1 key(s): a; {{"a": 1}}')
    bad = tmp_path / "b.json"
    bad.write_text("{")
    assert decode.decode(str(bad))[0] is False
    silent = tmp_path / "s.wav"
    with wave.open(str(silent), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 800)
    ok, line = decode.decode(str(silent))
    assert ok and "decoded 800 frames" in line and "every sample is silent" in line
    truncated = tmp_path / "t.wav"
    truncated.write_bytes(silent.read_bytes()[:-100])
    assert decode.decode(str(truncated))[0] is False
    assert decode.decode(str(tmp_path / "nope.png")) == (
        False,
        f"PNG {tmp_path / 'nope.png'}: file not found",
    )
    assert decode.decode(str(tmp_path / "x.bin"))[0] is False


def test_png_decoder_checks_crc_and_data(catalogue, tmp_path):
    report, _ = run_fixture(catalogue, "pixelart-py", tmp_path)
    png = tmp_path / "project" / "out" / "gradient.png"
    ok, line = decode.decode(str(png))
    assert ok and "2048 distinct colour value(s)" in line
    corrupt = bytearray(png.read_bytes())
    corrupt[60] ^= 0xFF  # inside IDAT
    bad = tmp_path / "bad.png"
    bad.write_bytes(bytes(corrupt))
    ok, line = decode.decode(str(bad))
    assert not ok and "CRC" in line


def test_harness_is_standard_library_only():
    siblings = {p.stem for p in HARNESS_DIR.glob("*.py")}  # the harness's own modules, imported as scripts
    allowed = set(sys.stdlib_module_names) | siblings
    for path in HARNESS_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: a sibling module
                    continue
                names = [(node.module or "").split(".")[0]]
            else:
                continue
            for name in names:
                assert name in allowed or name == "__future__", f"{path.name} imports {name}"


# --- in the real runner image (python3, git, ca-certificates; no network) ---------------------------


def _runner_image() -> str | None:
    image = os.environ.get("ARGUSIC_RUNNER_IMAGE", "argusic-runner:bookworm")
    try:
        done = subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return image if done.returncode == 0 else None


@pytest.mark.docker
@pytest.mark.slow
def test_in_the_runner_image(catalogue, tmp_path):
    """Both agents on every fixture inside the minbase image, networking off, harness mounted read-only."""
    image = _runner_image()
    if image is None:
        pytest.skip("no Docker daemon or no runner image")
    import uuid

    for (project_id, agent), expected in sorted(EXPECTED.items()):
        c = catalogue[project_id]
        out = tmp_path / f"{project_id}-{agent}"
        out.mkdir()
        script = (
            "set -u; git config --global --add safe.directory '*'; "
            "mkdir -p /workspace/project && cd /workspace/project && git init -q . "
            f"&& git fetch -q --depth 1 file:///forge/source {c['commit']} "
            "&& git -c advice.detachedHead=false checkout -q FETCH_HEAD || exit 90; "
            "exec python3 /opt/argusic/harness/readme_runner.py --project /workspace/project --out /out "
            + " ".join(DRIVERS[agent].harness_args)
        )
        done = subprocess.run(
            ["docker", "run", "--rm", "--name", f"argusic-harness-test-{uuid.uuid4().hex[:12]}"]
            + ["--network", "none", "-v", f"{HARNESS_DIR}:/opt/argusic/harness:ro"]
            + ["-v", f"{c['repo_url']}:/forge/source:ro", "-v", f"{out}:/out", image, "bash", "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (project_id, agent, done.stderr)
        report = json.loads((out / "report.json").read_text())
        got = tuple(
            report[k] for k in ("install_ok", "ran_ok", "errors_encountered", "errors_fixed", "test_depth")
        )
        assert got == expected, (project_id, agent, report)
        assert_valid_cast(out / "recording.cast")
        if report["test_depth"] != "tier3_none":
            assert "/usr/bin/python3 /opt/argusic/harness/decode.py" in report["verified_how"]


# --- reading READMEs as a careful engineer would -----------------------------------------------------


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("$ make test", "make test"),
        ("% ./configure", "./configure"),
        ("> pip install foo", "pip install foo"),
        ("› git shortlog -s", "git shortlog -s"),
        ("➜ npm test", "npm test"),
        ("▶ gron testdata/two.json", "gron testdata/two.json"),
        ("user@host:~/src$ cargo build", "cargo build"),
        ("(venv) $ pytest -q", "pytest -q"),
        ("PS C:\\> choco install x", "choco install x"),
    ],
)
def test_prompts_of_every_usual_form_are_stripped(line, command):
    assert block_commands("console", [line, "some output line"])[0] == [command]


def test_root_prompts_python_sessions_and_output():
    # `#` is a root prompt only in a block with prompts, and only before a command.
    assert block_commands("", ["$ ./configure", "$ make", "# make install", "# see the docs"])[0] == [
        "./configure",
        "make",
        "make install",
    ]
    assert block_commands("", [">>> import foo", ">>> foo.run()"])[0] == []
    assert block_commands("sh", ["#!/bin/sh", "echo this is a script file"])[0] == []


def test_unlabelled_and_indented_blocks_are_decided_by_content():
    text = """# frobnicate

## Usage

    frobnicate --help
    Usage: frobnicate [OPTIONS]

```
Date and time: 2023-12-26 19:10:31
```

```
make check
```

    Just some indented prose, the kind a list continuation has.
"""
    plan = parse_readme(text)
    # `frobnicate` is the README's title: the project's own command. Its usage line and the date are
    # output; the indented sentence is prose.
    assert plan.run == ["frobnicate --help", "make check"]


def test_console_block_without_prompts_and_alternatives_in_comments():
    text = """# t

## Installation

```console
# Alpine Linux
apk add tool
# Cargo
cargo install tool
# or
cargo binstall tool
```
"""
    assert parse_readme(text).install == ["cargo install tool"]


def test_multi_line_constructs_are_one_command():
    lines = [
        "greet() {",
        '  echo "hello $1"',
        "}",
        "if [ -d build ]; then",
        "  rm -rf build",
        "fi",
        "for f in a b; do",
        "  echo $f",
        "done",
        "cat > conf.ini <<EOF",
        "[x]",
        "EOF",
        "curl -s https://example.org/x |",
        "  sort |",
        "  uniq",
    ]
    cmds = block_commands("sh", lines)[0]
    assert len(cmds) == 5
    assert cmds[0].startswith("greet() {") and cmds[0].endswith("}")
    assert cmds[3].splitlines() == ["cat > conf.ini <<EOF", "[x]", "EOF"]


def test_configuration_sections_never_install():
    text = """# t

## Installation

```sh
pip install .
```

## Configuration

```sh
export TOOL_TOKEN=abc
TOOL_HOME=/opt/tool
pip install extra-plugin
```
"""
    plan = parse_readme(text)
    assert plan.install == ["pip install ."]
    assert plan.run == []


def test_install_route_ranking():
    text = """# tool

## Installation

### macOS

```sh
brew install tool
```

### From PyPI

```sh
pip install tool
```

### From source

```sh
git clone https://github.com/someone/tool.git
cd tool
pip install -e .
```

## Quick start

```sh
tool --version
```
"""
    plan = parse_readme(text)
    # This checkout over a registry release; another system's route never; the clone is already here.
    assert plan.install == ["pip install -e ."]
    assert plan.run == ["tool --version"]
    assert "install route: From source" in " ".join(plan.notes)


def test_checkout_is_looked_at(tmp_path):
    (tmp_path / "autogen.sh").write_text("")
    (tmp_path / "data.csv").write_text("a\n")
    text = """# t

## Build

```sh
./configure
make
```

If you cloned from git, generate the configure script first:

```sh
./autogen.sh
```

## Usage

```sh
tool data.csv
tool your_file.csv
python hello.py
```
"""
    plan = parse_readme(text, checkout=Checkout.from_dir(str(tmp_path)))
    # No configure script in the checkout: the generator runs first.
    assert plan.install == ["./autogen.sh", "./configure", "make"]
    # hello.py and your_file.csv are the reader's files, not in the checkout.
    assert plan.run == ["tool data.csv"]


@pytest.mark.parametrize(
    ("name", "text", "install"),
    [
        (
            "README.rst",
            "Tool\n====\n\nInstall\n-------\n\n.. code-block:: bash\n\n   pip install tool\n",
            "pip install tool",
        ),
        (
            "README.rst",
            "Tool\n====\n\nInstallation\n------------\n\nRun::\n\n    $ make install\n",
            "make install",
        ),
        ("README.mkdn", "# Tool\n\n## Install\n\n```\nmake install\n```\n", "make install"),
        ("README.markdown", "# Tool\n\n## Install\n\n    $ make install\n", "make install"),
        ("README.txt", "Tool\n\nINSTALLATION\n\n    make install\n", "make install"),
        ("README", "Tool\n\n* Installation\n\n\t$ ./configure && make\n", "./configure && make"),
        ("readme.MD", "# Tool\n\n## Install\n\n```sh\nmake install\n```\n", "make install"),
    ],
)
def test_readme_variants(tmp_path, name, text, install):
    (tmp_path / name).write_text(text)
    path = find_readme(str(tmp_path))
    assert path is not None and os.path.basename(path) == name
    assert parse_readme(text, name).install == [install]


def test_readme_preference_order(tmp_path):
    for name in ("README", "README.rst", "readme.md"):
        (tmp_path / name).write_text("x")
    assert os.path.basename(find_readme(str(tmp_path))) == "readme.md"
    (tmp_path / "README.md").mkdir()  # a folder is not a README
    assert os.path.basename(find_readme(str(tmp_path))) == "readme.md"


# --- running blocks as scripts --------------------------------------------------------------------------


def test_a_block_runs_as_one_script_with_each_command_at_its_prompt(tmp_path):
    readme = """# t

## Usage

```sh
greet() {
  printf '%s\\n' "hello $1" >> out.txt
}
NAME=world
if [ -n "$NAME" ]; then
  greet "$NAME"
fi
for i in 1 2; do greet "$i"; done
```

```sh
greet again
echo "$NAME" >> out.txt
```
"""
    project = write_project(tmp_path, readme)
    proc, report = run_harness(project, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    # A function and a plain variable carry over to the next block, as in one shell session.
    assert (project / "out.txt").read_text() == "hello world\nhello 1\nhello 2\nhello again\nworld\n"
    assert (report["install_ok"], report["ran_ok"], report["errors_encountered"]) == (True, True, 0)
    _, events = assert_valid_cast(tmp_path / "out" / "recording.cast")
    text = cast_text(events)
    for command in ("NAME=world", 'for i in 1 2; do greet "$i"; done', "greet again"):
        assert f"$ \x1b[0m{command}\r\n" in text
    steps = json.loads((tmp_path / "out" / "harness.json").read_text())["steps"]
    assert [s["command"].split("\n")[0] for s in steps] == [
        "greet() {",
        "NAME=world",
        'if [ -n "$NAME" ]; then',
        'for i in 1 2; do greet "$i"; done',
        "greet again",
        'echo "$NAME" >> out.txt',
    ]


def test_a_block_stops_at_its_first_failure_and_recovery_resumes_there(tmp_path):
    readme = """# t

## Usage

```sh
echo first >> trace.txt
./bin/tool.sh
echo third >> trace.txt
```
"""
    project = write_project(tmp_path, readme, {"bin/tool.sh": "#!/bin/sh\necho tool >> trace.txt\n"})
    proc, report = run_harness(project, tmp_path / "out", "--no-recovery")
    assert proc.returncode == 0, proc.stderr
    assert (report["ran_ok"], report["errors_encountered"], report["errors_fixed"]) == (False, 1, 0)
    assert "`./bin/tool.sh` exited with code 126" in report["final_state"]
    assert (project / "trace.txt").read_text() == "first\n"  # the third command never ran
    (project / "trace.txt").unlink()
    proc, report = run_harness(project, tmp_path / "out2")
    assert (report["ran_ok"], report["errors_encountered"], report["errors_fixed"]) == (True, 1, 1)
    assert "chmod +x bin/tool.sh" in report["final_state"]
    # The retry resumed at the failing command: the first one ran once.
    assert (project / "trace.txt").read_text() == "first\ntool\nthird\n"


def test_no_claims_without_observation(tmp_path):
    # Nothing that can run here: no install claim.
    project = write_project(tmp_path, "# t\n\nA library. See the docs.\n")
    _, report = run_harness(project, tmp_path / "out")
    assert (report["install_ok"], report["ran_ok"]) == (False, False)
    assert "names no install, run or test command" in report["final_state"]
    # Nothing to install, and the run fails: nothing proves the project usable.
    project2 = tmp_path / "p2"
    project2.mkdir()
    (project2 / "README.md").write_text("# t\n\n## Usage\n\n```sh\nfalse\n```\n")
    _, report = run_harness(project2, tmp_path / "out2")
    assert (report["install_ok"], report["ran_ok"], report["errors_encountered"]) == (False, False, 1)
    # Nothing to install, and the run succeeds: that is the proof.
    project3 = tmp_path / "p3"
    project3.mkdir()
    (project3 / "README.md").write_text("# t\n\n## Usage\n\n```sh\ntrue\n```\n")
    _, report = run_harness(project3, tmp_path / "out3")
    assert (report["install_ok"], report["ran_ok"]) == (True, True)
    assert report["final_state"].startswith("Nothing needed installing")


def test_command_timeout_is_per_command_in_a_block(tmp_path):
    # Three 1 s commands take longer together than the 2.5 s limit, which bounds each one.
    readme = "# t\n\n## Usage\n\n```sh\nsleep 1\nsleep 1\nsleep 1\nsleep 60\n```\n"
    project = write_project(tmp_path, readme)
    proc, report = run_harness(project, tmp_path / "out", "--command-timeout", "2.5")
    steps = json.loads((tmp_path / "out" / "harness.json").read_text())["steps"]
    assert [s["ok"] for s in steps] == [True, True, True, False]
    assert steps[-1]["timed_out"] is True
    assert "was killed after 2.5 s" in report["final_state"]


# --- the corpus of real READMEs -----------------------------------------------------------------------

# What scripts/readme_corpus.py measured when the corpus was committed: a floor, so that a change to
# the parser cannot lower it unnoticed (raise these when the parser gets better).
CORPUS_RIGHT_AT_LEAST = 0.77
CORPUS_WRONG_AT_MOST = 0.02


def test_corpus_picks_stay_at_least_as_good():
    script = Path(__file__).resolve().parents[2] / "scripts" / "readme_corpus.py"
    done = subprocess.run(
        [sys.executable, str(script), "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["total"] >= 50
    assert result["shares"]["right"] >= CORPUS_RIGHT_AT_LEAST, result["counts"]
    assert result["shares"]["wrong"] <= CORPUS_WRONG_AT_MOST, result["counts"]


def test_corpus_fixtures_are_complete_and_licensed():
    corpus = Path(__file__).resolve().parents[1] / "fixtures" / "readmes"
    permissive = re.compile(
        r"\b(MIT|BSD-[23]-Clause|Apache-2\.0|ISC|Zlib|PostgreSQL|Unlicense|public domain)\b"
    )
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        names = {p.name for p in folder.iterdir()}
        assert {"SOURCE", "EXPECTED", "FILES"} <= names, folder.name
        assert len(names - {"SOURCE", "EXPECTED", "FILES"}) == 1, folder.name
        source = (folder / "SOURCE").read_text()
        assert re.search(r"^repository: https://github\.com/[\w.-]+/[\w.-]+$", source, re.M), folder.name
        assert re.search(r"^commit: [0-9a-f]{40}$", source, re.M), folder.name
        assert permissive.search(source.split("licence:", 1)[1]), folder.name


def test_silent_steps_after_output_never_stall_the_block(tmp_path):
    """A block whose commands print and then fall silent: the recorder once drained the terminal while
    answering a step, then blocked reading the empty terminal from a stale select result while the
    script waited for its answer (it hung about one run in three). 120 steps must all run."""
    lines = []
    for n in range(60):
        lines += [f"echo step-{n}", "true"]
    project = write_project(tmp_path, "# t\n\n## Usage\n\n```bash\n" + "\n".join(lines) + "\n```\n")
    proc, report = run_harness(project, tmp_path / "out", "--command-timeout", "20", timeout=120)
    assert proc.returncode == 0 and report is not None
    steps = json.loads((tmp_path / "out" / "harness.json").read_text())["steps"]
    assert len(steps) == 120 and all(step["ok"] for step in steps)
