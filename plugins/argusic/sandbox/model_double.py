"""A scripted model service: the Anthropic Messages API as the pinned Claude Code CLI calls it, and
the OpenAI Responses API as the pinned Codex CLI calls it, answering each turn from a script instead
of a model (issue #28).

Standard library only, so that it runs as ``python3 model_double.py serve …`` in the runner image
(the plugins folder mounted read-only) on a Docker network a test or the operator made; it binds only
to the address it is told (127.0.0.1 by default, never 0.0.0.0 implicitly).

The script is JSON: ``{"turns": [turn, …]}`` (or the bare list); script files, one per project x harness
x kind, live in ``plugins/argusic/model_scripts/<project>/<harness>.<kind>.json`` (``script_file``,
``load_script_file``) with ``schema``, ``project``, ``harness``, ``kind`` and ``about`` beside the turns,
outside every folder an attempt container sees. A turn is one of::

    {"text": "…"}                                    final answer (stop_reason end_turn)
    {"tool_calls": [{"name": "Bash", "input": {"command": "…"}}, …], "text": "optional preamble"}
    {"status": 500 | 429 | 529, "message": "…"}      an API error for this request (consumed)

and may carry ``"usage": {"input_tokens": n, "output_tokens": n, "cache_read_input_tokens": n,
"cache_creation_input_tokens": n}`` (defaults: 100 in, 20 out) and ``"delay": seconds`` (wait that
long before answering: a slow or hung model); no other key. The rules are checked by hand (standard
library) and against ``schemas/model-script-1.schema.json`` where jsonschema is installed; a script
that breaks one is refused (``ScriptError`` naming the turn and field). Only *agent turns* consume the
script: requests that offer tools (the CLI's main loop). Requests without tools (e.g. a title or
quota probe on the small model) get a short fixed text answer. When the script is exhausted the
service answers 500 with ``script exhausted`` in the error message, so a test sees it at once.

Requests are checked against the key given to the server (``x-api-key`` or ``Authorization:
Bearer``): a wrong or missing key is 401 ``authentication_error``. Every request is logged as one JSON
line (method, path, the header *names*, model, stream, tool names, the turn answered and the tokens its
answer stated, ``usage``; never a key).

With a master key (``--master-key-file``) the double is also the LiteLLM gateway of the key broker:
LiteLLM's key endpoints, each minted key's spend priced from seed model_prices (or ``--prices``) and
its max_budget enforced as LiteLLM 1.108.7 does (``KeyGateway``; sources named there).

Sources: the Messages API reference and its streaming page (docs.anthropic.com/en/api/messages,
…/messages-streaming): event order message_start, content_block_start, content_block_delta
(text_delta / input_json_delta), content_block_stop, message_delta (stop_reason, usage), message_stop;
error body ``{"type": "error", "error": {"type", "message"}}``.

The Responses API (``POST /v1/responses``, what Codex 0.171.0 sends with ``wire_api =
"responses"``) answers from the same script, see ``responses_output`` / ``responses_stream_events``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import hmac
import json
import secrets
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

DEFAULT_USAGE = {"input_tokens": 100, "output_tokens": 20}
DEFAULT_MODEL = "claude-model-double"
SIDE_ANSWER = "ok"  # answer to requests that offer no tools (title / quota probes)
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class ScriptError(ValueError):
    """The script is not a list of valid turns (the message names the file, turn and field)."""


# Scripts as data: plugins/argusic/model_scripts/<project>/<harness>.<kind>.json, beside the package's
# demo projects but outside every folder that reaches an attempt container (the forge commits
# demo_projects/<id>/ whole; the container mounts the harness and task folders only).
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
SCRIPTS_DIR = PACKAGE_ROOT / "model_scripts"
SCHEMA_FILE = PACKAGE_ROOT / "schemas" / "model-script-1.schema.json"
SCRIPT_SCHEMA = "argusic.model-script/1"
SCRIPT_KEYS = {"schema", "project", "harness", "kind", "about", "turns"}
TURN_KEYS = {"text", "tool_calls", "status", "message", "usage", "delay"}
CALL_KEYS = {"name", "input", "id"}
# Anthropic's names, and the Responses API's own (cached_tokens, reasoning_tokens: see responses_usage)
USAGE_KEYS = {
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cached_tokens",
    "reasoning_tokens",
}


def _check_turns(data: Any) -> list[dict]:
    """The hand-written rules (standard library: what the double checks in the runner image)."""
    if isinstance(data, dict):
        unknown = sorted(set(data) - SCRIPT_KEYS)
        if unknown:
            raise ScriptError(f"unknown key(s) {unknown} (a script has {sorted(SCRIPT_KEYS)})")
        if "schema" in data and data["schema"] != SCRIPT_SCHEMA:
            raise ScriptError(f"schema is {data['schema']!r}, expected {SCRIPT_SCHEMA!r}")
    turns = data.get("turns") if isinstance(data, dict) else data
    if not isinstance(turns, list) or not turns:
        raise ScriptError("a script is a non-empty list of turns (or {'turns': [...]})")
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise ScriptError(f"turn {i}: not an object")
        unknown = sorted(set(turn) - TURN_KEYS)
        if unknown:
            raise ScriptError(f"turn {i}: unknown key(s) {unknown} (a turn has {sorted(TURN_KEYS)})")
        if "status" in turn and ("text" in turn or "tool_calls" in turn):
            raise ScriptError(f"turn {i}: a status turn has no text or tool_calls")
        if not any(k in turn for k in ("status", "text", "tool_calls")):
            raise ScriptError(f"turn {i}: needs text, tool_calls or status")
        if "status" in turn and turn["status"] not in ERROR_TYPES:
            raise ScriptError(f"turn {i}: status must be one of {sorted(ERROR_TYPES)}")
        if "message" in turn and not ("status" in turn and isinstance(turn["message"], str)):
            raise ScriptError(f"turn {i}: message is a string, on a status turn only")
        if "tool_calls" in turn:
            calls = turn["tool_calls"]
            if not isinstance(calls, list) or not calls:
                raise ScriptError(f"turn {i}: tool_calls is a non-empty list")
            for call in calls:
                if not (isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]):
                    raise ScriptError(f"turn {i}: each tool call has a name")
                if extra := sorted(set(call) - CALL_KEYS):
                    raise ScriptError(f"turn {i}: unknown key(s) {extra} in a tool call")
                if not isinstance(call.get("input", {}), dict):
                    raise ScriptError(f"turn {i}: a tool call's input is an object")
        if "text" in turn and not isinstance(turn["text"], str):
            raise ScriptError(f"turn {i}: text is a string")
        usage = turn.get("usage", {})
        if not (
            isinstance(usage, dict)
            and set(usage) <= USAGE_KEYS
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in usage.values())
        ):
            raise ScriptError(f"turn {i}: usage holds non-negative integers, keys among {sorted(USAGE_KEYS)}")
        delay = turn.get("delay", 0)
        if not (isinstance(delay, int | float) and not isinstance(delay, bool) and 0 <= delay <= 3600):
            raise ScriptError(f"turn {i}: delay is a number of seconds, 0 to 3600")
    return turns


def schema_problem(data: Any) -> str | None:
    """The first problem JSON Schema (schemas/model-script-1.schema.json) finds, as "where: what", or
    None; None also when jsonschema is not installed (the runner image: the hand rules still hold)."""
    try:
        import jsonschema  # deferred: absent from the runner image, where the double runs on the stdlib
    except ImportError:
        return None
    doc = data if isinstance(data, dict) else {"turns": data}
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the script"
    return f"{where}: {error.message}"


def load_script(data: Any) -> list[dict]:
    """Validate a script (the parsed JSON) and return its turns: the hand rules, then the schema."""
    turns = _check_turns(data)
    problem = schema_problem(data)
    if problem:
        raise ScriptError(f"does not match {SCHEMA_FILE.name}: {problem}")
    return turns


def load_script_file(path: Path) -> list[dict]:
    """The turns of a script file (ScriptError naming the file and the problem)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ScriptError(f"{path}: cannot read the script: {err.strerror or err}") from err
    except ValueError as err:
        raise ScriptError(f"{path}: not JSON: {err}") from err
    try:
        return load_script(data)
    except ScriptError as err:
        raise ScriptError(f"{path}: {err}") from err


def script_file(project: str, harness: str, kind: str, base: Path | None = None) -> Path:
    """Where the script of one project x harness x kind lives (ScriptError when there is none)."""
    path = (base or SCRIPTS_DIR) / project / f"{harness}.{kind}.json"
    if not path.is_file():
        have = sorted(p.name for p in path.parent.glob("*.json")) if path.parent.is_dir() else []
        raise ScriptError(f"no model script {path} (that project has {have or 'none'})")
    return path


def served_usage(input_tokens: int, output_tokens: int) -> dict:
    """What the request log keeps of a turn's answer: the tokens the double stated in it (the ground
    truth a CLI's own count is checked against, e.g. when the CLI is killed before its totals)."""
    return {"input_tokens": input_tokens, "output_tokens": output_tokens}


def error_body(status: int, message: str) -> dict:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def build_message(turn: dict, model: str) -> dict:
    """The Messages API Message for a text or tool_calls turn."""
    content: list[dict] = []
    if turn.get("text"):
        content.append({"type": "text", "text": turn["text"]})
    for call in turn.get("tool_calls", []):
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": call["name"],
                "input": call.get("input", {}),
            }
        )
    usage = {**DEFAULT_USAGE, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    usage.update(turn.get("usage", {}))
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.get("tool_calls") else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def stream_events(message: dict) -> list[bytes]:
    """The SSE frames of one message, in the order the streaming API sends them."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    frames = [sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            head = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        frames.append(
            sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": head})
        )
        frames.append(
            sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        frames.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    frames.append(
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": usage,
            },
        )
    )
    frames.append(sse("message_stop", {"type": "message_stop"}))
    return frames


class ModelDouble:
    """The script's state: which agent turn comes next, and the log of requests."""

    def __init__(
        self, turns: list[dict], key: str, log_file: Path | None = None, gateway: KeyGateway | None = None
    ) -> None:
        self.turns = turns
        self.key = key
        self.next_turn = 0
        self.lock = threading.Lock()
        self.log_file = log_file
        self.requests: list[dict] = []
        self.gateway = gateway  # LiteLLM's key management and spend limit, when a master key was given

    def key_ok(self, headers) -> bool:
        """The request carries the static key (the double's own; no gateway, no budget)."""
        given = given_key(headers)
        return bool(self.key and given) and hmac.compare_digest(given.encode(), self.key.encode())

    def authorize(self, headers, entry: dict, refusal: tuple[int, dict]) -> tuple[int, dict] | None:
        """None when the request may be answered (its key noted in ``entry["key"]``: "static", "master"
        or the virtual key's alias, never a value), else the answer to refuse it with: ``refusal`` for
        a key the double does not know without a gateway, LiteLLM's own error with one (unknown or
        expired key, or a key whose spend reached its max_budget)."""
        if self.key_ok(headers):
            entry["key"] = "static"
            return None
        if self.gateway is None:
            return refusal
        who, error = self.gateway.authorize(given_key(headers))
        if error is not None:
            entry["refused"] = error[1]["error"]["type"]
            return error
        entry["key"] = who
        return None

    def charge(self, entry: dict, model: str, tokens_in: int, tokens_out: int) -> None:
        """Add a served answer's cost to the virtual key that asked for it (LiteLLM counts spend after
        the answer; the next request is checked against it)."""
        if self.gateway is not None and entry.get("key") not in (None, "static", "master"):
            entry["cost_usd"] = self.gateway.charge(entry["key"], model, tokens_in, tokens_out)

    def take_turn(self) -> tuple[int, dict | None]:
        """The next agent turn (its index, or -1 when the script is exhausted)."""
        with self.lock:
            if self.next_turn >= len(self.turns):
                return -1, None
            index = self.next_turn
            self.next_turn += 1
            return index, self.turns[index]

    def turn_for(self, offers_tools: bool, entry: dict) -> tuple[dict | None, tuple[int, str] | None]:
        """The turn a request is answered with, after the turn's delay (a request that offers no tools,
        e.g. a CLI's side query, gets a short answer and uses no turn); or the error (status, message)
        to answer with instead: the script exhausted, or a scripted status. Notes the turn's index."""
        if offers_tools:
            index, turn = self.take_turn()
            entry["turn"] = index
            if turn is None:
                return None, (500, f"model double: script exhausted after {len(self.turns)} turns")
        else:
            entry["turn"] = None
            turn = {"text": SIDE_ANSWER, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if turn.get("delay"):
            time.sleep(float(turn["delay"]))
        if "status" in turn:
            status = int(turn["status"])
            return None, (status, turn.get("message") or f"scripted {status}")
        return turn, None

    def note(self, entry: dict) -> None:
        with self.lock:
            self.requests.append(entry)
            if self.log_file is not None:
                with self.log_file.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, sort_keys=True) + "\n")
        print(json.dumps(entry, sort_keys=True), file=sys.stderr, flush=True)


class Handler(BaseHTTPRequestHandler):
    server_version = "argusic-model-double/1"
    protocol_version = "HTTP/1.1"
    double: ModelDouble  # set on the subclass made by make_server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # requests are logged as JSON lines by ModelDouble.note

    def _send_json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if status == 429:
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return None

    def _entry(self, body: Any) -> dict:
        entry: dict[str, Any] = {
            "method": self.command,
            "path": self.path,
            "headers": sorted(h.lower() for h in self.headers),
        }
        for name in ("anthropic-version", "anthropic-beta", "user-agent", "x-app", "x-stainless-retry-count"):
            if self.headers.get(name):
                entry[name] = self.headers.get(name)
        if isinstance(body, dict):
            entry["model"] = body.get("model")
            entry["stream"] = body.get("stream")
            entry["max_tokens"] = body.get("max_tokens")
            entry["tools"] = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            entry["messages"] = len(body.get("messages") or [])
        return entry

    def _key_route(self, body: Any) -> bool:
        """Answer a LiteLLM key-management request (``/key/...``) when the double is a gateway; False
        when the path is none of those. Logged without the query (a key could be in it) or any body."""
        url = urlparse(self.path)
        gateway = self.double.gateway
        if gateway is None or not url.path.startswith("/key/"):
            return False
        entry: dict[str, Any] = {"method": self.command, "path": url.path}
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        status, payload = gateway.manage(self.command, url.path, given_key(self.headers), query, body)
        entry["status"] = status
        if isinstance(payload, dict) and payload.get("key_alias"):
            entry["key_alias"] = payload["key_alias"]
        self.double.note(entry)
        self._send_json(status, payload)
        return True

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self._key_route(None):
            return None
        entry = self._entry(None)
        refused = self.double.authorize(self.headers, entry, (401, error_body(401, "invalid x-api-key")))
        if refused is not None:
            entry["status"] = refused[0]
            self.double.note(entry)
            return self._send_json(*refused)
        if self.path.split("?")[0] == "/v1/models":
            entry["status"] = 200
            self.double.note(entry)
            model = {
                "type": "model",
                "id": DEFAULT_MODEL,
                "display_name": "model double",
                "created_at": "2026-01-01T00:00:00Z",
            }
            return self._send_json(
                200, {"data": [model], "has_more": False, "first_id": DEFAULT_MODEL, "last_id": DEFAULT_MODEL}
            )
        entry["status"] = 404
        self.double.note(entry)
        self._send_json(404, error_body(404, f"no such endpoint: {self.path}"))

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self.double.note({"method": "HEAD", "path": self.path, "status": 200})
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self._read_body()
        if self._key_route(body):
            return None
        entry = self._entry(body)
        path = self.path.split("?")[0]

        def answer(status: int, payload: dict) -> None:
            entry["status"] = status
            self.double.note(entry)
            self._send_json(status, payload)

        if path in RESPONSES_PATHS:
            return answer_responses(self, body, entry)
        refused = self.double.authorize(self.headers, entry, (401, error_body(401, "invalid x-api-key")))
        if refused is not None:
            return answer(*refused)
        if not isinstance(body, dict):
            return answer(400, error_body(400, "the body is not JSON"))
        if path == "/v1/messages/count_tokens":
            return answer(200, {"input_tokens": 100})
        if path != "/v1/messages":
            return answer(404, error_body(404, f"no such endpoint: {self.path}"))
        model = body.get("model") or DEFAULT_MODEL
        turn, error = self.double.turn_for(bool(body.get("tools")), entry)
        if error is not None:
            return answer(error[0], error_body(*error))
        message = build_message(turn, model)
        entry["status"] = 200
        entry["stop_reason"] = message["stop_reason"]
        entry["usage"] = served_usage(message["usage"]["input_tokens"], message["usage"]["output_tokens"])
        used = message["usage"]  # Anthropic's input_tokens leave out the cached ones: priced as input
        tokens_in = sum(
            used.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        self.double.charge(entry, model, tokens_in, used["output_tokens"])
        self.double.note(entry)
        if not body.get("stream"):
            data = json.dumps(message).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        return self._send_stream(stream_events(message))

    def _send_stream(self, frames) -> None:
        """A 200 server-sent-events answer of `frames` (bytes each), the connection closed after it."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for frame in frames:
            self.wfile.write(frame)
            self.wfile.flush()
        self.close_connection = True


# ---------------------------------------------------------------------------------------------------
# The OpenAI Responses API, as the pinned Codex CLI (0.171.0, ``wire_api = "responses"``) calls it.
#
# Seen in the CLI's real requests to this service (logged while writing it): ``POST <base_url>/responses``
# with ``Authorization: Bearer <key>``, ``accept: text/event-stream``, a JSON body ``{model, stream:
# true, input: [...], tools: [...], tool_choice, parallel_tool_calls, reasoning, store: false, include,
# prompt_cache_key, client_metadata}``; the tools a model of unknown metadata is offered are
# ``exec_command`` ({cmd, workdir, yield_time_ms, ...}), ``write_stdin`` ({session_id, chars, ...}),
# ``request_user_input``, ``view_image``, the ``multi_agent_v1`` namespace, the goal tools and
# ``web_search``; no ``apply_patch`` tool: an ``apply_patch <<'EOF' … EOF`` command through
# ``exec_command`` is taken by the CLI as a file change. The next request's ``input`` carries each call
# back as ``function_call`` and its result as ``function_call_output`` (same ``call_id``).
#
# Sources for the answer: the Responses API streaming events (developers.openai.com, "Streaming
# events": response.created, response.in_progress, response.output_item.added, response.content_part.
# added, response.output_text.delta / .done, response.content_part.done, response.function_call_
# arguments.delta / .done, response.output_item.done, response.completed, each with a sequence_number)
# and the CLI's reader, codex-rs/codex-api/src/sse/responses.rs of github.com/openai/codex (it acts on
# output_item.added / .done, output_text.delta, response.created, response.failed and
# response.completed, whose ``response.usage`` {input_tokens, input_tokens_details.cached_tokens,
# output_tokens, output_tokens_details.reasoning_tokens, total_tokens} becomes the token count; a
# stream that closes before response.completed is an error). Errors are ``{"error": {"message",
# "type", "param", "code"}}``.
#
# A script turn maps to: ``text`` -> one assistant ``message`` item (output_text); each of
# ``tool_calls`` -> one ``function_call`` item (``name``, ``arguments`` = the input as a JSON string,
# ``call_id`` = the call's ``id`` or a fresh one); ``usage``: ``input_tokens``, ``output_tokens``,
# ``cached_tokens`` (or ``cache_read_input_tokens``) and ``reasoning_tokens``.

RESPONSES_PATHS = ("/v1/responses", "/responses")
OPENAI_ERRORS = {  # status -> (type, code) as OpenAI's API states them
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    529: ("server_error", "overloaded"),
}


def openai_error_body(status: int, message: str) -> dict:
    kind, code = OPENAI_ERRORS.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def responses_usage(turn: dict) -> dict:
    """The Responses API usage of a turn (input_tokens include the cached ones, OpenAI's convention)."""
    given = turn.get("usage", {})
    tokens_in = given.get("input_tokens", DEFAULT_USAGE["input_tokens"])
    tokens_out = given.get("output_tokens", DEFAULT_USAGE["output_tokens"])
    cached = given.get("cached_tokens", given.get("cache_read_input_tokens", 0))
    return {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": tokens_out,
        "output_tokens_details": {"reasoning_tokens": given.get("reasoning_tokens", 0)},
        "total_tokens": tokens_in + tokens_out,
    }


def responses_output(turn: dict, model: str) -> dict:
    """The Responses API Response object for a text or tool_calls turn."""
    output: list[dict] = []
    if turn.get("text"):
        output.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}],
            }
        )
    for call in turn.get("tool_calls", []):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex}",
                "status": "completed",
                "call_id": call.get("id") or f"call_{uuid.uuid4().hex[:24]}",
                "name": call["name"],
                "arguments": json.dumps(call.get("input", {})),
            }
        )
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "usage": responses_usage(turn),
    }


def responses_stream_events(response: dict) -> list[bytes]:
    """The SSE frames of one Response, in the order the streaming API sends them (each frame's
    ``event:`` is its ``type``; ``sequence_number`` counts from 0)."""
    events: list[dict] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=opening)
    emit("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        ids = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            for part_index, part in enumerate(item["content"]):
                at = {**ids, "content_index": part_index}
                emit("response.content_part.added", **at, part={**part, "text": ""})
                emit("response.output_text.delta", **at, delta=part["text"], logprobs=[])
                emit("response.output_text.done", **at, text=part["text"], logprobs=[])
                emit("response.content_part.done", **at, part=part)
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            emit("response.function_call_arguments.delta", **ids, delta=item["arguments"])
            emit("response.function_call_arguments.done", **ids, arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response)
    return [sse(event["type"], event) for event in events]


def answer_responses(handler: Handler, body: Any, entry: dict) -> None:
    """Answer one ``POST /v1/responses`` (the key checked, a turn of the script taken when the request
    offers tools, streamed when asked)."""
    double = handler.double
    entry["api"] = "responses"
    if isinstance(body, dict):
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        entry["input_items"] = len(items)
        entry["tool_outputs"] = sum(1 for i in items if i.get("type") == "function_call_output")
        entry["tools"] = [
            t.get("name") or t.get("type") for t in body.get("tools") or [] if isinstance(t, dict)
        ]
        entry.pop("messages", None)
        entry.pop("max_tokens", None)

    def answer(status: int, payload: dict) -> None:
        entry["status"] = status
        double.note(entry)
        handler._send_json(status, payload)

    refused = double.authorize(
        handler.headers, entry, (401, openai_error_body(401, "Incorrect API key provided."))
    )
    if refused is not None:
        return answer(*refused)
    if not isinstance(body, dict):
        return answer(400, openai_error_body(400, "the body is not JSON"))
    model = body.get("model") or DEFAULT_MODEL
    turn, error = double.turn_for(bool(body.get("tools")), entry)
    if error is not None:
        return answer(error[0], openai_error_body(*error))
    response = responses_output(turn, model)
    entry["status"] = 200
    entry["output"] = [i["type"] for i in response["output"]]
    entry["usage"] = served_usage(response["usage"]["input_tokens"], response["usage"]["output_tokens"])
    double.charge(entry, model, response["usage"]["input_tokens"], response["usage"]["output_tokens"])
    double.note(entry)
    if not body.get("stream"):
        return handler._send_json(200, response)
    return handler._send_stream(responses_stream_events(response))


# ---------------------------------------------------------------------------------------------------
# LiteLLM's key management and spend limit (issue #28, "keys through the gateway path"): with a master
# key the double is also the gateway the key broker (argusic.attempts.keys.LiteLLMKeyBroker) mints
# per-attempt keys on, and model requests may carry those keys; each key's spend is kept and a key
# whose spend reached its max_budget is refused as LiteLLM refuses it.
#
# Read from litellm 1.108.7 (the version scripts/start_litellm.sh pins), the wheel's source:
# - proxy/management_endpoints/key_management_endpoints.py: generate_key_fn / generate_key_helper_fn
#   (the value ``"sk-" + secrets.token_urlsafe(16)`` unless the body gives ``key``; stored under its
#   SHA-256 hex, the ``token``; the answer has ``key`` (the value, the only time it is shown),
#   ``token`` and ``token_id`` (the hash), ``key_name`` ("sk-..." + the value's last 4), key_alias,
#   max_budget, spend 0.0, metadata, expires from ``duration`` ("30s", "10m", "1h", "1d"); an alias
#   already taken is 400 "Key with alias '…' already exists. Unique key aliases across all keys are
#   required."); delete_key_fn (``{"keys": [hash or value]}`` or ``{"key_aliases": [...]}`` ->
#   ``{"deleted_keys": [...]}``; none found -> 404, message "{'error': 'No keys found'}"; deleted keys
#   are archived and ``/key/info`` still answers for them with ``"status": "deleted"``); list_keys
#   (page, size <= 100, key_alias exact or, with substring_matching, a case-insensitive substring,
#   return_full_object -> ``{"keys", "total_count", "current_page", "total_pages"}``); info_key_fn
#   (``{"key": <as asked>, "info": {... without "token", "status"}}``, unknown -> 404 "Key not found in
#   database").
# - proxy/auth/auth_checks.py virtual_key_max_budget_check: before a model request, ``spend >=
#   max_budget`` raises BudgetExceededError("Budget has been exceeded! Key=<alias> (<key_name>)
#   Current cost: <spend>, Max budget: <max_budget>"); proxy/auth/auth_exception_handler.py makes it a
#   ProxyException of type "budget_exceeded" whose code is ``litellm.budget_exceeded_status_code``
#   (422 in 1.108.7; 429 and 400 in earlier releases); proxy_server.py's ProxyException handler answers
#   HTTP int(code) with ``{"error": {"message", "type", "param", "code": "<code>"}}``, on /v1/messages
#   too (the check runs in the auth dependency, before the Anthropic route maps its own errors).
#   An unknown key: 401 "Authentication Error, Invalid API key provided." (type
#   token_not_found_in_db, param key); an expired one: 401 "Authentication Error - Expired Key. …"
#   (type expired_key).
# - Spend: LiteLLM adds each answered request's cost (tokens x the model's prices) to the key after the
#   answer. Here: the tokens the double served x the prices of the model the request named, from the
#   project's seed model_prices (``dbt_project/seeds/model_prices.csv``) or ``--prices`` (that CSV's
#   columns, or JSON ``{model: {"input": usd_per_million, "output": usd_per_million}}``); cached input
#   tokens at the input price (the seed does not price them apart); a model without a price costs 0
#   and the log says ``"priced": false``.

BUDGET_EXCEEDED_STATUS = 422  # litellm.budget_exceeded_status_code of 1.108.7
# The checkout's seed; a copy of this file alone (in /double/ of a double's container) has no checkout
# above it: its prices come with --prices.
_CHECKOUT = PACKAGE_ROOT.parents[1] if len(PACKAGE_ROOT.parents) > 1 else PACKAGE_ROOT
DEFAULT_PRICES_FILE = _CHECKOUT / "dbt_project" / "seeds" / "model_prices.csv"
MAX_LIST_SIZE = 100


def given_key(headers) -> str:
    """The key a request carries: ``x-api-key`` (Anthropic's header) or ``Authorization: Bearer``."""
    given = headers.get("x-api-key") or ""
    auth = headers.get("authorization") or ""
    if not given and auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    return given


def hash_token(value: str) -> str:
    """LiteLLM's stored id of a key (litellm.proxy.utils.hash_token: SHA-256 hex)."""
    return hashlib.sha256(value.encode()).hexdigest()


def hash_if_needed(token: str) -> str:
    """A key value ("sk-…") hashed; anything else taken as the hash already (hash_token_if_needed)."""
    return hash_token(token) if token.startswith("sk-") else token


def litellm_error(status: int, message: str, kind: str, param: str | None = None) -> tuple[int, dict]:
    """(status, body) of a LiteLLM ProxyException: OpenAI's error shape, ``code`` the status as text."""
    return status, {"error": {"message": message, "type": kind, "param": param, "code": str(status)}}


def load_prices(path: Path) -> dict[str, tuple[float, float]]:
    """USD per token (input, output) by model, from the seed's CSV (model, usd_per_million_input_tokens,
    usd_per_million_output_tokens) or JSON ``{model: {"input": …, "output": …}}`` (per million)."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix == ".json":
        rows = [{"model": m, "in": v["input"], "out": v["output"]} for m, v in json.loads(text).items()]
    else:
        rows = [
            {
                "model": r["model"],
                "in": r["usd_per_million_input_tokens"],
                "out": r["usd_per_million_output_tokens"],
            }
            for r in csv.DictReader(text.splitlines())
        ]
    return {r["model"]: (float(r["in"]) / 1e6, float(r["out"]) / 1e6) for r in rows}


def parse_duration(text: Any) -> float | None:
    """Seconds of a LiteLLM duration ("30s", "10m", "2h", "1d"); None for none or an unknown form."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if not isinstance(text, str) or len(text) < 2 or text[-1] not in units or not text[:-1].isdigit():
        return None
    return int(text[:-1]) * units[text[-1]]


def _now() -> datetime:
    return datetime.now(UTC)


class KeyGateway:
    """LiteLLM's virtual keys: minted, listed, read and deleted with the master key; checked, and
    charged, on model requests. Values are kept only as their hash, as LiteLLM keeps them."""

    def __init__(self, master_key: str, prices: dict[str, tuple[float, float]] | None = None) -> None:
        if not master_key:
            raise ValueError("a gateway needs a master key")
        self.master_key = master_key
        self.prices = prices or {}
        self.keys: dict[str, dict] = {}  # token (hash) -> LiteLLM's key row
        self.deleted: dict[str, dict] = {}  # the archive of deleted keys
        self.lock = threading.Lock()

    def _is_master(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.master_key.encode())

    # -- model requests ---------------------------------------------------------------------------------

    def authorize(self, given: str) -> tuple[str | None, tuple[int, dict] | None]:
        """("master" or the key's alias, None), or (None, LiteLLM's refusal)."""
        if self._is_master(given):
            return "master", None
        with self.lock:
            row = self.keys.get(hash_token(given)) if given else None
            if row is None:
                return None, litellm_error(
                    401, "Authentication Error, Invalid API key provided.", "token_not_found_in_db", "key"
                )
            if row["expires"] and datetime.fromisoformat(row["expires"]) < _now():
                message = (
                    "Authentication Error - Expired Key. "
                    f"Key Expiry time {row['expires']} and current time {_now()}"
                )
                return None, litellm_error(401, message, "expired_key", row["key_name"])
            spend, budget = row["spend"], row["max_budget"]
            if budget is not None and spend >= budget:
                label = f"{row['key_alias'] or 'key'} ({row['key_name']})"
                message = f"Budget has been exceeded! Key={label} Current cost: {spend}, Max budget: {budget}"
                return None, litellm_error(BUDGET_EXCEEDED_STATUS, message, "budget_exceeded")
            return row["key_alias"] or row["key_name"], None

    def charge(self, who: str, model: str, tokens_in: int, tokens_out: int) -> float:
        """Add the cost of an answer to the key (by alias); the cost in USD (0 for a model without a
        price: LiteLLM then logs a cost error and counts nothing)."""
        price_in, price_out = self.prices.get(model, (0.0, 0.0))
        cost = tokens_in * price_in + tokens_out * price_out
        with self.lock:
            for row in self.keys.values():
                if who in (row["key_alias"], row["key_name"]):
                    row["spend"] += cost
                    break
        return cost

    # -- key management (master key) ---------------------------------------------------------------------

    def manage(self, method: str, path: str, given: str, query: dict, body: Any) -> tuple[int, dict]:
        """Answer one ``/key/...`` request as LiteLLM's proxy does: (status, body)."""
        if not self._is_master(given):
            if given and hash_token(given) in self.keys:
                return litellm_error(
                    401,
                    "Authentication Error, Only proxy admin can be used to generate, delete, update info "
                    f"for new keys/users/teams. Route={path}",
                    "auth_error",
                    "None",
                )
            return litellm_error(
                401, "Authentication Error, Invalid API key provided.", "token_not_found_in_db", "key"
            )
        routes = {
            ("POST", "/key/generate"): self._generate,
            ("POST", "/key/delete"): self._delete,
            ("GET", "/key/list"): self._list,
            ("GET", "/key/info"): self._info,
        }
        route = routes.get((method, path))
        if route is None:
            return 404, {"detail": "Not Found"}
        if method == "POST" and not isinstance(body, dict):
            return litellm_error(400, "the body is not JSON", "bad_request_error")
        with self.lock:
            return route(body if method == "POST" else query)

    def _generate(self, body: dict) -> tuple[int, dict]:
        alias = body.get("key_alias")
        if alias and any(row["key_alias"] == alias for row in self.keys.values()):
            message = (
                f"Key with alias '{alias}' already exists. Unique key aliases across all keys are required."
            )
            return litellm_error(400, message, "bad_request_error", "key_alias")
        value = body.get("key") or f"sk-{secrets.token_urlsafe(16)}"
        seconds = parse_duration(body.get("duration"))
        budget = body.get("max_budget")
        token = hash_token(value)
        row = {
            "token": token,
            "key_name": f"sk-...{value[-4:]}",
            "key_alias": alias,
            "spend": 0.0,
            "max_budget": float(budget) if budget is not None else None,
            "expires": (_now() + timedelta(seconds=seconds)).isoformat() if seconds else None,
            "models": list(body.get("models") or []),
            "metadata": body.get("metadata") if isinstance(body.get("metadata"), dict) else {},
            "user_id": body.get("user_id"),
            "team_id": body.get("team_id"),
            "created_at": _now().isoformat(),
        }
        self.keys[token] = row
        return 200, {**row, "key": value, "token_id": token, "duration": body.get("duration")}

    def _delete(self, body: dict) -> tuple[int, dict]:
        if body.get("keys"):
            asked = list(body["keys"])
            found = [t for t in map(hash_if_needed, asked) if t in self.keys]
        elif body.get("key_aliases"):
            asked = list(body["key_aliases"])
            found = [t for t, row in self.keys.items() if row["key_alias"] in asked]
        else:
            return litellm_error(500, "Invalid request type", "internal_server_error")
        if not found:
            return litellm_error(404, "{'error': 'No keys found'}", "internal_server_error")
        for token in found:
            self.deleted[token] = {**self.keys.pop(token), "deleted_at": _now().isoformat()}
        return 200, {"deleted_keys": asked}

    def _list(self, query: dict) -> tuple[int, dict]:
        try:
            page, size = int(query.get("page", 1)), int(query.get("size", 10))
        except ValueError:
            return litellm_error(422, "page and size are integers", "bad_request_error")
        if page < 1 or not 1 <= size <= MAX_LIST_SIZE:
            return litellm_error(422, f"page >= 1 and 1 <= size <= {MAX_LIST_SIZE}", "bad_request_error")
        rows = list(self.keys.values())
        alias = query.get("key_alias")
        if alias is not None:
            if query.get("substring_matching", "false").lower() == "true":
                rows = [r for r in rows if alias.lower() in (r["key_alias"] or "").lower()]
            else:
                rows = [r for r in rows if r["key_alias"] == alias]
        full = query.get("return_full_object", "false").lower() == "true"
        chunk = rows[(page - 1) * size : page * size]
        return 200, {
            "keys": [dict(r) for r in chunk] if full else [r["token"] for r in chunk],
            "total_count": len(rows),
            "current_page": page,
            "total_pages": max(1, -(-len(rows) // size)),
        }

    def _info(self, query: dict) -> tuple[int, dict]:
        asked = query.get("key") or ""
        token = hash_if_needed(asked) if asked else ""
        if token in self.keys:
            row = self.keys[token]
            expired = row["expires"] and datetime.fromisoformat(row["expires"]) < _now()
            status = "expired" if expired else "active"
        elif token in self.deleted:
            row, status = self.deleted[token], "deleted"
        else:
            return litellm_error(404, "Key not found in database", "not_found_error", "key")
        info = {k: v for k, v in row.items() if k != "token"}
        return 200, {"key": asked, "info": {**info, "status": status}}


def make_server(
    turns: list[dict],
    key: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log_file: Path | None = None,
    *,
    master_key: str | None = None,
    prices: dict[str, tuple[float, float]] | None = None,
):
    """A ThreadingHTTPServer answering from ``turns`` (call serve_forever / shutdown); its
    ``double`` attribute is the ModelDouble (request log, turn counter). ``key``: a static key model
    requests may carry; ``master_key``: the double is also a LiteLLM gateway (``KeyGateway``: keys
    minted with that master key, their spend priced with ``prices``); one of the two is needed."""
    if not key and not master_key:
        raise ValueError("the model double needs a key to check (a static key or a gateway's master key)")
    gateway = KeyGateway(master_key, prices) if master_key else None
    double = ModelDouble(turns, key, log_file, gateway)
    handler = type("BoundHandler", (Handler,), {"double": double})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.double = double  # type: ignore[attr-defined]
    return server


def serve(
    script: Path,
    key: str,
    host: str = "127.0.0.1",
    port: int = 8080,
    log: Path | None = None,
    *,
    master_key: str | None = None,
    prices_file: Path | None = None,
) -> None:
    """Answer the Messages and Responses APIs from the script file until interrupted (ScriptError on a
    bad script); with ``master_key``, LiteLLM's key endpoints too (prices from ``prices_file``, else
    the project's seed when it is there)."""
    turns = load_script_file(script)
    prices = None
    if master_key:
        source = prices_file or (DEFAULT_PRICES_FILE if DEFAULT_PRICES_FILE.is_file() else None)
        prices = load_prices(source) if source else {}
    server = make_server(turns, key, host, port, log, master_key=master_key, prices=prices)
    gateway = f", LiteLLM key endpoints, {len(prices or {})} model prices" if master_key else ""
    print(
        f"model double: {len(turns)} turns on {host}:{server.server_address[1]}{gateway}",
        file=sys.stderr,
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    server.server_close()


def main(argv: list[str] | None = None) -> int:
    """``python3 model_double.py serve …`` (the runner image has no argusic installed)."""
    parser = argparse.ArgumentParser(prog="model_double", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("serve", help="answer the Messages and Responses APIs from a script")
    cmd.add_argument("--script", required=True, type=Path)
    cmd.add_argument("--port", type=int, default=8080)
    cmd.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    cmd.add_argument("--key", help="the key requests must carry (else --key-file)")
    cmd.add_argument("--key-file", type=Path)
    cmd.add_argument("--master-key-file", type=Path, help="be a LiteLLM gateway too, with this master key")
    cmd.add_argument("--prices", type=Path, help="model prices (the seed's CSV, or JSON) for key spend")
    cmd.add_argument("--log", type=Path, help="append one JSON line per request here")
    args = parser.parse_args(argv)
    key = args.key or (args.key_file.read_text().strip() if args.key_file else "")
    master = args.master_key_file.read_text().strip() if args.master_key_file else None
    try:
        serve(args.script, key, args.host, args.port, args.log, master_key=master, prices_file=args.prices)
    except ScriptError as err:  # refused before listening: one line that names the file and the problem
        print(f"model double: refused: {err}", file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
