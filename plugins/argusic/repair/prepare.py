"""The prepared working copy of a repair item (issue #31, seed 001 "Running Claude Code": dependencies
installed and dependent packages built beforehand, so the agent can run the tests at once; the working
copies made once and copied for each run).

How: the item's **setup command** (the manifest's ``setup_command``, the one the grader runs before
the tests: install, build) runs once per (item revision, base commit, image, command, network) in a
container of the attempt's own image, started by the attempt's executor, so with the network rules the
attempts have (methodology section 7: the installation's attempt network and the operator's package
indexes in a real cycle; none in tests and demos). Its output goes to ``prepare.log`` and its exit
status to ``prepare_status.json``; when it succeeds the prepared folder (``.git`` left out) comes back
as a tar file.

On the host the tree becomes **one commit** in a bare repository of its own (``source.git`` in the
cache folder): base's files as base has them, plus every file the preparation added (a virtual
environment, ``node_modules``, build output). A tracked file the preparation changed or deleted is
kept as base has it (named in ``reverted``: the agent's base is base). Each attempt's executor then
fetches that commit into its own fresh container (the copy per run), and the working-copy script
commits base's files only, leaving out the added paths (``excluded``, topmost new folders or files,
also put in ``.git/info/exclude`` so the collected patch never holds them) and checks that its fresh
commit is base's (the same id ``base_source`` made): the agent's base is exactly base.

A preparation that fails (the command's exit status, no tar, a path git cannot hold) is recorded with
its log and status, and makes the attempt **invalid** (ours, rerun), never the agent's failure. A
prepared tree is reused from the cache (``reused``); a failed one is not kept, so the next attempt
tries again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.layout import runs_dir
from argusic.core.safe_io import exclusive_lock
from argusic.sandbox.launch import Launch

log = logging.getLogger(__name__)

PREPARE_VERSION = "prepare-1"  # part of the cache key: a change to these steps prepares again
PREPARE_LOG = "prepare.log"
PREPARE_STATUS = "prepare_status.json"
PREPARED_TAR = "prepared.tar"
PREPARED_JSON = "prepared.json"
SOURCE_REPO = "source.git"
EXCLUDED_FILE = "prepared_paths.txt"  # task file of the attempt: the paths the preparation added
PREPARED_REF = "refs/heads/prepared"
PREPARE_SECONDS = 1800  # the preparation's own limit (the agent's clock has not started)
STATUS_MAX_BYTES = 4096
MAX_EXCLUDED = 2000
# A prepared tree comes out of a container that ran the item's command: hostile input, bounded.
MAX_PREPARED_BYTES = 8 << 30  # bytes of file content in the tar
MAX_PREPARED_MEMBERS = 500_000

# A commit made by us (base's fresh commit in an agent's copy, the prepared tree's): identity and time
# fixed, so that the same tree gives the same commit everywhere.
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "argusic",
    "GIT_AUTHOR_EMAIL": "argusic@invalid",
    "GIT_COMMITTER_NAME": "argusic",
    "GIT_COMMITTER_EMAIL": "argusic@invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}
# Git run by us on trees an item's command or an agent left: none of their configuration may run code
# or bend a diff (hooks, fsmonitor, signing, external diff, attributes, line endings).
SAFE_GIT = [
    "git",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false",
    "-c", "diff.external=",
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.autocrlf=false",
    "-c", "core.symlinks=true",
]  # fmt: skip


class PrepareError(RuntimeError):
    """The preparation could not be made (the message says why); the attempt is invalid, ours."""


@dataclass(frozen=True)
class Prepared:
    """The outcome of an item's preparation, as the run record's ``repair.preparation`` states it."""

    status: str  # "prepared" or "failed"
    key: str
    command: list[str]
    network: str
    exit_code: int | None = None
    seconds: float | None = None
    log_path: Path | None = None
    repo: Path | None = None
    commit: str | None = None
    excluded: list[str] = field(default_factory=list)
    added_files: int = 0
    reverted: list[str] = field(default_factory=list)
    reused: bool = False
    detail: str | None = None

    def part(self, log_ref: dict | None) -> dict:
        """The record's ``repair.preparation`` (``log_ref``: the log as stored evidence)."""
        return {
            "status": self.status,
            "command": self.command,
            "network": self.network,
            "exit_code": self.exit_code,
            "seconds": self.seconds,
            "log": log_ref,
            "tree_commit": self.commit,
            "added_files": self.added_files,
            "excluded": self.excluded[:64],
            "reverted": self.reverted[:32],
            "reused": self.reused,
            "detail": self.detail,
        }


def prepare_key(item, base_commit: str, image: str | None, network: str) -> str:
    doc = {
        "version": PREPARE_VERSION,
        "item_revision": item.revision,
        "base_commit": base_commit,
        "image": image,
        "command": list(getattr(item, "setup_command", None) or []),
        "network": network,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def prepare_script(project: str, out: str, command: list[str]) -> str:
    """The preparation container's script after the executor's checkout of base: the setup command
    (output to the log), its status, and the prepared folder as a tar file when it succeeded."""
    q = shlex.quote
    return "\n".join(
        [
            "set -u",
            f"cd -- {q(project)} || exit 95",
            "started=$(date +%s)",
            f"{shlex.join(command)} > {q(out + '/' + PREPARE_LOG)} 2>&1 < /dev/null",
            "code=$?",
            "ended=$(date +%s)",
            'printf \'{"exit_code": %d, "seconds": %d}\\n\' "$code" "$((ended - started))" '
            f"> {q(out + '/' + PREPARE_STATUS)}",
            '[ "$code" -eq 0 ] || exit 0',
            f"tar --exclude=./.git --exclude=.git -C {q(project)} -cf {q(out + '/' + PREPARED_TAR)} .",
            "exit 0",
        ]
    )


def safe_git_env(extra: dict | None = None) -> dict[str, str]:
    """The environment SAFE_GIT runs in: no system or user configuration, no prompt, our PATH and a
    throwaway HOME, plus `extra` (GIT_DIR, an index, a commit identity)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": tempfile.gettempdir(),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        **(extra or {}),
    }


def _git(argv: list[str], env: dict | None = None, data: bytes | None = None, timeout: float = 1200) -> bytes:
    clean = safe_git_env(env)
    done = subprocess.run([*SAFE_GIT, *argv], env=clean, input=data, capture_output=True, timeout=timeout)
    if done.returncode != 0:
        detail = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1][:300]
        raise PrepareError(f"git {' '.join(argv[:3])}: {detail}")
    return done.stdout


def _names(argv: list[str], env: dict) -> list[str]:
    """The NUL-separated paths a git command prints, sorted."""
    return sorted(set(_git(argv, env=env).decode("utf-8", "surrogateescape").split("\0")) - {""})


def topmost_new(added: list[str], base_paths: set[str]) -> list[str]:
    """The topmost new path of each added file: its highest folder that base does not have (or the
    file itself, in a folder base has). Sorted, without repeats."""
    base_dirs = {""}
    for path in base_paths:
        parts = path.split("/")
        base_dirs.update("/".join(parts[:n]) for n in range(1, len(parts)))
    found = set()
    for path in added:
        parts = path.split("/")
        for n in range(1, len(parts) + 1):
            prefix = "/".join(parts[:n])
            if prefix not in base_dirs:
                found.add(prefix)
                break
    return sorted(found)


def _bounded_filter():
    """tarfile's 'tar' filter, refusing device and fifo members and a tree over the size caps."""
    seen = {"bytes": 0, "members": 0}

    def check(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
        if member.ischr() or member.isblk() or member.isfifo():
            raise PrepareError(f"the prepared tree holds a device or fifo: {member.name!r}")
        seen["bytes"] += max(member.size, 0)
        seen["members"] += 1
        if seen["bytes"] > MAX_PREPARED_BYTES or seen["members"] > MAX_PREPARED_MEMBERS:
            raise PrepareError(
                f"the prepared tree is over {MAX_PREPARED_BYTES >> 30} GiB or {MAX_PREPARED_MEMBERS} entries"
            )
        return tarfile.tar_filter(member, dest)

    return check


def tree_commit(tar_path: Path, base_repo: Path, base_commit: str, dest: Path) -> dict:
    """Make `dest` a bare repository holding base and one commit of the prepared tree (base's tracked
    files as base has them, plus the added files); {commit, excluded, added_files, reverted}."""
    work = Path(tempfile.mkdtemp(prefix="argusic-prepared-"))
    try:
        tree = work / "tree"
        tree.mkdir()
        with tarfile.open(tar_path) as archive:
            # 'tar': no absolute or escaping member, no write through a link out of the folder;
            # links pointing anywhere are kept as links (a virtual environment's interpreter);
            # no device or fifo (we extract as root), and the content's size and count bounded
            archive.extractall(tree, filter=_bounded_filter())
        shutil.rmtree(dest, ignore_errors=True)
        _git(["init", "-q", "--bare", str(dest)])
        _git(["-C", str(dest), "fetch", "-q", "--no-tags", f"file://{base_repo.resolve()}", base_commit])
        env = {"GIT_DIR": str(dest), "GIT_WORK_TREE": str(tree), "GIT_INDEX_FILE": str(work / "index")}
        _git(["read-tree", base_commit], env=env)
        base_paths = set(_names(["ls-files", "-z"], env))
        # tracked files the preparation changed or deleted stay as base has them (the index is base's)
        reverted = _names(["diff", "--name-only", "-z"], env)
        added = _names(["ls-files", "--others", "-z"], env)
        bad = [p for p in added if any(c in p for c in "\n\r") or p.startswith(":")]
        if bad:
            raise PrepareError(f"the preparation made paths the working copy cannot name: {bad[:3]!r}")
        if added:
            specs = b"\0".join(f":(literal){p}".encode("utf-8", "surrogateescape") for p in added)
            _git(["add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"], env=env, data=specs)
        written = _git(["write-tree"], env=env).decode().strip()
        commit = _git(["commit-tree", written, "-m", "prepared"], env={**env, **COMMIT_ENV}).decode().strip()
        _git(["-C", str(dest), "update-ref", PREPARED_REF, commit])
        _git(["-C", str(dest), "symbolic-ref", "HEAD", PREPARED_REF])
        excluded = topmost_new(added, base_paths)
        if len(excluded) > MAX_EXCLUDED:
            raise PrepareError(f"the preparation added {len(excluded)} new paths (at most {MAX_EXCLUDED})")
        return {"commit": commit, "excluded": excluded, "added_files": len(added), "reverted": reverted}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _status(path: Path) -> dict:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > STATUS_MAX_BYTES:
        return {}
    try:
        doc = json.loads(path.read_bytes())
    except ValueError:
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, int)} if isinstance(doc, dict) else {}


def cache_dir(base: Path | None = None) -> Path:
    """Where prepared trees are kept: ARGUSIC_PREPARED_DIR, else ``<runs>/.prepared``."""
    return Path(os.environ.get("ARGUSIC_PREPARED_DIR") or (base or runs_dir()) / ".prepared")


def prepare_item(
    item, base_repo: Path, base_commit: str, executor, image: str | None, *, cache: Path | None = None,
    seconds: int = PREPARE_SECONDS,
) -> Prepared | None:  # fmt: skip
    """The item's prepared tree (made now, or reused from the cache); None when the item has no setup
    command (nothing to prepare). `base_repo` holds `base_commit` (``base_source``'s bare copy)."""
    command = list(getattr(item, "setup_command", None) or [])
    if not command:
        return None
    network = str(getattr(executor, "network", None) or "host")
    key = prepare_key(item, base_commit, image, network)
    folder = (cache or cache_dir()) / key
    with exclusive_lock(folder.with_name(key + ".lock")):
        done = folder / PREPARED_JSON
        if done.is_file() and not done.is_symlink():
            doc = json.loads(done.read_text())
            where = {"repo": folder / SOURCE_REPO, "log_path": folder / PREPARE_LOG, "reused": True}
            return Prepared(**{**doc, **where})
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        out = folder / "out"
        started = time.monotonic()

        def build(paths):
            script = prepare_script(paths.project, paths.out.rstrip("/"), command)
            return Launch(["bash", "-c", script], env={}, files={})

        run_kwargs = {"image": image} if image else {}
        result = executor.run(
            attempt_id=f"prepare-{key[:24]}", repo_path=base_repo, commit=base_commit, harness_args=[],
            out_dir=out, budget_seconds=seconds, env={}, launch=build, **run_kwargs,
        )  # fmt: skip
        status = _status(out / PREPARE_STATUS)
        log_path = out / PREPARE_LOG
        took = float(status["seconds"]) if "seconds" in status else round(time.monotonic() - started, 3)
        common = {
            "key": key,
            "command": command,
            "network": network,
            "exit_code": status.get("exit_code"),
            "seconds": took,
            "log_path": log_path if log_path.is_file() and not log_path.is_symlink() else None,
        }
        problem = None
        if result.error or result.refused:
            problem = f"the preparation container failed: {result.error or result.refused}"
        elif result.timed_out:
            problem = f"the preparation outlived its {seconds} s"
        elif "exit_code" not in status:
            problem = f"the preparation left no status (container exit code {result.exit_code})"
        elif status["exit_code"] != 0:
            problem = f"the setup command exited {status['exit_code']} ({PREPARE_LOG})"
        elif not (out / PREPARED_TAR).is_file() or (out / PREPARED_TAR).is_symlink():
            problem = "the preparation left no prepared tree"
        if problem is None:
            try:
                made = tree_commit(out / PREPARED_TAR, base_repo, base_commit, folder / SOURCE_REPO)
            except (PrepareError, tarfile.TarError, OSError) as err:
                problem = f"the prepared tree could not be kept: {err}"
        if problem is not None:
            log.warning("%s: preparation failed: %s", item.item_id, problem)
            kept = folder.with_name(f"{key}.failed.{os.getpid()}")  # its log stays for the record
            shutil.rmtree(kept, ignore_errors=True)
            folder.rename(kept)
            log_kept = kept / "out" / PREPARE_LOG
            common["log_path"] = log_kept if common["log_path"] else None
            return Prepared("failed", **common, detail=problem)
        (out / PREPARED_TAR).unlink()
        if common["log_path"] is not None:
            shutil.copyfile(log_path, folder / PREPARE_LOG)
        else:
            (folder / PREPARE_LOG).write_bytes(b"")
        common["log_path"] = folder / PREPARE_LOG
        prepared = Prepared("prepared", **common, repo=folder / SOURCE_REPO, **made)
        doc = {k: v for k, v in prepared.__dict__.items() if k not in ("repo", "log_path", "reused")}
        tmp = done.with_name(done.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        tmp.replace(done)
        log.info("%s: prepared (%d files added, %s)", item.item_id, prepared.added_files, key[:12])
        return prepared


def pathspec_lines(excluded: list[str]) -> str:
    """The working copy's `git add --pathspec-from-file` input: everything but the added paths."""
    return "".join([".\n", *(f":(exclude,literal){p}\n" for p in excluded)])


def exclude_lines(excluded: list[str]) -> str:
    """``.git/info/exclude`` lines naming the added paths exactly (anchored, wildcards escaped)."""

    def escaped(path: str) -> str:
        out = "".join("\\" + c if c in "*?[]\\!#" else c for c in path)
        return "/" + (out[:-1] + "\\ " if out.endswith(" ") else out)

    return "".join(f"{escaped(p)}\n" for p in excluded)
