"""The mirror cache against a real git server on 127.0.0.1 (`git daemon`), local sources under allowed
roots, and `argusic cycle run` on a catalogue of remote repositories (local executor and Docker)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from argusic.cli.main import app
from argusic.core.record import load_record_file
from argusic.cycle.pools import draw_checked_pool
from argusic.sandbox import executor as executor_mod
from argusic.sandbox.executor import docker_available
from argusic.sources import mirror
from argusic.sources.forge import build_forge, checkout
from argusic.sources.mirror import FetchPolicy, SourceUnavailable, ensure_remote, has_commit, parse_source
from conftest import free_port
from typer.testing import CliRunner

runner = CliRunner()
SERVED = ("tonegen-sh", "csvstats", "pixelart-py")
QUICK = FetchPolicy(timeout_seconds=60, tries=2, backoff_seconds=0, max_bytes=10**9)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout.strip()


@dataclass(frozen=True)
class Server:
    url: str  # git://127.0.0.1:<port>
    base: Path
    forge: Path  # the forge the served repositories were copied from
    candidates: dict[str, dict]

    def repo(self, project_id: str) -> str:
        return f"{self.url}/{project_id}.git"


@pytest.fixture(scope="module")
def git_server(tmp_path_factory: pytest.TempPathFactory):
    """`git daemon` serving copies of three demo-forge repositories on a free port of 127.0.0.1."""
    forge_dir = tmp_path_factory.mktemp("forge")
    catalogue = json.loads(build_forge(forge_dir).read_text())
    base = tmp_path_factory.mktemp("served")
    for project_id in SERVED:
        shutil.copytree(forge_dir / "repos" / f"{project_id}.git", base / f"{project_id}.git")
    port = free_port()
    proc = subprocess.Popen(
        ["git", "daemon", f"--base-path={base}", "--export-all", "--reuseaddr", "--informative-errors",
         "--listen=127.0.0.1", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("git daemon did not start")
        yield Server(
            f"git://127.0.0.1:{port}", base, forge_dir, {c["project_id"]: c for c in catalogue["candidates"]}
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


@pytest.fixture
def mirror_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "mirror"
    monkeypatch.setenv("ARGUSIC_MIRROR_DIR", str(root))
    return root


def closed_port() -> int:
    return free_port()  # bound, then released: nothing listens there


def test_remote_mirror_fetches_only_the_pinned_commit_and_is_reused(git_server, mirror_root, monkeypatch):
    served = git_server.base / "tonegen-sh.git"
    tip = git("--git-dir", str(served), "rev-parse", "main")
    pinned = git("--git-dir", str(served), "rev-parse", "main~1")  # not the tip: fetched by id
    source = parse_source(git_server.repo("tonegen-sh"))
    path = ensure_remote(source, pinned, QUICK)
    assert path == mirror_root / f"{source.digest}.git" and path.is_dir()
    assert has_commit(path, pinned) and not has_commit(path, tip)  # only the pinned commit, depth 1
    assert (path / "shallow").read_text().split() == [pinned]
    assert git("--git-dir", str(path), "rev-parse", f"refs/argusic/pinned/{pinned}") == pinned
    assert json.loads((path / "argusic-mirror.json").read_text()) == {"url": git_server.repo("tonegen-sh")}
    # The container's fetch (the executor's bootstrap) works from the mirror: pinned commit, no history.
    project = checkout(str(path), pinned, monkeypatch_tmp := mirror_root.parent / "checkout")
    assert (project / "README.md").exists() and git("-C", str(monkeypatch_tmp), "rev-parse", "HEAD") == pinned

    # Reused across cycles: a commit already there is not fetched again.
    def no_fetch(*args, **kwargs):
        raise AssertionError("fetched again")

    monkeypatch.setattr(mirror, "_fetch", no_fetch)
    assert ensure_remote(source, pinned, QUICK) == path
    # A new pinned commit of the same repository lands in the same mirror.
    monkeypatch.undo()
    monkeypatch.setenv("ARGUSIC_MIRROR_DIR", str(mirror_root))
    assert ensure_remote(source, tip, QUICK) == path and has_commit(path, tip)


def test_missing_commit_is_reported_not_retried(git_server, mirror_root, caplog):
    missing = "f" * 40
    caplog.set_level(logging.WARNING, logger="argusic.sources.mirror")
    with pytest.raises(SourceUnavailable, match=f"commit {missing} is not in {git_server.repo('csvstats')}"):
        ensure_remote(parse_source(git_server.repo("csvstats")), missing, QUICK)
    assert "retrying" not in caplog.text


def test_unreachable_host_is_retried_then_reported(mirror_root, caplog):
    url = f"git://127.0.0.1:{closed_port()}/tonegen-sh.git"
    caplog.set_level(logging.WARNING, logger="argusic.sources.mirror")
    with pytest.raises(
        SourceUnavailable, match=r"could not fetch .* after 2 tries: .*(refused|unable to connect)"
    ):
        ensure_remote(parse_source(url), "a" * 40, QUICK)
    assert caplog.text.count("retrying") == 1  # 2 tries: one retry


def test_repository_the_server_does_not_have(git_server, mirror_root):
    with pytest.raises(SourceUnavailable, match="could not fetch .*nope.git"):
        ensure_remote(parse_source(f"{git_server.url}/nope.git"), "a" * 40, QUICK)


def test_a_server_that_never_answers_times_out(mirror_root):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accept and say nothing until the test ends
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        url = f"git://127.0.0.1:{listener.getsockname()[1]}/silent.git"
        policy = FetchPolicy(timeout_seconds=2, tries=1, backoff_seconds=0, max_bytes=10**9)
        with pytest.raises(SourceUnavailable, match="timed out after 2 s"):
            ensure_remote(parse_source(url), "a" * 40, policy)
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
        listener.close()


def test_a_mirror_over_the_size_limit_is_refused_and_removed(git_server, mirror_root):
    source = parse_source(git_server.repo("pixelart-py"))
    commit = git_server.candidates["pixelart-py"]["commit"]
    policy = FetchPolicy(timeout_seconds=60, tries=1, backoff_seconds=0, max_bytes=1000)
    with pytest.raises(SourceUnavailable, match="over the mirror size limit of"):
        ensure_remote(source, commit, policy)
    assert not has_commit(mirror_root / f"{source.digest}.git", commit)


def test_local_sources_only_under_allowed_roots(git_server, tmp_path):
    repo = git_server.forge / "repos" / "csvstats.git"
    commit = git_server.candidates["csvstats"]["commit"]
    assert mirror.local_repository(str(repo), commit, [git_server.forge.resolve()]) == repo.resolve()
    with pytest.raises(SourceUnavailable, match="outside the allowed roots.*ARGUSIC_REPO_ROOTS"):
        mirror.local_repository(str(repo), commit, [tmp_path])
    link = tmp_path / "sneaky.git"  # a link inside an allowed root pointing outside it
    link.symlink_to(repo)
    with pytest.raises(SourceUnavailable, match="outside the allowed roots"):
        mirror.local_repository(str(link), commit, [tmp_path.resolve()])
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceUnavailable, match="not a bare git repository"):
        mirror.local_repository(str(tmp_path / "plain"), commit, [tmp_path.resolve()])
    with pytest.raises(SourceUnavailable, match="does not exist"):
        mirror.local_repository(str(tmp_path / "none.git"), commit, [tmp_path.resolve()])
    with pytest.raises(SourceUnavailable, match="is not in"):
        mirror.local_repository(str(repo), "b" * 40, [git_server.forge.resolve()])


def remote_catalogue(git_server: Server, folder: Path, closed: int) -> Path:
    """tonegen-sh served by URL (usable); csvstats pinned at a commit the server lacks; pixelart-py
    on a closed port; a local forge repository outside the allowed roots; a GPL candidate."""

    def cand(project_id: str, **over) -> dict:
        base = git_server.candidates[project_id]
        keep = ("project_id", "commit", "language", "licence", "has_readme", "difficulty", "size_mb")
        return {k: base[k] for k in keep} | {"popular_since": "2025-01-01"} | over

    items = [
        cand("tonegen-sh", repo_url=git_server.repo("tonegen-sh"), licence="MIT License"),
        cand("csvstats", repo_url=git_server.repo("csvstats"), commit="c" * 40),
        cand("pixelart-py", repo_url=f"git://127.0.0.1:{closed}/pixelart-py.git"),
        cand("greeter-env", repo_url=str(git_server.forge / "repos" / "greeter-env.git")),
        cand("gpl-widget", repo_url=git_server.repo("tonegen-sh"), licence="GPL-3.0-only"),
    ]
    path = folder / "remote-catalogue.json"
    path.write_text(json.dumps({"schema": "argusic.catalogue/1", "candidates": items}, indent=1))
    return path


def _bare_with_a_commit(path: Path, text: str) -> str:
    """A real bare repository at `path` with one commit of its own; the commit's id."""
    work = path.with_name(path.name + ".work")
    git("init", "--quiet", "--initial-branch=main", str(work))
    (work / "README").write_text(text)
    git("-C", str(work), "add", "README")
    git("-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", text)
    git("clone", "--quiet", "--bare", "--no-local", str(work), str(path))  # its objects in a pack
    shutil.rmtree(work)
    return git("--git-dir", str(path), "rev-parse", "HEAD")


def test_a_local_repository_borrowing_objects_from_elsewhere_is_refused(tmp_path, monkeypatch):
    """A bare repository in an allowed root whose alternates (or http-alternates, commondir, a link
    in objects/) name a repository outside it would lend that repository's commits to a cycle: refused,
    naming the file, with or without the roots check; a repository holding its own objects is not."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    secret = _bare_with_a_commit(outside / "private.git", "a private repository of the host")
    own = _bare_with_a_commit(allowed / "own.git", "a project of its own")
    roots = [allowed.resolve()]
    assert mirror.local_repository(str(allowed / "own.git"), own, roots) == (allowed / "own.git").resolve()

    borrower = allowed / "borrower.git"
    git("init", "--quiet", "--bare", str(borrower))
    (borrower / "objects/info/alternates").write_text(f"{outside / 'private.git' / 'objects'}\n")
    assert has_commit(borrower, secret)  # what git alone would accept
    for checked in (roots, None):  # the pool's check, and the attempt's (roots=None)
        with pytest.raises(SourceUnavailable, match=r"borrows objects.*objects/info/alternates exists"):
            mirror.local_repository(str(borrower), secret, checked)
    (borrower / "objects/info/alternates").write_text("../../../outside/private.git/objects\n")  # relative
    with pytest.raises(SourceUnavailable, match=r"alternates exists \(it names '\.\./\.\./\.\./outside"):
        mirror.local_repository(str(borrower), secret, roots)
    (borrower / "objects/info/alternates").unlink()
    for name, text in (("objects/info/http-alternates", "http://127.0.0.1/x.git\n"), ("commondir", "../x")):
        (borrower / name).write_text(text)
        with pytest.raises(SourceUnavailable, match=f"borrows objects.*{name} exists"):
            mirror.local_repository(str(borrower), secret, roots)
        (borrower / name).unlink()
    pack = next((outside / "private.git" / "objects" / "pack").glob("*.pack"))
    for suffix in (".pack", ".idx"):  # the private repository's pack linked in
        (borrower / "objects/pack" / f"borrowed{suffix}").symlink_to(pack.with_suffix(suffix))
    with pytest.raises(SourceUnavailable, match=r"borrows objects.*borrowed\.(pack|idx) is a symbolic link"):
        mirror.local_repository(str(borrower), secret, roots)
    shutil.rmtree(borrower / "objects")  # the private repository's whole objects folder linked in
    (borrower / "objects").symlink_to(outside / "private.git" / "objects")
    with pytest.raises(SourceUnavailable, match=r"borrows objects.*borrower\.git/objects is a symbolic link"):
        mirror.local_repository(str(borrower), secret, roots)


def test_git_runs_without_the_callers_repository_variables(tmp_path, monkeypatch):
    """GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_DIR and the like in our own environment never reach the
    git commands run on a source: a commit only in another repository is not found."""
    secret = _bare_with_a_commit(tmp_path / "private.git", "a private repository of the host")
    empty = tmp_path / "empty.git"
    git("init", "--quiet", "--bare", str(empty))
    objects = str(tmp_path / "private.git" / "objects")
    for name, value in (
        ("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects),
        ("GIT_OBJECT_DIRECTORY", objects),
        ("GIT_DIR", str(tmp_path / "private.git")),
        ("GIT_COMMON_DIR", str(tmp_path / "private.git")),
    ):
        monkeypatch.setenv(name, value)
    assert not has_commit(empty, secret)
    with pytest.raises(SourceUnavailable, match="is not in"):
        mirror.local_repository(str(empty), secret, [tmp_path.resolve()])


def test_pool_leaves_out_unusable_sources_with_their_reasons(git_server, isolated, mirror_root, monkeypatch):
    monkeypatch.setenv("ARGUSIC_MIRROR_TRIES", "1")
    closed = closed_port()
    selection = draw_checked_pool("2026-12", remote_catalogue(git_server, isolated, closed))
    assert [e.project_id for e in selection.pool.entries] == ["tonegen-sh"]
    assert selection.pool.entries[0].repo_url == git_server.repo("tonegen-sh")
    excluded = selection.pool.excluded
    assert excluded["csvstats"].startswith(f"commit {'c' * 40} is not in {git_server.repo('csvstats')}")
    assert excluded["pixelart-py"].startswith(f"could not fetch git://127.0.0.1:{closed}/pixelart-py.git")
    assert "outside the allowed roots" in excluded["greeter-env"]
    assert excluded["gpl-widget"] == "licence GPL-3.0-only is not permissive"
    assert selection.notices == ["candidate tonegen-sh: licence 'MIT License' read as SPDX 'MIT'"]
    lines = selection.lines()
    assert lines[0].startswith("pool of 2026-12: 1 project(s), 1 public and 0 private, from 5 candidate(s)")
    assert "excluded pixelart-py: could not fetch" in "\n".join(lines)


@pytest.mark.slow
def test_cycle_run_from_remote_catalogue_local_executor_is_resumable(
    git_server, isolated, mirror_root, monkeypatch
):
    monkeypatch.setenv("ARGUSIC_MIRROR_TRIES", "1")
    catalogue = remote_catalogue(git_server, isolated, closed_port())
    args = ["cycle", "run", "--catalogue", str(catalogue), "--cycle", "2026-12-remote", "--agents",
            "readme-runner", "--executor", "local", "--budget-scale", "0.01", "--approve-as", "test",
            "--note", "a test cycle"]  # fmt: skip
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    out = first.output
    assert "excluded csvstats: commit" in out and "excluded pixelart-py: could not fetch" in out
    assert "budgets scaled ×0.01" in out
    assert "3/3" in out and "passes 3" in out
    assert out.count("pass_full") == 3 and "Argusic board — cycle 2026-12-remote" in out
    published = isolated / "published" / "2026-12-remote" / "board.json"
    assert json.loads(published.read_text())["rows"][0]["configuration"]["agent_id"] == "readme-runner"
    records = [load_record_file(p) for p in (isolated / "runs" / "2026-12-remote").rglob("run_record.json")]
    assert len(records) == 3
    assert all(r.executor == "local" and r.demo and r.effective_budget_seconds == 54 for r in records)
    tonegen = mirror_root / f"{parse_source(git_server.repo('tonegen-sh')).digest}.git"
    assert has_commit(tonegen, records[0].commit)  # the attempts fetched from this mirror

    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "3 already measured" in again.output and "0 new record(s), 3 already present" in again.output
    board = runner.invoke(app, ["board"])  # the latest cycle by default
    assert board.exit_code == 0 and "cycle 2026-12-remote" in board.output


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers")
def test_cycle_run_from_remote_catalogue_in_docker(git_server, isolated, mirror_root, monkeypatch):
    monkeypatch.setenv("ARGUSIC_MIRROR_TRIES", "1")
    catalogue = remote_catalogue(git_server, isolated, closed_port())
    result = runner.invoke(
        app,
        ["cycle", "run", "--catalogue", str(catalogue), "--cycle", "2026-12-docker", "--agents",
         "readme-runner", "--executor", "docker", "--budget-scale", "0.01", "--approve-as", "test",
         "--note", "a test cycle"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.count("pass_full") == 3
    records = [load_record_file(p) for p in (isolated / "runs" / "2026-12-docker").rglob("run_record.json")]
    assert len(records) == 3 and all(r.executor == "docker" and r.invalid_reason is None for r in records)


CRASHING_HARNESS = "import sys\nsys.exit(3)\n"


@pytest.mark.slow
def test_a_cycle_whose_attempts_are_all_cut_fails_and_publishes_nothing(
    git_server, isolated, mirror_root, monkeypatch
):
    harness = isolated / "harness"
    harness.mkdir()
    (harness / "readme_runner.py").write_text(CRASHING_HARNESS)
    monkeypatch.setattr(executor_mod, "HARNESS_DIR", harness)
    monkeypatch.setenv("ARGUSIC_MIRROR_TRIES", "1")
    catalogue = remote_catalogue(git_server, isolated, closed_port())
    result = runner.invoke(
        app,
        ["cycle", "run", "--catalogue", str(catalogue), "--cycle", "2026-12-broken", "--agents",
         "readme-runner", "--executor", "local", "--budget-scale", "0.01"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    # the harness dies in every container: not three projects' doing but ours (issue #25)
    assert "all 3 attempt(s) were cut short inside their containers" in result.output
    assert "harness exited with code 3" in result.output and "nothing published" in result.output
    assert not (isolated / "published" / "2026-12-broken" / "board.json").exists()
    db = isolated / "warehouse" / "argusic.duckdb"
    if db.exists():
        with duckdb.connect(str(db), read_only=True) as con:
            tables = {
                r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
            }
            if "run_records" in tables:
                count = con.execute("SELECT count(*) FROM raw.run_records WHERE cycle_id = '2026-12-broken'")
                assert count.fetchone()[0] == 0
