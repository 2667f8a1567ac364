"""Running an item's tests in one state of its repository, in a fresh grader container.

A *state* is base's files (exported with ``git archive`` into a real folder: every path resolved, no
symlinked temp folder, so reported paths and ours agree — the seed's pitfall that made every p2p fail)
plus patches applied in order with ``git apply``. The state's folder is bind-mounted at
``/workspace/repo`` of a container of the grader image with networking off, read-only root, every
capability dropped, no new privileges, the unprivileged user ``agent`` and CPU/memory/pid limits. In it
the setup command runs, then the test command with ``--junitxml=/out/report-0.xml`` appended (or put
where the argv says ``{junitxml}``). Results come from that JUnit XML, read as hostile input: size
capped, no symlink followed, no DTD or entity, a bounded number of test cases. Test files with failing
tests of interest are re-run alone (same container: what a flaky test left in /tmp stays, as on a
person's machine) up to three times each.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from junitparser import Error, Failure, JUnitXml, Skipped

from argusic.sandbox.containment import AGENT_GID, AGENT_HOME, AGENT_UID, locked_container_options

GRADER_IMAGE = "argusic-grader:bookworm"
GRADER_IMAGE_ENV = "ARGUSIC_GRADER_IMAGE"
GRADER_LAYOUT_LABEL = "argusic.grader.layout"
GRADER_LAYOUT = "1"  # scripts/build_grader_image.sh
CONTAINER_LABEL = "argusic.repair.run"
REPO_IN_CONTAINER = "/workspace/repo"
OUT_IN_CONTAINER = "/out"
JUNIT_PLACEHOLDER = "{junitxml}"
MAX_REPORT_BYTES = 16 * 1024 * 1024
MAX_TEST_CASES = 200_000
MAX_TEST_ID_CHARS = 2000
MAX_OUTPUT_BYTES = 256 * 1024  # of a step's stdout+stderr kept for the record's detail
MAX_RERUNS = 3
MAX_RERUN_FILES = 50
OUTCOMES = ("passed", "failed", "error", "skipped")

# The repository is data: no user or system configuration, no prompts; any owner accepted (the
# items' repositories are often another user's checkout); diffs run with --no-ext-diff --no-textconv
# so a repository's own configuration cannot run a program.
GIT_ENV_BASE = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "*",
    "LC_ALL": "C",
}


class StateError(Exception):
    """A state could not be made (export or a patch that does not apply). `step` names which."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(message)
        self.step = step


def grader_image() -> str:
    return os.environ.get(GRADER_IMAGE_ENV) or GRADER_IMAGE


def _git_env(cwd: Path | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir(), **GIT_ENV_BASE}
    if cwd is not None:  # never let `git apply` find an enclosing repository and apply relative to it
        env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)
    return env


def git(
    args: Sequence[str], *, cwd: Path | None = None, input: bytes | None = None, timeout: float = 600
) -> bytes:
    """Run git; its stdout, or StateError("git", last stderr line)."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, input=input, capture_output=True, timeout=timeout, env=_git_env(cwd)
        )
    except subprocess.TimeoutExpired as err:
        raise StateError("git", f"git {args[0]} took over {timeout:.0f} s") from err
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        raise StateError("git", f"git {args[0]}: {' / '.join(lines[-3:])[:600]}")
    return done.stdout


# ---------------------------------------------------------------------------------------------------
# Patches


def patch_chunks(patch: bytes) -> list[bytes]:
    """A git-format patch cut at its ``diff --git`` lines (anything before the first is dropped)."""
    chunks: list[bytes] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith(b"diff --git ") or not chunks:
            chunks.append(b"")
        chunks[-1] += line
    return [c for c in chunks if c.startswith(b"diff --git ")]


def patch_numstat(patch: bytes) -> list[tuple[int | None, int | None, list[str]]]:
    """(added, removed, paths) per file of a patch by ``git apply --numstat -z`` (None: binary); a
    rename lists both paths. StateError when git cannot read it as a patch."""
    if not patch.strip():
        return []
    with tempfile.TemporaryDirectory() as empty:
        out = git(["apply", "--numstat", "-z", "-"], cwd=Path(empty), input=patch)
    fields = out.split(b"\0")
    rows = []
    i = 0
    while i < len(fields) and fields[i]:
        added, removed, path = fields[i].split(b"\t", 2)
        paths = [path]
        if path == b"":  # rename/copy: the two paths follow
            paths = [fields[i + 1], fields[i + 2]]
            i += 2
        i += 1
        rows.append((
            None if added == b"-" else int(added),
            None if removed == b"-" else int(removed),
            [p.decode("utf-8", errors="surrogateescape") for p in paths],
        ))  # fmt: skip
    return rows


def patch_paths(patch: bytes) -> list[str]:
    return sorted({p for _, _, paths in patch_numstat(patch) for p in paths})


def filter_patch(patch: bytes, keep) -> bytes:
    """The chunks of a git-format patch whose every path satisfies `keep(path)`."""
    kept = [c for c in patch_chunks(patch) if all(keep(p) for p in patch_paths(c))]
    return b"".join(kept)


def _glob_escape(path: str) -> str:
    return re.sub(r"([*?\[\\])", r"\\\1", path)


def apply_patch(tree: Path, patch: bytes, *, exclude: Iterable[str] = (), step: str = "patch") -> None:
    """`git apply` in the state's folder; StateError(step, why) when it does not apply."""
    if not patch.strip():
        return
    args = ["apply", "--binary", "--whitespace=nowarn"]
    args += [f"--exclude={_glob_escape(p)}" for p in exclude]
    try:
        git([*args, "-"], cwd=tree, input=patch)
    except StateError as err:
        raise StateError(step, str(err)) from None


# ---------------------------------------------------------------------------------------------------
# States


def real_temp_dir(prefix: str) -> Path:
    """A new folder under the temp root with every symlink resolved (macOS /tmp -> /private/tmp)."""
    return Path(os.path.realpath(tempfile.mkdtemp(prefix=prefix)))


def export_base(git_dir: Path, commit: str, dest: Path) -> None:
    """base's files (no .git) into `dest` by ``git archive | tar``."""
    archive = git(["--git-dir", str(git_dir), "archive", "--format=tar", commit], timeout=900)
    dest.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["tar", "-x", "--no-same-owner", "--no-same-permissions", "-C", str(dest)],
        input=archive, capture_output=True, timeout=900,
    )  # fmt: skip
    if done.returncode != 0:
        raise StateError("export", f"tar: {done.stderr.decode(errors='replace').strip()[:300]}")


def materialise(
    git_dir: Path, base: str, patches: Sequence[tuple[str, bytes, Sequence[str]]], dest: Path
) -> Path:
    """Export base into `dest` (resolved) and apply (step, patch, excluded paths) in order."""
    dest = Path(os.path.realpath(dest))
    try:
        export_base(git_dir, base, dest)
    except StateError as err:
        raise StateError("export", str(err)) from None
    for step, patch, exclude in patches:
        apply_patch(dest, patch, exclude=exclude, step=step)
    return dest


# ---------------------------------------------------------------------------------------------------
# JUnit XML


class ReportError(Exception):
    """A JUnit XML report we refuse (too big, not a regular file, malformed, entities)."""


def read_report(path: Path, cap: int = MAX_REPORT_BYTES) -> bytes | None:
    """The report's bytes, None when absent; ReportError when a symlink, not a file, or over `cap`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ReportError(f"{path.name}: cannot open ({err.strerror}); a symlink is refused") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ReportError(f"{path.name}: not a regular file")
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise ReportError(f"{path.name}: over {cap} bytes")
    return data


@dataclass
class Case:
    test_id: str
    outcome: str
    file: str | None  # the `file` attribute when the report gives one


def parse_junit(data: bytes) -> list[Case]:
    """Test cases of a JUnit XML report (junitparser on a parser with no DTD, entities or network)."""
    # deferred: lxml is no declared requirement (it comes with redshift_connector); only this needs it
    from lxml import etree

    head = data[:4096].lower()
    if b"<!doctype" in head or b"<!entity" in data.lower():
        raise ReportError("report has a DTD or entity declaration: refused")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as err:
        raise ReportError(f"report is not well-formed XML: {err}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(f"report root is <{str(root.tag)[:40]}>, not <testsuites> or <testsuite>")
    suites = list(JUnitXml.fromroot(root))  # a <testsuite> root comes back wrapped as one suite
    cases: list[Case] = []
    for suite in suites:
        for case in suite:
            if len(cases) >= MAX_TEST_CASES:
                raise ReportError(f"report has over {MAX_TEST_CASES} test cases")
            classname = case.classname or ""
            name = case.name or ""
            test_id = f"{classname}::{name}"
            if len(test_id) > MAX_TEST_ID_CHARS or not name:
                continue
            results = case.result
            if any(isinstance(r, Error) for r in results):
                outcome = "error"
            elif any(isinstance(r, Failure) for r in results):
                outcome = "failed"
            elif any(isinstance(r, Skipped) for r in results):
                outcome = "skipped"
            else:
                outcome = "passed"
            file = case._elem.get("file")
            cases.append(Case(test_id, outcome, file if isinstance(file, str) else None))
    return cases


def results_of(cases: Sequence[Case]) -> dict[str, str]:
    """{test id: outcome}; a test reported twice keeps its worse outcome."""
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    results: dict[str, str] = {}
    for case in cases:
        old = results.get(case.test_id)
        if old is None or rank[case.outcome] > rank[old]:
            results[case.test_id] = case.outcome
    return dict(sorted(results.items()))


def file_of_test(case_id: str, tree: Path, reported_file: str | None = None) -> str | None:
    """The test file a test id lives in, relative to the state's root: the report's `file` attribute
    when present, else the longest dotted prefix of the classname (or of a collection error's name)
    that is a .py file of the tree."""
    if reported_file:
        candidate = PurePosixPath(reported_file)
        if not candidate.is_absolute() and ".." not in candidate.parts and (tree / candidate).is_file():
            return str(candidate)
    classname, _, name = case_id.partition("::")
    dotted = classname or name
    parts = [p for p in dotted.split(".") if p]
    for end in range(len(parts), 0, -1):
        relative = PurePosixPath(*parts[:end]).with_suffix(".py") if end else None
        if relative is not None and ".." not in relative.parts and (tree / relative).is_file():
            return str(relative)
    return None


# ---------------------------------------------------------------------------------------------------
# The container


@dataclass
class RerunFile:
    file: str
    tries: int
    passed: bool


@dataclass
class StateRun:
    """What one run of a state gave. `problem`: None, "setup_failed" or "no_report" (with `detail`)."""

    results: dict[str, str] = field(default_factory=dict)  # final, after reruns
    first_results: dict[str, str] = field(default_factory=dict)
    reruns: list[RerunFile] = field(default_factory=list)
    problem: str | None = None
    detail: str = ""
    image_id: str | None = None


@dataclass(frozen=True)
class Limits:
    cpus: float = 2.0
    memory: str = "2g"
    pids: int = 512
    tmp_bytes: int = 512 * 1024 * 1024
    setup_seconds: int = 900
    test_seconds: int = 1200
    rerun_seconds: int = 300


def image_id(image: str) -> str:
    """The image's content id ("sha256:<64 hex>"); StateError("image") when absent."""
    import docker  # deferred: the docker SDK is slow to import; only grading in a container needs it

    try:
        return docker.from_env().images.get(image).id
    except docker.errors.ImageNotFound:
        raise StateError(
            "image", f"grader image {image} not found: build it with `make grader-image`"
        ) from None
    except docker.errors.DockerException as err:
        raise StateError("image", f"docker: {err}") from None


def docker_errors() -> type[Exception]:
    import docker  # deferred: the docker SDK is slow to import; only grading in a container needs it

    return docker.errors.DockerException


def junit_argv(command: Sequence[str], report: str) -> list[str]:
    if any(JUNIT_PLACEHOLDER in a for a in command):
        return [a.replace(JUNIT_PLACEHOLDER, report) for a in command]
    return [*command, f"--junitxml={report}"]


class GraderContainer:
    """One fresh container for one state: bind-mounted tree, /out for reports, a time-bound life."""

    def __init__(self, tree: Path, out: Path, image: str, limits: Limits) -> None:
        import docker  # deferred: the docker SDK is slow to import; only grading in a container needs it

        self._docker = docker
        self.client = docker.from_env()
        self.tree, self.out, self.image, self.limits = tree, out, image, limits
        self.container = None

    def __enter__(self) -> GraderContainer:
        # The unprivileged user owns the state and /out (both private to this run).
        for path in (self.tree, self.out):
            os.chmod(path, 0o755)
        if os.geteuid() == 0:
            subprocess.run(
                ["chown", "-R", f"{AGENT_UID}:{AGENT_GID}", str(self.tree), str(self.out)], check=True
            )
        else:  # pragma: no cover - rootless hosts
            subprocess.run(["chmod", "-R", "a+rwX", str(self.tree), str(self.out)], check=True)
        life = (
            self.limits.setup_seconds + self.limits.test_seconds + MAX_RERUN_FILES * self.limits.rerun_seconds
        )
        lim = self.limits
        self.container = self.client.containers.run(
            self.image,
            ["sleep", str(life)],  # the container's whole life is bounded even if we die
            detach=True,
            name=f"argusic-repair-{secrets.token_hex(6)}",
            labels={CONTAINER_LABEL: "1"},
            auto_remove=True,  # gone by itself when its time is up, even if we died
            **locked_container_options(
                tmpfs={
                    "/tmp": f"rw,exec,size={lim.tmp_bytes}",
                    AGENT_HOME: f"rw,size=64m,uid={AGENT_UID},gid={AGENT_GID}",
                },
                volumes={
                    str(self.tree): {"bind": REPO_IN_CONTAINER, "mode": "rw"},
                    str(self.out): {"bind": OUT_IN_CONTAINER, "mode": "rw"},
                },
                working_dir=REPO_IN_CONTAINER,
                environment={"HOME": AGENT_HOME, "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "CI": "1"},
                memory=lim.memory,
                pids=lim.pids,
                cpus=lim.cpus,
                log_bytes=None,  # its steps' output is read through exec, capped: no log kept
            ),
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.container is not None:
            with contextlib.suppress(self._docker.errors.DockerException):
                self.container.remove(force=True)

    def exec(self, argv: Sequence[str], seconds: int) -> tuple[int, str]:
        """(exit code, the first MAX_OUTPUT_BYTES of stdout+stderr); 124/137 on a timeout."""
        api = self.client.api
        run = api.exec_create(
            self.container.id, ["timeout", "--kill-after=10", str(seconds), *argv], workdir=REPO_IN_CONTAINER
        )
        kept = bytearray()
        for chunk in api.exec_start(run["Id"], stream=True):
            if len(kept) < MAX_OUTPUT_BYTES:
                kept += chunk[: MAX_OUTPUT_BYTES - len(kept)]
        code = api.exec_inspect(run["Id"]).get("ExitCode")
        return (code if isinstance(code, int) else -1), kept.decode(errors="replace")


def _tail(text: str, lines: int = 8) -> str:
    return " / ".join(text.strip().splitlines()[-lines:])[-800:]


def run_state(
    tree: Path,
    test_command: Sequence[str],
    setup_command: Sequence[str] | None = None,
    *,
    rerun_interest: Iterable[str] | None = None,
    image: str | None = None,
    limits: Limits | None = None,
) -> StateRun:
    """Run the tests of the state in `tree` (see the module docstring). `rerun_interest`: the test ids
    whose failure triggers a rerun of their file (None: no reruns)."""
    image = image or grader_image()
    limits = limits or Limits()
    tree = Path(os.path.realpath(tree))
    run = StateRun(image_id=image_id(image))
    out = real_temp_dir("argusic-repair-out-")
    try:
        with GraderContainer(tree, out, image, limits) as box:
            if setup_command:
                code, output = box.exec(list(setup_command), limits.setup_seconds)
                if code != 0:
                    run.problem = "setup_failed"
                    run.detail = f"setup command exited {code}: {_tail(output)}"
                    return run
            code, output = box.exec(
                junit_argv(test_command, f"{OUT_IN_CONTAINER}/report-0.xml"), limits.test_seconds
            )
            try:
                data = read_report(out / "report-0.xml")
                cases = parse_junit(data) if data is not None else None
            except ReportError as err:
                run.problem, run.detail = "no_report", str(err)
                return run
            if cases is None:
                run.problem = "no_report"
                timed_out = f" (timed out after {limits.test_seconds} s)" if code in (124, 137) else ""
                run.detail = f"test command exited {code}{timed_out} and wrote no JUnit XML: {_tail(output)}"
                return run
            run.first_results = results_of(cases)
            run.results = dict(run.first_results)
            if rerun_interest is not None:
                _rerun_failing(box, run, cases, set(rerun_interest), test_command, limits)
    except (docker_errors(), OSError, subprocess.CalledProcessError) as err:  # our environment's fault
        run.problem = "setup_failed"
        run.detail = f"container: {str(err)[:500]}"
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return run


# Options whose next argument is a value, never a test path to drop (pytest's and Python's).
_VALUE_OPTIONS = frozenset(
    {"-m", "-c", "-p", "-k", "-o", "-W", "--rootdir", "--confcutdir", "--ignore", "--deselect"}
)


def rerun_argv(command: Sequence[str], file: str, tree: Path) -> list[str]:
    """The test command for one file alone: the command's own test paths (arguments naming a file or
    folder of the state, not an option's value) replaced by `file`."""
    kept = [command[0]]
    for before, arg in zip(command, command[1:], strict=False):
        is_path = not arg.startswith("-") and before not in _VALUE_OPTIONS
        relative = not PurePosixPath(arg).is_absolute() and ".." not in PurePosixPath(arg).parts
        if is_path and relative and (tree / arg).exists():
            continue
        kept.append(arg)
    return [*kept, file]


def _rerun_failing(
    box: GraderContainer, run: StateRun, cases: Sequence[Case], interest: set[str], test_command, limits
) -> None:
    reported = {c.test_id: c.file for c in cases}
    failing = sorted(t for t in interest if run.results.get(t) != "passed")
    by_file: dict[str, list[str]] = {}
    for test in failing:
        file = file_of_test(test, box.tree, reported.get(test))
        if file is not None:
            by_file.setdefault(file, []).append(test)
    for number, (file, tests) in enumerate(sorted(by_file.items())[:MAX_RERUN_FILES]):
        tries, passed = 0, False
        while tries < MAX_RERUNS and not passed:
            tries += 1
            name = f"rerun-{number}-{tries}.xml"
            argv = junit_argv(rerun_argv(test_command, file, box.tree), f"{OUT_IN_CONTAINER}/{name}")
            box.exec(argv, limits.rerun_seconds)
            try:
                data = read_report(box.out / name)
                results = results_of(parse_junit(data)) if data is not None else {}
            except ReportError:
                results = {}
            passed = all(results.get(t) == "passed" for t in tests)
            if passed:
                run.results.update({t: "passed" for t in tests})
        run.reruns.append(RerunFile(file, tries, passed))
