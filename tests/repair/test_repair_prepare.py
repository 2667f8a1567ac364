"""The prepared working copy of a repair item (issue #31, seed 001: dependencies installed and packages
built before the agent's clock starts, made once and copied for each run; argusic.repair.prepare).

Fast: the paths a preparation added, as base's commit leaves them out and ``.git/info/exclude`` names
them; the prepared tree kept as one commit (base's tracked files as base has them).
Slow (real Docker): an item built from tomli's real history (tests/fixtures/repair_real) with a setup
command that makes a virtual environment with the package in it, and changes a tracked file; two demo
stand-ins' attempts on it (the first prepares, the second reuses the prepared tree), graded; then a
preparation that fails, recorded with its log and exit status and the attempt invalid (ours).
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from argusic.repair import prepare

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "repair_real"


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_topmost_new_paths_and_their_exclusions() -> None:
    base = {"README.md", "src/pkg/__init__.py", "src/pkg/mod.py"}
    added = [".venv/bin/python", ".venv/lib/x.py", "src/pkg/__pycache__/m.pyc", "build.log", "src/new/a/b.c"]
    assert prepare.topmost_new(added, base) == [".venv", "build.log", "src/new", "src/pkg/__pycache__"]
    assert prepare.pathspec_lines([".venv", "a*b"]) == ".\n:(exclude,literal).venv\n:(exclude,literal)a*b\n"
    assert prepare.exclude_lines([".venv", "a*b", "#x"]) == "/.venv\n/a\\*b\n/\\#x\n"


def test_prepared_tree_keeps_base_files_as_base_has_them(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    git("init", "-q", cwd=work)
    (work / "README.md").write_text("base\n")
    (work / "pkg.py").write_text("x = 1\n")
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=work)
    base = git("rev-parse", "HEAD", cwd=work)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in [("./README.md", b"changed by the setup\n"), ("./pkg.py", b"x = 1\n"),
                           ("./.venv/lib/site.pth", b"/workspace/project\n")]:  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("./.venv/bin/python")
        link.type, link.linkname = tarfile.SYMTYPE, "/usr/bin/python3"  # outside the tree: kept as a link
        tar.addfile(link)
    (tmp_path / "t.tar").write_bytes(buf.getvalue())
    made = prepare.tree_commit(tmp_path / "t.tar", work, base, tmp_path / "source.git")
    assert made["excluded"] == [".venv"] and made["added_files"] == 2 and made["reverted"] == ["README.md"]
    listing = git("--git-dir", str(tmp_path / "source.git"), "ls-tree", "-r", made["commit"])
    assert "120000" in listing and ".venv/bin/python" in listing  # a link, as the preparation left it
    readme = git("--git-dir", str(tmp_path / "source.git"), "show", f"{made['commit']}:README.md")
    assert readme == "base"  # the agent's base is base


def _base_repo(tmp_path: Path) -> tuple[Path, str]:
    work = tmp_path / "w"
    work.mkdir()
    git("init", "-q", cwd=work)
    (work / "README.md").write_text("base\n")
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=work)
    return work, git("rev-parse", "HEAD", cwd=work)


@pytest.mark.parametrize(
    ("member", "refused"),
    [
        (("./dev/mem", tarfile.CHRTYPE, 0), "device or fifo"),
        (("./pipe", tarfile.FIFOTYPE, 0), "device or fifo"),
        (("../outside.txt", tarfile.REGTYPE, 3), "outside"),
        (("./big.bin", tarfile.REGTYPE, 9 << 30), "over 8 GiB"),
    ],
)
def test_a_hostile_prepared_tree_is_refused(tmp_path: Path, member, refused: str) -> None:
    """The tar comes out of a container that ran the item's command: no device, fifo or escaping
    member is extracted (we extract as root), and its size is capped before anything is written."""
    work, base = _base_repo(tmp_path)
    name, kind, size = member
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.size = kind, (size if size < (1 << 20) else 0)
        tar.addfile(info, io.BytesIO(b"x" * info.size) if info.size else None)
    data = buf.getvalue()
    if size >= (1 << 20):  # a header that claims more content than the cap: refused before reading it
        header = tarfile.TarInfo(name)
        header.size = size
        data = header.tobuf(format=tarfile.GNU_FORMAT)
    (tmp_path / "t.tar").write_bytes(data)
    with pytest.raises((prepare.PrepareError, tarfile.TarError)) as err:
        prepare.tree_commit(tmp_path / "t.tar", work, base, tmp_path / "source.git")
    assert refused in str(err.value)
    assert not (tmp_path / "outside.txt").exists()


# --- slow: a real item in Docker -------------------------------------------------------------------

# A virtual environment with the package importable from it (no network: the grader has none either),
# and a tracked file changed (kept as base has it in the agent's copy).
SETUP = [
    "sh", "-c",
    "python3 -m venv --system-site-packages --without-pip .venv"
    " && echo \"$PWD/src\" > \"$(.venv/bin/python -c"
    " 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')/tomli-src.pth\""
    " && .venv/bin/python -c 'import tomli; print(\"prepared: tomli from\", tomli.__file__)'"
    " && echo '# touched by the setup' >> README.md",
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.docker
def test_a_real_item_is_prepared_once_and_copied_for_each_attempt(tmp_path, isolated, monkeypatch) -> None:
    from argusic.attempts import repair_run as repair
    from argusic.core.evidence import EvidenceStore
    from argusic.core.spec import AttemptSpec, RepairItemRef
    from argusic.repair.items import build_items
    from argusic.sandbox.executor import DockerExecutor, docker_available

    if not docker_available():
        pytest.skip("no Docker daemon answers")
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(tmp_path / "scratch"))
    items_root = tmp_path / "items"
    monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(items_root))
    repo = tmp_path / "tomli.git"
    git("clone", "-q", "--bare", str(REAL / "tomli.bundle"), str(repo))
    manifest = tmp_path / "tomli.toml"
    (tmp_path / "statements").mkdir()
    name = "tomli-loads-type-error"
    (tmp_path / "statements" / f"{name}.md").write_bytes((REAL / "statements" / f"{name}.md").read_bytes())
    manifest.write_text(
        'project_id = "tomli"\nrepository = "https://github.com/hukkin/tomli.git"\n'
        'test_command = ["env", "PYTHONPATH=src", "python3", "-m", "pytest", "-p", "no:cacheprovider", '
        '"-q", "--continue-on-collection-errors"]\n'
        f"setup_command = {json.dumps(SETUP)}\n"
        f'[[items]]\nid = "{name}"\nmerge = "4e245a4bbbefed99e550e196095ea65c851cf31d"\n'
        f'statement = "statements/{name}.md"\n'
    )
    (item,) = build_items(manifest, items_root, repository=str(repo))
    assert item.setup_command == SETUP and item.fail_to_pass

    def spec(agent: str, attempt_no: int) -> AttemptSpec:
        return AttemptSpec(
            cycle_id="2026-12-prepare", purpose="repair", agent_id=agent, project_id="tomli",
            repo_url=item.repository, commit=item.base, tier="standard", attempt_no=attempt_no, demo=True,
            budget_scale=1 / 360, item=RepairItemRef(item_id=name, revision=item.revision, track=item.track),
        )  # fmt: skip

    store = EvidenceStore((tmp_path / "evidence").as_uri())
    executor = DockerExecutor()
    runs = tmp_path / "runs"
    records = {}
    for agent, n, verdict in (("repair-demo-gold", 1, "resolved"), ("repair-demo-none", 1, "unresolved")):
        record = repair.run_repair_attempt(spec(agent, n), executor, store, runs).record
        assert record.invalid_reason is None, record.invalid_reason
        prep = record.repair.preparation
        assert prep is not None and prep.status == "prepared" and prep.exit_code == 0
        assert prep.network == "none"  # the attempts' network (none in tests; section 7 in real cycles)
        assert ".venv" in prep.excluded and prep.reverted == ["README.md"] and prep.added_files > 0
        assert b"prepared: tomli from /workspace/" in store.read(prep.log.uri)
        patch = store.read(record.repair.patch.uri)
        assert b".venv" not in patch and b"README.md" not in patch  # the preparation is not the agent's
        assert json.loads(store.read(record.repair.grade.uri))["verdict"] == verdict
        log_text = store.read(record.evidence.log.uri).decode()
        assert ".venv" in log_text  # the stand-in's `ls -A`: the tree it was handed is the prepared one
        records[agent] = record
    first = records["repair-demo-gold"].repair.preparation
    second = records["repair-demo-none"].repair.preparation
    assert (first.reused, second.reused) == (False, True)  # made once, copied for each run
    assert first.tree_commit == second.tree_commit and first.log.sha256 == second.log.sha256

    # A preparation that fails: the attempt is invalid (ours), with the log and exit status on record.
    broken = item.model_copy(update={"setup_command": ["sh", "-c", "echo cannot install >&2; exit 3"]})
    monkeypatch.setattr(repair, "load_repair_item", lambda s, base=None: broken)
    record = repair.run_repair_attempt(spec("repair-demo-gold", 2), executor, store, runs).record
    prep = record.repair.preparation
    assert (prep.status, prep.exit_code, record.end_reason) == ("failed", 3, "harness_error")
    assert record.invalid_reason.startswith("preparation failed before the agent started")
    assert b"cannot install" in store.read(prep.log.uri)
    assert record.repair.patch is None and record.repair.grade is None and record.evidence.log is None
