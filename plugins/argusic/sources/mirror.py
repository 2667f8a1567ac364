"""Repository sources: the grammar of a catalogue's repo_url, and the host's mirror cache.

A candidate's repository is either

- **remote** (`https://`, `http://`, `ssh://`, `git://`, or scp-style `user@host:path`): mirrored
  on the host into the mirror cache (`ARGUSIC_MIRROR_DIR`, default `<project>/mirror`), one bare
  repository per URL under `<sha256(url)[:32]>.git`, reused across cycles. Only the pinned commit is
  fetched (`git fetch --depth 1 origin <commit>`; servers that refuse a fetch by id get one fetch of
  their branches and tags instead), with a timeout, bounded retries with backoff for network errors,
  and a size cap. Each pinned commit is kept by a ref `refs/argusic/pinned/<commit>`.
- **local**: the absolute path (or `file://` URL) of a bare repository, accepted only under an
  allowed root: the demo forge (`ARGUSIC_FORGE_DIR`) and the folders the operator names in
  `ARGUSIC_REPO_ROOTS` (`os.pathsep`-separated) or with `--repo-root`. Used in place, and only
  when it holds its objects itself: a repository that borrows them from elsewhere on the host
  (`objects/info/alternates`, `objects/info/http-alternates`, a `commondir`, a link in `objects/`)
  is refused, whatever the alternate names, so no allowed root lends out another repository.

The pool step calls `check_sources` before the cycle starts: a candidate whose repository cannot be
fetched, or lacks its pinned commit, is left out of the pool with its reason. An attempt calls
`attempt_source` for the local bare repository the executor mounts read-only; the container then
fetches only the pinned commit from it, as before.

A catalogue's URLs are hostile: no option injection into git (nothing that starts with `-`, the URL
is stored in the mirror's config rather than passed on the command line), no `ext::` or other
transport helpers (`GIT_ALLOW_PROTOCOL`), no credentials in URLs, no redirects followed, no prompts,
no user or system git configuration, sizes and times bounded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from argusic.core.safe_io import exclusive_lock
from argusic.core.settings import forge_dir, project_root

log = logging.getLogger(__name__)

REMOTE_SCHEMES = ("https", "http", "ssh", "git")
PIN_REF = "refs/argusic/pinned/"
META_FILE = "argusic-mirror.json"
MAX_URL_CHARS = 2048
_HOST = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_SCP = re.compile(r"^(?:(?P<user>[^@/:]+)@)?(?P<host>[^@/:]+):(?P<path>[^:].*)$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
ACCEPTED = (
    "expected https://host/owner/repo(.git), ssh://[user@]host/path, git://host/path, "
    "user@host:path, or the absolute path (or file:// URL) of a local bare repository"
)


class SourceError(ValueError):
    """A repo_url that breaks the grammar (a catalogue problem)."""


class SourceUnavailable(RuntimeError):
    """A source that cannot be used now: unreachable, missing commit, outside the allowed roots…"""


@dataclass(frozen=True)
class Source:
    kind: Literal["remote", "local"]
    url: str  # remote: the URL as written; local: the absolute path, normalised

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.url.encode()).hexdigest()[:32]


def _check_host(host: str | None, text: str) -> str:
    if not host:
        raise SourceError(f"{text!r}: no host; {ACCEPTED}")
    if host.startswith("[") or ":" in host:  # IPv6 literal
        inner = host.strip("[]")
        if not re.fullmatch(r"[0-9A-Fa-f:.]+", inner):
            raise SourceError(f"{text!r}: host {host!r} is not a host name or address")
        return host
    if not _HOST.match(host):
        raise SourceError(
            f"{text!r}: host {host!r} is not a plain host name (letters, digits, '-', '.'; "
            "no leading '-'; write international names in punycode)"
        )
    return host


def parse_source(text: str) -> Source:
    """Check a repo_url's grammar; SourceError says what is wrong and what is accepted."""
    if not isinstance(text, str) or not text.strip():
        raise SourceError(f"empty; {ACCEPTED}")
    if len(text) > MAX_URL_CHARS:
        raise SourceError(f"{len(text)} characters, over the {MAX_URL_CHARS} limit")
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in text):
        raise SourceError(f"{text!r}: spaces, control or non-ASCII characters are not allowed")
    if text.startswith("-"):
        raise SourceError(f"{text!r}: starts with '-' (git would read it as an option)")
    if re.match(r"^[A-Za-z0-9+._-]+::", text):
        raise SourceError(f"{text!r}: git transport helpers (<transport>::<address>) are not allowed")
    if text.startswith("/"):
        return _local(text, text)
    if "://" in text:
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme == "file":
            if parts.netloc not in ("", "localhost"):
                raise SourceError(f"{text!r}: a file:// URL names a local path (file:///abs/path)")
            return _local(unquote(parts.path), text)
        if scheme not in REMOTE_SCHEMES:
            raise SourceError(f"{text!r}: scheme {scheme!r} is not allowed; {ACCEPTED}")
        if parts.query or parts.fragment:
            raise SourceError(f"{text!r}: a repository URL has no query (?) or fragment (#)")
        try:
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError:
            raise SourceError(f"{text!r}: bad port") from None
        if parts.password is not None or (parts.username is not None and scheme != "ssh"):
            shown = text.replace(parts.netloc, "***@" + parts.netloc.rsplit("@", 1)[-1], 1)
            raise SourceError(
                f"{shown!r}: credentials in a URL are not allowed (they would be stored and shown); "
                "use a public URL, or ssh with the host's keys"
            )
        if parts.username is not None and not _USER.match(parts.username):
            raise SourceError(f"{text!r}: user {parts.username!r} is not a plain user name")
        _check_host(parts.hostname if parts.hostname else None, text)
        if parts.path.strip("/") == "":
            raise SourceError(f"{text!r}: no repository path after the host")
        return Source("remote", text)
    match = _SCP.match(text)
    if match:
        user, host, path = match["user"], match["host"], match["path"]
        if user is not None and not _USER.match(user):
            raise SourceError(f"{text!r}: user {user!r} is not a plain user name")
        _check_host(host, text)
        if path.startswith("-") or not path.strip("/"):
            raise SourceError(f"{text!r}: repository path {path!r} is empty or starts with '-'")
        return Source("remote", text)
    raise SourceError(f"{text!r}: not a repository address; {ACCEPTED} (relative paths are not accepted)")


def _local(path: str, text: str) -> Source:
    if not path.startswith("/"):
        raise SourceError(f"{text!r}: a local repository must be an absolute path")
    if "\\" in path or ":" in path or "," in path:
        raise SourceError(
            f"{text!r}: ':', ',' and backslashes are not allowed in a local path (Docker mounts it)"
        )
    return Source("local", os.path.normpath(path))


# --- settings ----------------------------------------------------------------------------------------


def mirror_dir() -> Path:
    """ARGUSIC_MIRROR_DIR: the host's mirror cache of remote repositories."""
    return Path(os.environ.get("ARGUSIC_MIRROR_DIR", project_root() / "mirror"))


def repo_roots(extra: Iterable[Path | str] = ()) -> list[Path]:
    """Folders under which a catalogue may name local bare repositories: the demo forge, and the
    folders in ARGUSIC_REPO_ROOTS (os.pathsep-separated) and `extra` (the CLI's --repo-root)."""
    named = [forge_dir(), *extra]
    named += [p for p in os.environ.get("ARGUSIC_REPO_ROOTS", "").split(os.pathsep) if p.strip()]
    roots = []
    for root in named:
        with contextlib.suppress(OSError):
            roots.append(Path(root).resolve(strict=True))
    return roots


@dataclass(frozen=True)
class FetchPolicy:
    timeout_seconds: float = 600.0  # one git command (ARGUSIC_MIRROR_TIMEOUT)
    tries: int = 3  # network errors only (ARGUSIC_MIRROR_TRIES)
    backoff_seconds: float = 2.0  # first wait; doubles, at most 60 s (ARGUSIC_MIRROR_BACKOFF)
    max_bytes: int = 4096 * 1_000_000  # one mirror's size (ARGUSIC_MIRROR_MAX_MB)

    @classmethod
    def from_env(cls) -> FetchPolicy:
        def number(name: str, default: float) -> float:
            raw = os.environ.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"{name}={raw!r}: expected a number") from None
            if value < 0:
                raise ValueError(f"{name}={raw!r}: expected a number >= 0")
            return value

        return cls(
            timeout_seconds=number("ARGUSIC_MIRROR_TIMEOUT", cls.timeout_seconds),
            tries=max(1, int(number("ARGUSIC_MIRROR_TRIES", cls.tries))),
            backoff_seconds=number("ARGUSIC_MIRROR_BACKOFF", cls.backoff_seconds),
            max_bytes=int(number("ARGUSIC_MIRROR_MAX_MB", cls.max_bytes / 1_000_000) * 1_000_000),
        )


# --- running git on hostile input --------------------------------------------------------------------


class _GitFailed(Exception):
    def __init__(self, detail: str, transient: bool = False, missing: bool = False) -> None:
        super().__init__(detail)
        self.detail, self.transient, self.missing = detail, transient, missing


_MISSING = (
    "not our ref",
    "couldn't find remote ref",
    "no such remote ref",
    "unadvertised object",
    "not a valid object",
    "bad object",
    "no matching remote head",
)
_TRANSIENT = (
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "operation timed out",
    "timed out",
    "unable to connect",
    "unable to access",
    "early eof",
    "the remote end hung up",
    "rpc failed",
    "network is unreachable",
    "connection reset",
    "temporary failure",
    "http 5",
    "error: 5",
)


def _git_env(protocols: str) -> dict[str, str]:
    """git's environment, built from nothing: no variable of ours that names where a repository or
    its objects are (GIT_DIR, GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES,
    GIT_COMMON_DIR…) reaches it, only the settings below and the network's."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),  # ssh finds the operator's keys and known_hosts here
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,  # no insteadOf rewrites, helpers or hooks from the user
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_ALLOW_PROTOCOL": protocols,  # no ext::, fd:: or other transport helpers
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=30 -o StrictHostKeyChecking=accept-new",
        "GIT_HTTP_LOW_SPEED_LIMIT": "1000",  # bytes/s: below this for…
        "GIT_HTTP_LOW_SPEED_TIME": "60",  # …this many seconds, the transfer is abandoned
    }
    for name in (
        "SSH_AUTH_SOCK",
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "no_proxy",
        "NO_PROXY",
    ):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


SAFE_CONFIG = [
    "-c", "protocol.version=2",
    "-c", "http.followRedirects=false",
    "-c", "fetch.recurseSubmodules=false",
    "-c", "core.hooksPath=/dev/null",
]  # fmt: skip


def _size_of(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _run_git(
    args: list[str],
    git_dir: Path,
    policy: FetchPolicy,
    protocols: str = "https:http:ssh:git",
    watch_size: bool = False,
) -> str:
    """Run one git command with a timeout (and a size watch for fetches); _GitFailed on failure."""
    proc = subprocess.Popen(
        ["git", *SAFE_CONFIG, "--git-dir", str(git_dir), *args],
        env=_git_env(protocols),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # killed as a group: ssh and git-remote-https with it
    )
    deadline = time.monotonic() + policy.timeout_seconds
    why_killed = None
    while True:
        try:
            out, err = proc.communicate(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                why_killed = f"timed out after {policy.timeout_seconds:g} s"
            elif watch_size and _size_of(git_dir) > policy.max_bytes:
                why_killed = (
                    f"over the mirror size limit of {policy.max_bytes / 1e6:g} MB (ARGUSIC_MIRROR_MAX_MB)"
                )
            if why_killed:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise _GitFailed(why_killed, transient=why_killed.startswith("timed out")) from None
    if proc.returncode != 0:
        text = err.decode(errors="replace")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("From ")]
        detail = "; ".join(lines[-2:])[:400] or f"git exited with code {proc.returncode}"
        low = text.lower()
        missing = any(m in low for m in _MISSING)
        transient = not missing and any(t in low for t in _TRANSIENT)
        raise _GitFailed(detail, transient=transient, missing=missing)
    return out.decode(errors="replace").strip()


def has_commit(git_dir: Path, commit: str) -> bool:
    if not _COMMIT.match(commit):
        return False
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"],
        env=_git_env("file"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _is_bare_repo(path: Path) -> bool:
    if not ((path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()):
        return False
    done = subprocess.run(
        ["git", "--git-dir", str(path), "rev-parse", "--is-bare-repository"],
        env=_git_env("file"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0 and done.stdout.strip() == b"true"


# --- local sources -----------------------------------------------------------------------------------

# Files through which git reads a repository's objects from another folder of the host.
BORROWING_FILES = ("objects/info/alternates", "objects/info/http-alternates", "commondir")
_SHOWN_LINE = 200


def borrowed_objects(repo: Path) -> str | None:
    """Why the bare repository `repo` would read objects from outside itself, or None: a borrowing
    file (named, with its first line), or a symbolic link in `objects/` (git follows them)."""
    for name in BORROWING_FILES:
        path = repo / name
        if os.path.lexists(path):
            first = ""
            with contextlib.suppress(OSError, ValueError), open(path, "rb") as handle:
                first = handle.readline(_SHOWN_LINE).decode(errors="replace").strip()
            return f"{path} exists (it names {first!r})" if first else f"{path} exists"
    objects = repo / "objects"
    if objects.is_symlink():
        return f"{objects} is a symbolic link"
    for folder, dirs, files in os.walk(objects):
        for name in (*dirs, *files):
            if os.path.islink(os.path.join(folder, name)):
                return f"{os.path.join(folder, name)} is a symbolic link"
    return None


def local_repository(path_text: str, commit: str, roots: list[Path] | None) -> Path:
    """The real path of a local bare repository holding `commit` in its own objects;
    SourceUnavailable otherwise.

    `roots=None` skips the allowed-roots check (an attempt of a pool already checked); a repository
    that borrows objects (`borrowed_objects`) is refused either way, as it may have changed since."""
    try:
        real = Path(path_text).resolve(strict=True)
    except (OSError, RuntimeError):
        raise SourceUnavailable(f"local repository {path_text} does not exist") from None
    if roots is not None and not any(real == r or real.is_relative_to(r) for r in roots):
        shown = ", ".join(str(r) for r in roots) or "none"
        raise SourceUnavailable(
            f"local path {path_text} is outside the allowed roots ({shown}): if you trust it, add its "
            "folder to ARGUSIC_REPO_ROOTS (or pass --repo-root); otherwise serve it by URL"
        )
    # Before git opens it: git itself would follow the alternates.
    borrowed = borrowed_objects(real)
    if borrowed is not None:
        raise SourceUnavailable(
            f"local repository {path_text} borrows objects from outside itself: {borrowed}; refused "
            "(to keep it, copy the objects in with `git repack -a -d` and remove the file or link)"
        )
    if not _is_bare_repo(real):
        raise SourceUnavailable(
            f"{path_text} is not a bare git repository (make one with git clone --bare <src> {path_text})"
        )
    if not has_commit(real, commit):
        raise SourceUnavailable(f"commit {commit} is not in {path_text}")
    return real


# --- the mirror cache --------------------------------------------------------------------------------


def mirror_path(source: Source, root: Path | None = None) -> Path:
    return (root or mirror_dir()) / f"{source.digest}.git"


def _create_mirror(source: Source, final: Path, policy: FetchPolicy) -> None:
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(
        ["git", "init", "--bare", "--quiet", str(tmp)],
        env=_git_env("file"),
        check=True,
        capture_output=True,
    )
    # The URL goes into the config, never onto a command line: it cannot be read as an option.
    for key, value in (
        ("remote.origin.url", source.url),
        ("uploadpack.allowAnySHA1InWant", "true"),  # attempts fetch the pinned commit by id
        ("core.logAllRefUpdates", "false"),
    ):
        _run_git(["config", key, value], tmp, policy)
    (tmp / META_FILE).write_text(json.dumps({"url": source.url}) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


def _fetch(source: Source, git_dir: Path, commit: str, policy: FetchPolicy) -> None:
    """Fetch the pinned commit (by id, depth 1), retrying network errors with backoff."""

    def transient(err: BaseException) -> bool:
        return isinstance(err, _GitFailed) and err.transient

    retrying = Retrying(
        stop=stop_after_attempt(policy.tries),
        wait=wait_exponential(multiplier=policy.backoff_seconds, max=60),
        retry=retry_if_exception(transient),
        reraise=True,
        before_sleep=lambda state: log.warning(
            "mirror %s: try %d failed (%s); retrying",
            source.url,
            state.attempt_number,
            state.outcome.exception(),
        ),
    )
    ref = f"+{commit}:{PIN_REF}{commit}"
    try:
        for attempt in retrying:
            with attempt:
                _run_git(
                    ["fetch", "--quiet", "--no-tags", "--depth", "1", "origin", ref],
                    git_dir,
                    policy,
                    watch_size=True,
                )
        return
    except _GitFailed as err:
        if not err.missing:
            raise
    # Refused by id (an older server, or a commit not on any advertised ref): its branches and tags.
    for attempt in retrying:
        with attempt:
            _run_git(
                [
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "origin",
                    "+refs/heads/*:refs/heads/*",
                    "+refs/tags/*:refs/tags/*",
                ],
                git_dir,
                policy,
                watch_size=True,
            )


def ensure_remote(
    source: Source, commit: str, policy: FetchPolicy | None = None, root: Path | None = None
) -> Path:
    """The mirror of a remote source, holding `commit` (fetched if needed); SourceUnavailable else."""
    policy = policy or FetchPolicy.from_env()
    final = mirror_path(source, root)
    with exclusive_lock(final.with_name(f".{final.name}.lock")):
        if not _is_bare_repo(final):
            _create_mirror(source, final, policy)
        if not has_commit(final, commit):
            try:
                _fetch(source, final, commit, policy)
            except _GitFailed as err:
                if err.missing:
                    raise SourceUnavailable(
                        f"commit {commit} is not in {source.url} ({err.detail})"
                    ) from None
                if err.detail.startswith("over the mirror size limit"):
                    shutil.rmtree(final, ignore_errors=True)
                tries = f" after {policy.tries} tries" if err.transient and policy.tries > 1 else ""
                raise SourceUnavailable(f"could not fetch {source.url}{tries}: {err.detail}") from None
            if _size_of(final) > policy.max_bytes:  # a fetch too quick for the watch is caught here
                shutil.rmtree(final, ignore_errors=True)
                raise SourceUnavailable(
                    f"could not mirror {source.url}: over the mirror size limit of "
                    f"{policy.max_bytes / 1e6:g} MB (ARGUSIC_MIRROR_MAX_MB)"
                )
            if not has_commit(final, commit):
                raise SourceUnavailable(f"commit {commit} is not in {source.url} (in no branch or tag)")
        with contextlib.suppress(_GitFailed):  # keep it safe from gc, whichever way it came
            _run_git(["update-ref", f"{PIN_REF}{commit}", commit], final, policy)
    return final


def source_repository(
    repo_url: str,
    commit: str,
    roots: list[Path] | None,
    policy: FetchPolicy | None = None,
) -> Path:
    """A local bare repository holding `commit` for this repo_url: the mirror of a remote source,
    or the local repository itself. SourceUnavailable (with the reason) otherwise."""
    try:
        source = parse_source(repo_url)
    except SourceError as err:
        raise SourceUnavailable(f"repo_url {err}") from None
    if source.kind == "local":
        return local_repository(source.url, commit, roots)
    return ensure_remote(source, commit, policy)


def check_sources(
    pairs: Iterable[tuple[str, str, str]],
    roots: list[Path] | None = None,
    workers: int = 4,
    policy: FetchPolicy | None = None,
) -> dict[str, str]:
    """Check (key, repo_url, commit) triples before a cycle: {key: reason} for those unavailable.

    Remote sources are mirrored (or brought up to date); one URL is handled by one worker at a time."""
    roots = repo_roots() if roots is None else roots
    policy = policy or FetchPolicy.from_env()
    by_url: dict[str, list[tuple[str, str]]] = {}
    for key, url, commit in pairs:
        by_url.setdefault(url, []).append((key, commit))

    def one(url: str) -> dict[str, str]:
        failed, known = {}, {}
        for key, commit in by_url[url]:
            if commit not in known:
                try:
                    source_repository(url, commit, roots, policy)
                    known[commit] = None
                except SourceUnavailable as err:
                    known[commit] = str(err)
            if known[commit] is not None:
                failed[key] = known[commit]
        return failed

    reasons: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for failed in pool.map(one, sorted(by_url)):
            reasons.update(failed)
    return reasons


def attempt_source(repo_url: str, commit: str) -> Path:
    """The local bare repository an attempt's executor mounts read-only (the container fetches only
    the pinned commit from it). Remote: the mirror (fetched again if the cache lost it). Local: the
    repository itself (its root was checked when the pool was drawn). SourceUnavailable otherwise:
    the attempt does not start (like a key that cannot be made)."""
    return source_repository(repo_url, commit, roots=None)
