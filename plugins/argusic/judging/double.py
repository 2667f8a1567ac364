"""Model judges against the model double (issue #28): the real judge CLI, a scripted model.

A *judgement script* is a model-double script (``argusic.sandbox.model_double.load_script``) whose
turns are what a judge's model would answer: optionally tool calls (the CLI reads evidence files with
its own tools, in its container), then a final text turn whose text is the verdict JSON. The judge CLI
runs for real in its container (``argusic.judging.judges.run_judge``); only the model is scripted, so
the session, the final message and the verdict checks come from the real CLI's output.

``DoubleBroker`` is the key broker of such a run, in the place of the routing gateway's: ``create``
mints a per-run key, starts the double (``python3 model_double.py serve`` in the runner image) on a
fresh *internal* Docker network of its own (nothing else reachable from it) with that key as the only
one it accepts, and returns the key with the double's URL; ``delete`` removes the double, its network
and its staged files, so the key is dead however the judge ended. The judge's container joins that
network (``network`` attribute, read by ``run_judge``). The double's request log (header names, never
a key) is kept on the broker as ``requests``.

Claude Code and Codex judges: the double speaks the Anthropic Messages API (Claude Code: tool calls
such as ``Read``) and the OpenAI Responses API as Codex 0.171.0 calls it (tool calls are
``exec_command`` with a ``cmd``: a Codex judge reads the evidence with ``cat``, run in /evidence).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from argusic.attempts.keys import IssuedKey, KeyRef, KeyStats, KeyUnavailable, new_alias
from argusic.core.settings import runner_image
from argusic.sandbox import model_double
from argusic.sandbox.containment import locked_container_options

SCRIPT_SUFFIX = ".json"
MAX_SCRIPT_BYTES = 1 << 20
DOUBLE_LABEL = "argusic.judge.double"
DOUBLE_PORT = 8080
START_SECONDS = 30
SCRIPTED_HARNESSES = ("claude-code", "codex")  # the double speaks Anthropic Messages and OpenAI Responses


class JudgeScriptError(ValueError):
    """A judgement script that cannot be used (unreadable, a link, too big, not a valid script)."""


def read_judge_script(path: Path) -> tuple[bytes, list[dict]]:
    """A judgement script's bytes and its validated turns (never through a link, capped)."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        raise JudgeScriptError(f"{path}: not a regular file (scripts are read without links)")
    data = path.read_bytes()[: MAX_SCRIPT_BYTES + 1]
    if len(data) > MAX_SCRIPT_BYTES:
        raise JudgeScriptError(f"{path}: over {MAX_SCRIPT_BYTES} bytes")
    try:
        turns = model_double.load_script(json.loads(data))
    except (ValueError, model_double.ScriptError) as err:
        raise JudgeScriptError(f"{path}: {err}") from None
    return data, turns


def script_model(script: bytes) -> str:
    """The judgement's ``model`` for a scripted judge: what answered, not what the CLI asked for."""
    return f"model-double/{hashlib.sha256(script).hexdigest()[:16]}"


def judge_scripts(scripts_dir: Path, attempt_id: str, judge_ids: list[str]) -> dict[str, Path]:
    """The judgement script of each judge for this attempt: ``<dir>/<attempt_id>/<judge>.json`` wins
    over ``<dir>/<judge>.json``; links are not followed."""
    found: dict[str, Path] = {}
    for judge_id in judge_ids:
        for candidate in (
            scripts_dir / attempt_id / f"{judge_id}{SCRIPT_SUFFIX}",
            scripts_dir / f"{judge_id}{SCRIPT_SUFFIX}",
        ):
            if candidate.is_file() and not candidate.is_symlink():
                found[judge_id] = candidate
                break
    return found


class DoubleBroker:
    """A key broker whose gateway is the model double answering ``script`` (see the module's docs).
    One key at a time: one broker per judge run."""

    def __init__(self, script: Path, *, image: str | None = None) -> None:
        self.script_bytes, self.turns = read_judge_script(script)
        self.image = image or runner_image()
        self.stats = KeyStats()
        self.network: str | None = None
        self.requests: list[dict] = []
        self._token: str | None = None
        self._alias: str | None = None
        self._attempt_id: str | None = None
        self._container: Any = None
        self._network: Any = None
        self._stage: Path | None = None

    @property
    def model(self) -> str:
        return script_model(self.script_bytes)

    def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None) -> IssuedKey:
        import docker  # deferred: the Docker SDK loads only when a double runs

        if self._token is not None:
            raise KeyUnavailable("this model double already has a key (one judge run per broker)")
        value = f"sk-double-{secrets.token_hex(24)}"
        try:
            base_url = self._start(docker, value)
        except Exception as err:
            self._stop()
            self.stats.add("create_failed")
            raise KeyUnavailable(f"model double did not start: {err}") from None
        key = IssuedKey(
            value=value,
            kind="per_run",
            attempt_id=attempt_id,
            alias=new_alias(attempt_id),
            limit_usd=limit_usd,
            base_url=base_url,
        )
        self._token, self._alias, self._attempt_id = key.token_id, key.alias, attempt_id
        self.stats.add("created")
        return key

    def _start(self, docker: Any, value: str) -> str:
        client = docker.from_env()
        tag = secrets.token_hex(6)
        self._stage = Path(tempfile.mkdtemp(prefix="argusic-double-"))
        self._stage.chmod(0o755)
        shutil.copyfile(model_double.__file__, self._stage / "model_double.py")
        (self._stage / "script.json").write_bytes(self.script_bytes)
        (self._stage / "key").write_text(value)
        for name in ("model_double.py", "script.json", "key"):
            (self._stage / name).chmod(0o644)  # the image's unprivileged user reads them
        self._network = client.networks.create(
            f"argusic-judge-double-{tag}", driver="bridge", internal=True, labels={DOUBLE_LABEL: "1"}
        )
        self.network = self._network.name
        options = locked_container_options(
            tmpfs={"/tmp": "rw,noexec,nosuid,nodev,size=16m"},
            volumes={str(self._stage): {"bind": "/double", "mode": "ro"}},
            working_dir="/tmp",
            environment={"LANG": "C.UTF-8"},
            memory="256m",
            pids=64,
            cpus=0.5,
        )
        del options["network_disabled"], options["network_mode"]
        serve = (
            "exec python3 -I /double/model_double.py serve --script /double/script.json"
            f" --key-file /double/key --log /tmp/requests.jsonl --port {DOUBLE_PORT}"
            ' --host "$(hostname -i)"'
        )
        self._container = client.containers.run(
            self.image,
            ["sh", "-c", serve],
            detach=True,
            name=f"argusic-judge-double-{tag}",
            network=self.network,
            labels={DOUBLE_LABEL: "1"},
            **options,
        )
        deadline = time.monotonic() + START_SECONDS
        while b"model double:" not in self._container.logs() and time.monotonic() < deadline:
            self._container.reload()
            if self._container.status == "exited":
                break
            time.sleep(0.2)
        self._container.reload()
        logs = self._container.logs()
        address = self._container.attrs["NetworkSettings"]["Networks"][self.network]["IPAddress"]
        if b"model double:" not in logs or not address:
            raise RuntimeError(logs[-500:].decode(errors="replace").strip() or "no answer")
        return f"http://{address}:{DOUBLE_PORT}/v1"

    def _stop(self) -> None:
        """Remove the double, its network and its staged files (the key with them)."""
        import docker  # deferred: the Docker SDK loads only when a double runs

        if self._container is not None:
            with contextlib.suppress(docker.errors.DockerException):
                log = self._container.exec_run(["cat", "/tmp/requests.jsonl"]).output.decode(errors="replace")
                self.requests = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
            with contextlib.suppress(docker.errors.DockerException):
                self._container.remove(force=True)
            self._container = None
        if self._network is not None:
            with contextlib.suppress(docker.errors.DockerException):
                self._network.remove()
            self._network = None
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)
            self._stage = None

    def delete(self, key: IssuedKey | KeyRef | str) -> bool:
        tid = key if isinstance(key, str) else key.token_id
        if self._token is None or tid != self._token:
            return False
        self._stop()
        self._token = None
        self.stats.add("deleted")
        return True

    def list_attempt_keys(self) -> list[KeyRef]:
        return [] if self._token is None else [KeyRef(self._token, self._alias, self._attempt_id)]


__all__ = [
    "SCRIPTED_HARNESSES",
    "DoubleBroker",
    "JudgeScriptError",
    "judge_scripts",
    "read_judge_script",
    "script_model",
]
