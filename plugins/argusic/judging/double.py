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
and its staged files, so the key is dead however the judge ended (the container's start and stop:
``argusic.sandbox.double_container.DoubleContainer``, shared with ``argusic model-double attempt``).
The judge's container joins that network (``network`` attribute, read by ``run_judge``). The double's
request log (header names, never a key) is kept on the broker as ``requests``.

Claude Code and Codex judges: the double speaks the Anthropic Messages API (Claude Code: tool calls
such as ``Read``) and the OpenAI Responses API as Codex 0.171.0 calls it (tool calls are
``exec_command`` with a ``cmd``: a Codex judge reads the evidence with ``cat``, run in /evidence).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

from argusic.attempts.keys import IssuedKey, KeyRef, KeyStats, KeyUnavailable, new_alias
from argusic.core.settings import runner_image
from argusic.sandbox import model_double
from argusic.sandbox.double_container import DoubleContainer

SCRIPT_SUFFIX = ".json"
MAX_SCRIPT_BYTES = 1 << 20
DOUBLE_LABEL = "argusic.judge.double"
DOUBLE_PORT = 8080
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


PAIRED_READS = ("task.md", "statement.md", "gold.patch", "P.patch", "Q.patch", "P.grade.json", "Q.grade.json")


def paired_judge_script(
    answer: dict | str, harness: str = "claude-code", reads: tuple[str, ...] = PAIRED_READS
) -> dict:
    """A judgement script for a paired patch review (``argusic.judging.paired``, issue #31): the model
    reads the pair's context files with the CLI's own tools (Claude Code: ``Read`` of
    ``/evidence/<file>``; Codex: ``cat <file>`` through exec_command, one call a turn), then answers
    ``answer`` (an ``argusic.paired_answer/1`` object, or any text: a malformed answer is scripted as
    easily) as its final message."""
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    final = {"text": text, "usage": {"input_tokens": 6000, "output_tokens": 400}}
    if harness == "codex":
        turns = [
            {"text": f"Reading {name}.",
             "tool_calls": [{"name": "exec_command", "input": {"cmd": f"cat {name}"}}],
             "usage": {"input_tokens": 3000 + 300 * i, "output_tokens": 30}}
            for i, name in enumerate(reads)
        ]  # fmt: skip
        return {"turns": [*turns, final]}
    if harness != "claude-code":
        raise JudgeScriptError(f"{harness}: the double speaks {', '.join(SCRIPTED_HARNESSES)}")
    calls = [{"name": "Read", "input": {"file_path": f"/evidence/{name}"}} for name in reads]
    first = {
        "text": "Reading the pair.",
        "tool_calls": calls,
        "usage": {"input_tokens": 3000, "output_tokens": 80},
    }
    return {"turns": [first, final]}


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
        self._double: DoubleContainer | None = None

    @property
    def model(self) -> str:
        return script_model(self.script_bytes)

    def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None) -> IssuedKey:
        if self._token is not None:
            raise KeyUnavailable("this model double already has a key (one judge run per broker)")
        value = f"sk-double-{secrets.token_hex(24)}"
        self._double = DoubleContainer(
            self.script_bytes,
            key=value,
            image=self.image,
            name_prefix="argusic-judge-double",
            label=DOUBLE_LABEL,
            port=DOUBLE_PORT,
        )
        try:
            base_url = self._double.start()  # removes what it made when it does not answer
        except Exception as err:
            self.network = self._double.network  # its name stays: what was made is removed
            self._stop()
            self.stats.add("create_failed")
            raise KeyUnavailable(f"model double did not start: {err}") from None
        self.network = self._double.network
        key = IssuedKey(
            value=value,
            kind="per_run",
            attempt_id=attempt_id,
            alias=new_alias(attempt_id),
            limit_usd=limit_usd,
            base_url=f"{base_url}/v1",
        )
        self._token, self._alias, self._attempt_id = key.token_id, key.alias, attempt_id
        self.stats.add("created")
        return key

    @property
    def _stage(self) -> Path | None:
        """The double's staged files (script, key), while it runs."""
        return None if self._double is None else self._double.stage

    def _stop(self) -> None:
        """Remove the double, its network and its staged files (the key with them)."""
        if self._double is not None:
            self._double.stop()
            self.requests = self._double.requests
            self._double = None

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
    "paired_judge_script",
    "read_judge_script",
    "script_model",
]
