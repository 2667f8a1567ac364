"""Model keys for attempts: one key per attempt through the routing layer, or the vendor's shared key.

Rules (METHODOLOGY.md §4 "Model keys"):

- An agent routed through the gateway gets a key created for that attempt alone, with a spend limit
  (``orchestrator_config().per_run_key_limit_usd``, 3 USD), deleted when the attempt ends, fails, is
  cancelled or times out. ``attempt_key()`` guarantees the deletion for every ending the process
  lives through (return, exception, KeyboardInterrupt, SIGTERM); ``sweep()`` removes what a killed
  worker left behind (every key of this installation that belongs to no running attempt).
- Every key carries the installation id (``argusic.core.settings.installation_id()``) in its alias
  (``argusic-attempt:<installation>:<attempt>:<random>``) and metadata; listing and the sweep see
  only this installation's keys, so two installations sharing one gateway never delete each other's.
- A key that cannot be created raises ``KeyUnavailable``: the attempt must not start and is retried.
  There is no fallback to a shared key anywhere in this module.
- Agents on their vendor's own service use the shared key (``shared_key()``), recorded as
  ``{"kind": "shared"}``.

The key's value leaves this module only through ``IssuedKey.container_env()`` (environment variables
for the container), ``IssuedKey.mask()`` (to mask it in text) and ``IssuedKey.masking_values()`` (the
values the masker of served copies must know). It is never logged: logs carry the
alias and a fingerprint (the first 12 hex digits of SHA-256 of the value, which is also the prefix of
LiteLLM's stored token id).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import signal
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import requests
from tenacity import (
    RetryError,
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from argusic.attempts.leases import attempt_lease
from argusic.core.settings import installation_id, orchestrator_config
from argusic.sandbox.launch import AttemptCancelled, sigterm_cancels

log = logging.getLogger("argusic.attempts.keys")

ALIAS_PREFIX = "argusic-attempt:"
KeyKind = Literal["per_run", "shared", "none"]


# ---------------------------------------------------------------------------------------------------
# Errors


class KeysError(Exception):
    """Base of this module's errors."""


class KeyUnavailable(KeysError):
    """The per-attempt key could not be created: do not start the attempt; retry it later."""


class KeyBrokerError(KeysError):
    """The gateway answered a key operation with an error that retrying will not fix."""


# ---------------------------------------------------------------------------------------------------
# Keys


def fingerprint(value: str) -> str:
    """What logs and records may carry instead of a key value."""
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def token_id(value: str) -> str:
    """LiteLLM's stored id of a virtual key: SHA-256 hex of the value (litellm.proxy.utils.hash_token)."""
    return hashlib.sha256(value.encode()).hexdigest()


class IssuedKey:
    """A model key handed to one attempt. Its value is hidden from repr/str/logging."""

    __slots__ = (
        "_value",
        "alias",
        "attempt_id",
        "base_url",
        "expires",
        "gateway_spend",
        "gateway_spend_unread",
        "kind",
        "limit_usd",
        "token_id",
    )

    def __init__(
        self,
        *,
        value: str,
        kind: KeyKind,
        attempt_id: str | None,
        alias: str | None = None,
        limit_usd: float | None = None,
        base_url: str | None = None,
        token: str | None = None,
        expires: str | None = None,
    ) -> None:
        self._value = value
        self.kind: KeyKind = kind
        self.attempt_id = attempt_id
        self.alias = alias
        self.limit_usd = limit_usd
        self.base_url = base_url
        self.token_id = token or (token_id(value) if value else None)
        self.expires = expires
        # The key's spend as the gateway counted it, read just before the key is deleted
        # (``attempt_key``; brokers with ``key_spend``): {"spend_usd", "max_budget_usd"}, or None.
        self.gateway_spend: dict[str, float | None] | None = None
        # Why the gateway's count could not be read (before deletion and, archived, after it), or None:
        # a per-run key whose spend is unknown must not pass for one under its limit (issue 28's note).
        self.gateway_spend_unread: str | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self._value) if self._value else "-"

    def __repr__(self) -> str:
        return (
            f"IssuedKey(kind={self.kind!r}, attempt_id={self.attempt_id!r}, alias={self.alias!r}, "
            f"limit_usd={self.limit_usd!r}, fingerprint={self.fingerprint!r})"
        )

    __str__ = __repr__

    def __reduce__(self) -> Any:  # never pickled (XCom, multiprocessing): the value would travel
        raise TypeError("IssuedKey is not serialisable; pass attempt_id and create the key where it is used")

    def container_env(
        self, key_var: str = "OPENAI_API_KEY", base_url_var: str | None = "OPENAI_BASE_URL"
    ) -> dict[str, str]:
        """The environment variables that carry the key into the container (the only way out)."""
        if self.kind == "none" or not self._value:
            return {}
        env = {key_var: self._value}
        if base_url_var and self.base_url:
            env[base_url_var] = self.base_url
        return env

    def mask(self, text: str, replacement: str | None = None) -> str:
        """Replace every occurrence of the value in text (for logs and recordings before storing)."""
        if not self._value:
            return text
        return text.replace(self._value, replacement or self._replacement)

    @property
    def _replacement(self) -> str:
        return f"[key {self.fingerprint} masked]"

    def redactions(self) -> list[tuple[bytes, bytes]]:
        """(value, replacement) as bytes, for the streaming redaction of an attempt's output while it
        is landed (``argusic.sandbox.landing``): the value never reaches a stored file."""
        if not self._value:
            return []
        return [(self._value.encode(), self._replacement.encode())]

    def masking_values(self) -> list[str]:
        """The value as a known value for the masker of served copies (``argusic.masking``): landing
        replaces it only as typed, while the code under test can print it transformed (reversed,
        encoded, split), which only a masker that knows the value finds."""
        return [self._value] if self._value else []

    def record(self) -> dict[str, Any]:
        """The run record's ``key`` field (argusic.run_record/1): kind and limit, never the value; and,
        once the key is deleted, what the gateway counted against it (``gateway_spend_usd``)."""
        per_run = self.kind == "per_run"
        spend = self.gateway_spend["spend_usd"] if per_run and self.gateway_spend else None
        record = {"kind": self.kind, "limit_usd": self.limit_usd if per_run else None}
        if spend is not None:
            return record | {"gateway_spend_usd": spend}
        if per_run and self.gateway_spend_unread:
            return record | {"gateway_spend_unread": self.gateway_spend_unread[:200]}
        return record


@dataclass(frozen=True)
class KeyRef:
    """A key as listed by the gateway: enough to delete it, nothing to use it."""

    token_id: str
    alias: str | None
    attempt_id: str | None


@dataclass
class KeyStats:
    """Key-lifecycle figures of one broker."""

    created: int = 0
    create_failed: int = 0
    deleted: int = 0
    delete_failed: int = 0
    swept: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def as_dict(self) -> dict[str, int]:
        return {
            k: getattr(self, k) for k in ("created", "create_failed", "deleted", "delete_failed", "swept")
        }


# ---------------------------------------------------------------------------------------------------
# Brokers


@runtime_checkable
class KeyBroker(Protocol):
    """Creates and deletes per-attempt keys on a routing layer."""

    stats: KeyStats

    def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None) -> IssuedKey:
        """A new key for this attempt alone, or KeyUnavailable."""
        ...

    def delete(self, key: IssuedKey | KeyRef | str) -> bool:
        """Delete a key (by IssuedKey, KeyRef or token id). True if it existed; gone either way."""
        ...

    def list_attempt_keys(self) -> list[KeyRef]:
        """Every key this module created that still exists on the gateway."""
        ...

    def sweep(self, running_attempt_ids: Iterable[str]) -> list[KeyRef]:
        """Delete every attempt key whose attempt is not running; return what was deleted."""
        ...


def _installation(installation: str | None) -> str:
    if installation:
        return installation
    return installation_id()


def alias_prefix(installation: str | None = None) -> str:
    """What every key alias of this installation starts with."""
    return f"{ALIAS_PREFIX}{_installation(installation)}:"


def new_alias(attempt_id: str, installation: str | None = None) -> str:
    """Alias of an attempt's key: the installation and the attempt, unique per creation (a retried
    attempt gets a new key)."""
    return f"{alias_prefix(installation)}{attempt_id}:{secrets.token_hex(4)}"


def attempt_of_alias(alias: str | None, installation: str | None = None) -> str | None:
    """The attempt id in an alias of this installation's; None for anyone else's."""
    prefix = alias_prefix(installation)
    if not alias or not alias.startswith(prefix):
        return None
    rest = alias[len(prefix) :]
    return rest.rsplit(":", 1)[0] if ":" in rest else rest


def sweep_keys(broker: KeyBroker, running_attempt_ids: Iterable[str]) -> list[KeyRef]:
    """The scheduled clean-up: delete every key of this installation that belongs to no running
    attempt. Keys of other installations (or of no installation) are never touched."""
    running = set(running_attempt_ids)
    deleted: list[KeyRef] = []
    for ref in broker.list_attempt_keys():
        if attempt_of_alias(ref.alias) is None or ref.attempt_id in running:
            continue
        try:
            if broker.delete(ref):
                deleted.append(ref)
        except KeysError as err:
            log.error("sweep: could not delete key %s (attempt %s): %s", ref.alias, ref.attempt_id, err)
    broker.stats.add("swept", len(deleted))
    if deleted:
        log.info("sweep: deleted %d key(s) of attempts not running", len(deleted))
    return deleted


def _is_transient(err: BaseException) -> bool:
    if isinstance(err, (requests.ConnectionError, requests.Timeout)):
        return True
    if isinstance(err, _HTTPStatus):
        return err.status >= 500 or err.status == 429
    return False


class _HTTPStatus(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


class LiteLLMKeyBroker:
    """Per-attempt virtual keys on LiteLLM's proxy (/key/generate with max_budget, /key/delete, /key/list).

    ``base_url`` is the proxy (127.0.0.1 in tests); ``master_key`` its admin key (from the
    environment, never a file in the repository). ``public_base_url`` is what the container reaches
    the proxy at (default: base_url + "/v1").
    """

    def __init__(
        self,
        base_url: str,
        master_key: str,
        *,
        public_base_url: str | None = None,
        timeout: float = 10.0,
        attempts: int = 4,
        backoff_seconds: float = 0.5,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.public_base_url = public_base_url or f"{self.base_url}/v1"
        self._master_key = master_key
        self.timeout = timeout
        self.attempts = attempts
        self.backoff_seconds = backoff_seconds
        self._session = session or requests.Session()
        self.stats = KeyStats()

    def __repr__(self) -> str:
        return f"LiteLLMKeyBroker(base_url={self.base_url!r})"

    @classmethod
    def from_env(cls) -> LiteLLMKeyBroker:
        """LITELLM_BASE_URL and LITELLM_MASTER_KEY (as written by scripts/start_litellm.sh)."""
        try:
            return cls(os.environ["LITELLM_BASE_URL"], os.environ["LITELLM_MASTER_KEY"])
        except KeyError as err:
            raise KeyUnavailable(f"routing layer not configured: {err.args[0]} is not set") from None

    # -- HTTP -----------------------------------------------------------------------------------------

    def _request(self, method: str, path: str, *, attempts: int | None = None, **kwargs: Any) -> Any:
        @retry(
            retry=retry_if_exception(_is_transient),
            stop=stop_after_attempt(attempts or self.attempts),
            wait=wait_exponential(multiplier=self.backoff_seconds, max=5),
            reraise=True,
        )
        def once() -> Any:
            resp = self._session.request(
                method,
                f"{self.base_url}{path}",
                headers={"Authorization": f"Bearer {self._master_key}"},
                timeout=self.timeout,
                **kwargs,
            )
            if resp.status_code >= 400:
                raise _HTTPStatus(resp.status_code, resp.text)
            return resp.json() if resp.content else None

        return once()

    # -- KeyBroker --------------------------------------------------------------------------------------

    def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None) -> IssuedKey:
        if not attempt_id:
            raise ValueError("attempt_id is required")
        if not limit_usd or limit_usd <= 0:
            raise ValueError(f"a per-attempt key needs a positive spend limit, got {limit_usd!r}")
        installation = _installation(None)
        alias = new_alias(attempt_id, installation)
        body: dict[str, Any] = {
            "key_alias": alias,
            "max_budget": float(limit_usd),
            "metadata": {
                "argusic_attempt_id": attempt_id,
                "argusic_installation": installation,
                "argusic": "per_run",
            },
        }
        if ttl_seconds:
            body["duration"] = f"{int(ttl_seconds)}s"  # a safety net should delete and sweep both fail
        try:
            data = self._request("POST", "/key/generate", json=body)
        except (requests.RequestException, _HTTPStatus, RetryError) as err:
            self.stats.add("create_failed")
            log.warning("key for attempt %s not created: %s", attempt_id, _describe(err))
            raise KeyUnavailable(f"key for attempt {attempt_id} not created: {_describe(err)}") from None
        value = (data or {}).get("key")
        if not isinstance(value, str) or not value:
            self.stats.add("create_failed")
            raise KeyUnavailable(f"key for attempt {attempt_id}: the gateway answered without a key")
        key = IssuedKey(
            value=value,
            kind="per_run",
            attempt_id=attempt_id,
            alias=alias,
            limit_usd=float(data.get("max_budget") or limit_usd),
            base_url=self.public_base_url,
            token=data.get("token_id") or token_id(value),
            expires=str(data["expires"]) if data.get("expires") else None,
        )
        self.stats.add("created")
        log.info(
            "key %s (fingerprint %s, limit %s USD) created for attempt %s",
            *(alias, key.fingerprint, key.limit_usd, attempt_id),
        )
        return key

    def delete(self, key: IssuedKey | KeyRef | str) -> bool:
        tid = key if isinstance(key, str) else key.token_id
        label = key.alias if not isinstance(key, str) else f"token {tid[:12]}"
        if not tid:
            raise ValueError("no token id to delete")
        try:
            self._request("POST", "/key/delete", json={"keys": [tid]})
        except _HTTPStatus as err:
            if err.status == 404 or (err.status == 400 and "no keys found" in err.body.lower()):
                log.info("key %s already gone", label)
                return False
            self.stats.add("delete_failed")
            raise KeyBrokerError(f"key {label} not deleted: {_describe(err)}") from None
        except (requests.RequestException, RetryError) as err:
            self.stats.add("delete_failed")
            raise KeyBrokerError(f"key {label} not deleted: {_describe(err)}") from None
        self.stats.add("deleted")
        log.info("key %s deleted", label)
        return True

    def list_attempt_keys(self) -> list[KeyRef]:
        """This installation's attempt keys (alias prefix and, where present, metadata agree)."""
        installation = _installation(None)
        prefix = alias_prefix(installation)
        refs: list[KeyRef] = []
        page, pages = 1, 1
        while page <= pages:
            params = {
                "page": page,
                "size": 100,
                "return_full_object": "true",
                "key_alias": prefix,
                "substring_matching": "true",
            }
            try:
                data = self._request("GET", "/key/list", params=params) or {}
            except (requests.RequestException, _HTTPStatus, RetryError) as err:
                raise KeyBrokerError(f"keys not listed: {_describe(err)}") from None
            for item in data.get("keys", []):
                if not isinstance(item, dict):
                    continue
                alias = item.get("key_alias")
                if not (alias or "").startswith(prefix):
                    continue
                meta = item.get("metadata") or {}
                meta = meta if isinstance(meta, dict) else {}
                if meta.get("argusic_installation", installation) != installation:
                    continue
                attempt = meta.get("argusic_attempt_id")
                tid = item.get("token") or item.get("token_id")
                if tid:
                    refs.append(
                        KeyRef(
                            token_id=tid,
                            alias=alias,
                            attempt_id=attempt or attempt_of_alias(alias, installation),
                        )
                    )
            pages = int(data.get("total_pages") or 1)
            page += 1
        return refs

    def sweep(self, running_attempt_ids: Iterable[str]) -> list[KeyRef]:
        return sweep_keys(self, running_attempt_ids)

    def key_info(
        self, key: IssuedKey | str, *, attempts: int | None = None, archived: bool = False
    ) -> dict[str, Any] | None:
        """The gateway's record of a live key (max_budget, spend, alias), or None when it does not
        exist. LiteLLM (1.108.7) archives deleted keys and still answers /key/info for them, with
        ``"status": "deleted"``: such a key does not exist either, unless ``archived`` asks for the
        archive (its spend, read after the deletion when the read before it failed)."""
        tid = key if isinstance(key, str) else key.token_id
        try:
            data = self._request("GET", "/key/info", params={"key": tid}, attempts=attempts)
        except _HTTPStatus as err:
            if err.status in (400, 404):
                return None
            raise KeyBrokerError(f"key info: {_describe(err)}") from None
        except (requests.RequestException, RetryError) as err:
            raise KeyBrokerError(f"key info: {_describe(err)}") from None
        info = (data or {}).get("info")
        if not isinstance(info, dict) or (info.get("status") == "deleted" and not archived):
            return None
        return info

    def key_spend(self, key: IssuedKey, *, archived: bool = False) -> dict[str, float | None] | None:
        """What the gateway counted against the key (``spend_usd``, ``max_budget_usd``), with the
        broker's retries (a lost count would make a spent key look like our failure); None when the
        gateway has no such key. ``archived``: also from a deleted key's archive."""
        info = self.key_info(key, archived=archived)
        if info is None:
            return None
        budget = info.get("max_budget")
        return {
            "spend_usd": float(info.get("spend") or 0.0),
            "max_budget_usd": float(budget) if budget is not None else None,
        }


def _describe(err: BaseException) -> str:
    if isinstance(err, RetryError):
        inner = err.last_attempt.exception()
        return _describe(inner) if inner else "retries exhausted"
    if isinstance(err, requests.ConnectionError):
        return "gateway unreachable (connection refused or reset)"
    if isinstance(err, requests.Timeout):
        return "gateway timed out"
    return str(err)


# ---------------------------------------------------------------------------------------------------
# The attempt's key, whatever the ending


@contextlib.contextmanager
def _signals_deferred() -> Iterator[list[int]]:
    """Hold SIGTERM/SIGINT while the key is deleted, then act on them."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in saved:
        signal.signal(s, lambda signum, _frame: pending.append(signum))
    try:
        yield pending
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def _note_spend(broker: KeyBroker, key: IssuedKey) -> None:
    """Keep on the key what the gateway counted against it (``key.gateway_spend``), where the broker
    can say (``key_spend``): the gateway's view of the attempt's cost, beside the CLI's own count (a
    CLI killed mid-answer under-counts). Never in the way of the deletion."""
    reader = getattr(broker, "key_spend", None)
    if reader is None:
        return
    try:
        key.gateway_spend = reader(key)
        key.gateway_spend_unread = None if key.gateway_spend is not None else "the gateway has no such key"
    except Exception as err:  # noqa: BLE001 - logged and kept; the key is deleted all the same
        key.gateway_spend_unread = f"spend not read before deletion: {err}"
        log.warning("key %s: %s", key.alias, key.gateway_spend_unread)
    if key.gateway_spend is not None:
        log.info(
            "key %s: the gateway counted %s USD of its %s USD limit",
            *(key.alias, key.gateway_spend["spend_usd"], key.gateway_spend["max_budget_usd"]),
        )


def _note_archived_spend(broker: KeyBroker, key: IssuedKey) -> None:
    """When the count could not be read before deletion, read it from the deleted key's archive
    (LiteLLM keeps it): a gateway that failed for a moment still gives the count. Still unknown: the
    reason stays on the key and in the record (``gateway_spend_unread``)."""
    reader = getattr(broker, "key_spend", None)
    if reader is None or key.gateway_spend is not None or key.kind != "per_run":
        return
    try:
        key.gateway_spend = reader(key, archived=True)
    except Exception as err:  # noqa: BLE001 - the reason is kept in the record
        key.gateway_spend_unread = f"{key.gateway_spend_unread}; not read after it either: {err}"
        log.warning("key %s: %s", key.alias, key.gateway_spend_unread)
        return
    if key.gateway_spend is not None:
        key.gateway_spend_unread = None
        log.info("key %s: the gateway's archive counted %s USD", key.alias, key.gateway_spend["spend_usd"])


def _delete_quietly(broker: KeyBroker, key: IssuedKey) -> None:
    try:
        broker.delete(key)
    except Exception as err:  # noqa: BLE001 - logged; the sweep deletes what is left, the TTL bounds it
        log.error(
            "key %s (fingerprint %s) of attempt %s not deleted, left to the sweep: %s",
            *(key.alias, key.fingerprint, key.attempt_id, err),
        )


@contextlib.contextmanager
def attempt_key(
    broker: KeyBroker,
    attempt_id: str,
    limit_usd: float | None = None,
    *,
    ttl_seconds: int | None = None,
) -> Iterator[IssuedKey]:
    """Create the attempt's key, yield it, and delete it however the block ends.

    Raises KeyUnavailable before the block runs when the key cannot be created: the caller must not
    start the attempt (no shared fallback). Deletion runs on return, on any exception, on
    KeyboardInterrupt and on SIGTERM (turned into AttemptCancelled in the main thread). A worker
    killed with SIGKILL runs nothing: the scheduled ``sweep()`` removes its key, and ``ttl_seconds``
    (LiteLLM ``duration``) bounds its life should the sweep be down too.
    """
    if limit_usd is None:
        limit_usd = orchestrator_config().per_run_key_limit_usd
    with sigterm_cancels():
        key = broker.create(attempt_id, limit_usd, ttl_seconds=ttl_seconds)
        try:
            yield key
        finally:
            with _signals_deferred() as pending:
                _note_spend(broker, key)
                _delete_quietly(broker, key)
                _note_archived_spend(broker, key)
            if pending:
                raise AttemptCancelled(f"signal {pending[0]} during key deletion")


# ---------------------------------------------------------------------------------------------------
# Shared keys (agents on their vendor's own service)


def shared_key(env_var: str, *, attempt_id: str | None = None) -> IssuedKey:
    """The vendor's shared key, read from the orchestrator's environment; recorded as kind "shared".

    Only for agents whose registry entry says ``key_kind = "shared"``; never a fallback for a per-run
    key that could not be created.
    """
    value = os.environ.get(env_var)
    if not value:
        raise KeyUnavailable(f"shared key not configured: {env_var} is not set")
    return IssuedKey(value=value, kind="shared", attempt_id=attempt_id, alias=f"shared:{env_var}")


def no_key(attempt_id: str | None = None) -> IssuedKey:
    """For agents that call no model (recorded as kind "none")."""
    return IssuedKey(value="", kind="none", attempt_id=attempt_id)


@contextlib.contextmanager
def key_for_attempt(
    key_kind: str,
    attempt_id: str,
    *,
    broker: KeyBroker | None = None,
    shared_env_var: str | None = None,
    limit_usd: float | None = None,
    ttl_seconds: int | None = None,
) -> Iterator[IssuedKey]:
    """The key an agent's registry entry asks for: per_run (broker), shared (env var) or none."""
    if key_kind == "per_run":
        if broker is None:
            raise KeyUnavailable(f"attempt {attempt_id}: per-run key needed but no routing layer configured")
        # the lease first (a cluster's sweep never takes a starting attempt for a dead one), and held
        # until the key is deleted
        with (
            attempt_lease(attempt_id),
            attempt_key(broker, attempt_id, limit_usd, ttl_seconds=ttl_seconds) as key,
        ):
            yield key
    elif key_kind == "shared":
        if not shared_env_var:
            raise KeyUnavailable(f"attempt {attempt_id}: shared key needed but no variable named")
        yield shared_key(shared_env_var, attempt_id=attempt_id)
    elif key_kind == "none":
        yield no_key(attempt_id)
    else:
        raise ValueError(f"unknown key kind {key_kind!r}")
