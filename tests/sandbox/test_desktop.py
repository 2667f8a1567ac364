"""Desktop applications (methodology section 7, item 6; issue #15): the virtual display in the attempt
container, its record, and what "ran" means for a GUI application to the reference agent.

Fast tests speak X11 to a small X server of our own (a Unix socket that answers the connection
set-up, QueryTree, GetWindowAttributes and GetProperty, and keeps the windows each client mapped
while the client stays connected); the slow ones run real Xvfb and a real Tk application in the
runner image, in Docker, with networking off."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from argusic.attempts.environment import Pin, attempt_display
from argusic.core.record import Display
from argusic.harness import HARNESS_DIR, xdisplay
from argusic.harness.desktop_watch import GUI_UP_SECONDS
from argusic.sandbox.executor import DISPLAY_NUMBER, _bootstrap_script, display_size, docker_available
from argusic.sources.forge import DESKTOP_CATALOGUE, FIXTURES, build_desktop_forge, build_forge, checkout

ROOT = Path(__file__).resolve().parents[2]
RUNNER = HARNESS_DIR / "readme_runner.py"
needs_docker = pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers")


# --- a small X server of our own ------------------------------------------------------------------


class FakeXServer:
    """Enough of an X server for the harness's read-only requests. A client maps a window by sending
    MapWindow (opcode 8) for a window id; the window goes away when that client disconnects, as a
    real application's windows do when its process dies."""

    ROOT_WINDOW = 0x100

    def __init__(self, number: int, size: tuple[int, int, int] = (1024, 768, 24)) -> None:
        self.number = number
        self.size = size
        self.path = f"{xdisplay.X11_SOCKET_DIR}/X{number}"
        os.makedirs(xdisplay.X11_SOCKET_DIR, mode=0o1777, exist_ok=True)
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.windows: dict[int, tuple[object, str]] = {}  # id -> (owner connection, title)
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def display(self) -> str:
        return f":{self.number}"

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _setup_reply(self) -> bytes:
        width, height, depth = self.size
        vendor = b"fake"
        body = struct.pack("<IIIIHHBBBBBBBBxxxx", 1, 0x200000, 0x1FFFFF, 0, len(vendor), 65535, 1, 0,
                           0, 0, 32, 32, 8, 255)  # fmt: skip
        body += vendor
        screen = struct.pack("<IIIIIHHHHHHIBBBB", self.ROOT_WINDOW, 0x20, 0xFFFFFF, 0, 0, width, height,
                             300, 200, 1, 1, 0x21, 0, 0, depth, 0)  # fmt: skip
        body += screen
        return struct.pack("<BxHHH", 1, 11, 0, len(body) // 4) + body

    def _serve(self, conn: socket.socket) -> None:
        seq = 0
        try:
            self._read(conn, 12)
            conn.sendall(self._setup_reply())
            while True:
                opcode, data, length = struct.unpack("<BBH", self._read(conn, 4))
                rest = self._read(conn, length * 4 - 4)
                seq = (seq + 1) & 0xFFFF
                window = struct.unpack_from("<I", rest)[0] if len(rest) >= 4 else 0
                if opcode == 8:  # MapWindow: no reply
                    with self.lock:
                        self.windows[window] = (conn, f"window {window:#x}")
                elif opcode == 15:  # QueryTree
                    with self.lock:
                        ids = sorted(self.windows)
                    head = struct.pack("<BxHIIIH14x", 1, seq, len(ids), self.ROOT_WINDOW, 0, len(ids))
                    conn.sendall(head + struct.pack(f"<{len(ids)}I", *ids))
                elif opcode == 3:  # GetWindowAttributes: viewable, not override-redirect
                    reply = bytearray(44)
                    struct.pack_into("<BBHI", reply, 0, 1, 0, seq, 3)
                    reply[26], reply[27] = xdisplay.MAP_STATE_VIEWABLE, 0
                    conn.sendall(bytes(reply))
                elif opcode == 20:  # GetProperty (WM_NAME)
                    with self.lock:
                        title = self.windows.get(window, (None, ""))[1].encode()
                    padded = title + b"\0" * (-len(title) % 4)
                    head = struct.pack("<BBHIIII12x", 1, 8, seq, len(padded) // 4, 31, 0, len(title))
                    conn.sendall(head + padded)
                else:  # BadRequest
                    conn.sendall(struct.pack("<BBHIHB21x", 0, 1, seq, 0, 0, opcode))
        except OSError:
            pass
        finally:
            with self.lock:
                for wid in [w for w, (owner, _) in self.windows.items() if owner is conn]:
                    del self.windows[wid]
            conn.close()

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


# A desktop "application" for the fake server: connects, maps one window, then stays up (or, with
# "crash", exits with status 1 after a second). Standard library only, like a project's own script.
FAKE_APP = r"""
import os, socket, struct, sys, time
number = os.environ["DISPLAY"].lstrip(":").split(".")[0]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(f"/tmp/.X11-unix/X{number}")
s.sendall(struct.pack("<BxHHHHxx", 0x6C, 11, 0, 0, 0))
head = s.recv(8); s.recv(struct.unpack_from("<H", head, 6)[0] * 4, socket.MSG_WAITALL)
s.sendall(struct.pack("<BxHI", 8, 2, 0x200001))
print("window mapped", flush=True)
if sys.argv[1:] == ["crash"]:
    time.sleep(1)
    sys.exit(1)
while True:
    time.sleep(60)
"""


@pytest.fixture
def fake_x(tmp_path: Path):
    # A display number of our own: other engineers' tests share this machine's /tmp.
    server = FakeXServer(6000 + os.getpid() % 3000)
    yield server
    server.close()


def _project(tmp_path: Path, run_block: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(FAKE_APP)
    (project / "README.md").write_text(
        "# fakeapp\n\nA desktop application: it opens a window.\n\n## Usage\n\n```sh\n"
        + run_block
        + "\n```\n"
    )
    return project


def _harness(project: Path, out: Path, display: str | None, *args: str, timeout: float = 90) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    if display:
        env["DISPLAY"] = display
    done = subprocess.run(
        [sys.executable, str(RUNNER), "--project", str(project), "--out", str(out), *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads((out / "report.json").read_text())


# --- the display probe -------------------------------------------------------------------------------


def test_probe_reads_the_size_from_the_servers_answer(fake_x, tmp_path):
    fake_x.size = (1280, 800, 24)
    assert xdisplay.describe(fake_x.display) == {"kind": "xvfb", "width": 1280, "height": 800, "depth": 24}
    out = tmp_path / "display.json"
    assert xdisplay.main(["wait", fake_x.display, "--timeout", "5", "--write", str(out)]) == 0
    assert Display.model_validate_json(out.read_text()) == Display(
        kind="xvfb", width=1280, height=800, depth=24
    )
    assert xdisplay.top_level_windows(fake_x.display) == {}


def test_probe_without_a_server_writes_nothing(tmp_path):
    out = tmp_path / "display.json"
    assert xdisplay.main(["wait", ":5999", "--timeout", "0.5", "--write", str(out)]) == 1
    assert not out.exists()
    with pytest.raises(xdisplay.XError, match="not a local display"):
        xdisplay.describe("example.org:0")


# --- the bootstrap -----------------------------------------------------------------------------------


def test_bootstrap_starts_xvfb_only_when_asked_and_checks_the_size():
    plain = _bootstrap_script("/forge/source", "/workspace/project", "a" * 40, ["true"])
    assert "Xvfb" not in plain and "DISPLAY" not in plain
    script = _bootstrap_script(
        "/forge/source", "/workspace/project", "a" * 40, ["true"], ("1280x800x24", "/opt/h", "/out")
    )
    assert f"Xvfb :{DISPLAY_NUMBER} -screen 0 1280x800x24 -nolisten tcp -noreset" in script
    assert f"/opt/h/xdisplay.py wait :{DISPLAY_NUMBER}" in script and "--write /out/display.json" in script
    assert f"&& export DISPLAY=:{DISPLAY_NUMBER}" in script  # only once the display answered
    assert script.index("Xvfb") < script.index("git fetch") < script.index("exec true")
    assert display_size("1280x800x24") == "1280x800x24"
    for bad in ("1280x800", "1280x800x24; rm -rf /", "0x800x24", "1280x800x64", "99999x800x24"):
        with pytest.raises(ValueError, match="WIDTHxHEIGHTxDEPTH"):
            display_size(bad)


# --- the record's display --------------------------------------------------------------------------------


def _pin(display: str | None) -> Pin:
    return Pin.model_construct(display=display)


@pytest.mark.parametrize(
    ("content", "pinned", "expected"),
    [
        ('{"kind": "xvfb", "width": 1280, "height": 800, "depth": 24}', "1280x800x24", (1280, 800, 24)),
        ('{"kind": "xvfb", "width": "wide"}', "1280x800x24", None),  # garbage
        ("x" * 5000, "1280x800x24", None),  # over the cap
        ('{"kind": "xvfb", "width": 640, "height": 480, "depth": 8}', "1280x800x24", None),  # not ours
        ('{"kind": "xvfb", "width": 1280, "height": 800, "depth": 24}', None, None),  # no display given
        (None, "1280x800x24", None),  # no file: no display answered
    ],
)
def test_the_record_believes_only_the_display_that_was_started(tmp_path, content, pinned, expected):
    if content is not None:
        (tmp_path / "display.json").write_text(content)
    found = attempt_display(_pin(pinned), tmp_path)
    assert (None if found is None else (found.width, found.height, found.depth)) == expected


# --- "ran" for a desktop application ---------------------------------------------------------------------


def test_a_window_that_stays_up_is_a_desktop_application_that_ran(fake_x, tmp_path):
    project = _project(tmp_path, "python3 app.py\necho after-the-window")
    report = _harness(project, tmp_path / "out", fake_x.display)  # stopped, not left to the timeout
    assert (report["install_ok"], report["ran_ok"], report["errors_encountered"]) == (True, True, 0)
    # Running is not verifying (section 16): nothing was decoded.
    assert report["test_depth"] == "tier3_none"
    assert report["verified_how"].startswith("not verified: ")
    assert "was only seen running (its main process up on " in report["verified_how"]
    assert re.search(
        r"stayed up for 1[0-9](\.[0-9])? s with window 'window 0x200001' shown", report["final_state"]
    )
    assert "is a desktop application" in report["final_state"]
    assert "then the harness stopped it; nothing was clicked" in report["final_state"]
    details = json.loads((tmp_path / "out" / "harness.json").read_text())
    gui, after = details["steps"]
    assert gui["command"] == "python3 app.py" and gui["ok"] and gui["exit_code"] == 0
    assert gui["desktop"].startswith(f"its main process started on display {fake_x.display} and stayed up")
    assert gui["seconds"] >= GUI_UP_SECONDS
    assert after["command"] == "echo after-the-window" and after["ok"] and not after["desktop"]
    log = (tmp_path / "out" / "log.txt").read_text()
    assert f"DISPLAY: a window appeared on {fake_x.display}: 'window 0x200001'" in log
    assert "after-the-window" in log
    # The application was stopped: its connection closed, its window gone.
    assert xdisplay.top_level_windows(fake_x.display) == {}


def test_a_window_that_dies_is_a_failure(fake_x, tmp_path):
    report = _harness(_project(tmp_path, "python3 app.py crash"), tmp_path / "out", fake_x.display)
    assert (report["ran_ok"], report["errors_encountered"]) == (False, 1)
    assert "`python3 app.py crash` exited with code 1" in report["final_state"]
    assert "desktop" not in report["final_state"]


def test_a_long_command_without_a_window_is_not_a_desktop_application(fake_x, tmp_path):
    # Staying up is not enough: without a window of its own it is a command that never returned.
    report = _harness(
        _project(tmp_path, "sleep 600"),
        tmp_path / "out",
        fake_x.display,
        "--command-timeout",
        str(GUI_UP_SECONDS + 3),
    )
    assert (report["ran_ok"], report["errors_encountered"]) == (False, 1)
    assert "was killed after" in report["final_state"]


def test_without_a_display_a_window_cannot_open(tmp_path):
    report = _harness(_project(tmp_path, "python3 app.py"), tmp_path / "out", None)
    assert report["ran_ok"] is False and "desktop" not in report["final_state"]


# --- the demo project -----------------------------------------------------------------------------------


def test_desktop_catalogue_is_apart_from_the_demo_cycle(tmp_path):
    catalogue = json.loads(build_desktop_forge(tmp_path).read_text())
    assert [c["project_id"] for c in catalogue["candidates"]] == ["tkclock"]
    c = catalogue["candidates"][0]
    assert c["expected_outcome_by_agent"] == {
        "readme-runner": "ran_unverified", "readme-runner-norecover": "ran_unverified"
    }  # fmt: skip
    assert (tmp_path / DESKTOP_CATALOGUE).exists()
    demo = json.loads(build_forge(tmp_path).read_text())
    assert "tkclock" not in {d["project_id"] for d in demo["candidates"]}
    assert len(demo["candidates"]) == len(FIXTURES)
    project = checkout(c["repo_url"], c["commit"], tmp_path / "tkclock")
    readme = (project / "README.md").read_text()
    assert "python3 tkclock.py --version" in readme and "python3 tkclock.py --seconds" in readme


# --- real Xvfb, real Tk, real Docker ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def desktop_image() -> str:
    """The runner image with the display (layout 3); built when the tag is older (cached by label)."""
    if shutil.which("docker") is None or not docker_available():
        pytest.skip("no Docker daemon answers")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_runner_image.sh")],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr
    from argusic.core.settings import runner_image

    return runner_image()


@pytest.mark.docker
@pytest.mark.slow
@needs_docker
def test_tk_application_end_to_end_in_docker(isolated, desktop_image):
    """A real attempt of the reference agent on the demo Tk clock: the record has the display, the
    report says it ran (its window stayed up on :99), and nothing was decoded."""
    from argusic.attempts.run import run_attempt
    from argusic.core.evidence import EvidenceStore
    from argusic.core.record import load_record_file
    from argusic.core.settings import evidence_url, forge_dir, orchestrator_config
    from argusic.core.spec import AttemptSpec
    from argusic.sandbox.executor import DockerExecutor

    catalogue = json.loads(build_desktop_forge(forge_dir()).read_text())
    c = catalogue["candidates"][0]
    spec = AttemptSpec(
        cycle_id="2026-12-desktop", agent_id="readme-runner", project_id="tkclock",
        repo_url=c["repo_url"], commit=c["commit"], tier="standard", attempt_no=1,
    )  # fmt: skip
    executor = DockerExecutor()
    assert executor.network == "none"
    path = run_attempt(spec, executor, EvidenceStore(evidence_url()))
    record = load_record_file(path)
    assert record.end_reason == "completed" and record.invalid_reason is None, record
    width, height, depth = (int(n) for n in orchestrator_config().display_size.split("x"))
    assert record.environment is not None
    assert record.environment.display == Display(kind="xvfb", width=width, height=height, depth=depth)
    assert record.environment.images[0].digest.startswith("sha256:")
    report = record.report
    assert (report.install_ok, report.ran_ok, report.errors_encountered, report.test_depth) == (
        True, True, 0, "tier3_none"
    )  # fmt: skip
    assert "`python3 tkclock.py --seconds` is a desktop application" in report.final_state
    assert "its main process started on display :99 and stayed up for 1" in report.final_state
    assert "window 'tkclock' shown" in report.final_state
    assert report.verified_how.startswith("not verified: ")
    log = (path.parent / "out" / "log.txt").read_text()
    assert "tkclock 0.2.0 (Tk 8.6)" in log  # the version command answered too
    assert "DISPLAY: a window appeared on :99: 'tkclock'" in log
    _check_the_session_video(record, path.parent / "out", desktop_image, width, height)


def _in_runner(image: str, folder: Path, script: str) -> str:
    """Run `script` (sh) in the runner image, networking off, with `folder` as /v: the host never
    decodes an attempt's media itself."""
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-u", f"{os.getuid()}:{os.getgid()}",
         "-v", f"{folder}:/v", image, "sh", "-c", script],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _check_the_session_video(record, out: Path, image: str, width: int, height: int) -> None:
    """Issue #30: the display's raw video is in the evidence, fingerprinted, decodes as a bounded video
    of the display, and one of its frames shows the application's window."""
    from argusic.attempts.video import EBML_MAGIC
    from argusic.core.evidence import EvidenceStore, sha256_of_file
    from argusic.core.settings import evidence_url
    from argusic.sandbox.launch import VIDEO_FILE, VIDEO_FPS, VIDEO_MAX_BYTES

    video = out / VIDEO_FILE
    ref = record.evidence.display_video
    assert ref is not None and record.evidence.display_video_problem is None, record.evidence
    assert (ref.sha256, ref.bytes) == sha256_of_file(video)
    assert EvidenceStore(evidence_url()).verify(ref.model_dump())
    assert 0 < ref.bytes <= VIDEO_MAX_BYTES and video.read_bytes()[:4] == EBML_MAGIC
    work = out.parent / "video-check"
    work.mkdir()
    shutil.copyfile(video, work / VIDEO_FILE)
    work.chmod(0o777)
    probe = json.loads(
        _in_runner(image, work, f"ffprobe -v error -show_streams -show_format -of json /v/{VIDEO_FILE}")
    )
    (stream,) = probe["streams"]
    assert (stream["codec_type"], stream["codec_name"]) == ("video", "h264")
    assert (stream["width"], stream["height"]) == (width, height)
    assert stream["r_frame_rate"] == f"{VIDEO_FPS}/1"
    assert "matroska" in probe["format"]["format_name"]
    # stopped cleanly by the harness (SIGINT: ffmpeg wrote its index), then sealed as it was
    assert 10 <= float(probe["format"]["duration"]) <= record.allowed_seconds + 5
    assert record.seal is not None and record.seal.status == "intact", record.seal
    # every frame's mean brightness: the display is black until the clock's window is drawn
    stats = _in_runner(
        image, work,
        f"ffprobe -v error -f lavfi -i 'movie=/v/{VIDEO_FILE},signalstats' "
        "-show_entries frame_tags=lavfi.signalstats.YAVG -of csv=p=0",
    )  # fmt: skip
    brightness = [float(line) for line in stats.split() if line.strip()]
    # the window stayed up GUI_UP_SECONDS; the last second may be lost when the container ends
    assert len(brightness) >= (GUI_UP_SECONDS - 2) * VIDEO_FPS, brightness
    assert len(brightness) <= VIDEO_FPS * (record.allowed_seconds + 5)
    assert min(brightness) < 17 < max(brightness)  # a black display, then something drawn on it
    best = brightness.index(max(brightness))
    _in_runner(image, work, f"ffmpeg -v error -i /v/{VIDEO_FILE} -vf 'select=eq(n\\,{best})' "
                            "-frames:v 1 -y /v/frame.png")  # fmt: skip
    frame = (work / "frame.png").read_bytes()
    assert frame.startswith(b"\x89PNG") and len(frame) > 1000
    if keep := os.environ.get("ARGUSIC_KEEP_VIDEO_FRAME"):  # to look at it (docs/screenshots/)
        shutil.copyfile(work / "frame.png", keep)


@pytest.mark.docker
@pytest.mark.slow
@needs_docker
def test_a_forged_display_file_is_not_recorded(isolated, desktop_image, tmp_path):
    """A project that writes garbage into /out/display.json: the attempt is valid, its display None."""
    from argusic.attempts.run import run_attempt
    from argusic.core.evidence import EvidenceStore
    from argusic.core.record import load_record_file
    from argusic.core.settings import evidence_url
    from argusic.core.spec import AttemptSpec
    from argusic.sandbox.executor import DockerExecutor

    work = tmp_path / "src"
    work.mkdir()
    (work / "README.md").write_text(
        "# forger\n\n## Usage\n\n```sh\n"
        """printf '{"kind": "xvfb", "width": "wide"}' > /out/display.json\n```\n"""
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "forge"], check=True)
    commit = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    bare = tmp_path / "forger.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    spec = AttemptSpec(
        cycle_id="2026-12-desktop", agent_id="readme-runner", project_id="forger",
        repo_url=str(bare), commit=commit, tier="standard", attempt_no=1,
    )  # fmt: skip
    path = run_attempt(spec, DockerExecutor(), EvidenceStore(evidence_url()))
    record = load_record_file(path)
    assert record.end_reason == "completed" and record.invalid_reason is None, record
    assert record.report.ran_ok is True  # the forging command itself ran
    assert json.loads((path.parent / "out" / "display.json").read_text()) == {"kind": "xvfb", "width": "wide"}
    assert record.environment is not None and record.environment.display is None
