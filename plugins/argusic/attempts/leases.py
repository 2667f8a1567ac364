"""Attempt leases: how the key sweep of a cluster tells a running attempt from a dead one.

On one machine the sweep sees the attempt's container and folder. On a cluster it runs on one host and
cannot see the others', so while an attempt holds a per-run key its process keeps a lease in the runs
store (``control/leases/<attempt id>.json``: the host and a time `until`, renewed every
``RENEW_SECONDS``, valid for ``LEASE_SECONDS``). A worker killed with SIGKILL renews nothing: its lease
runs out within ``LEASE_SECONDS`` and the next sweep (every five minutes, ``argusic_key_sweep``)
deletes the key. The lease is written before the key is made, so a starting attempt is never swept.

A lease is hostile input like anything read back from the store: capped, parsed strictly; one that
cannot be read counts as expired (the key of an attempt we cannot prove alive is deleted: the gateway
refusing a live attempt's calls ends that attempt as ours, invalid and rerun, which is the safe side).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator

from argusic.core import runs_store

log = logging.getLogger("argusic.attempts.leases")

LEASES_PREFIX = "control/leases"
LEASE_SECONDS = 300
RENEW_SECONDS = 60
MAX_LEASE_BYTES = 4096


def lease_key(attempt_id: str) -> str:
    return f"{LEASES_PREFIX}/{attempt_id}.json"


def _write(store: runs_store.RunsStore, attempt_id: str) -> None:
    doc = {
        "attempt_id": attempt_id,
        "host": socket.gethostname()[:200],
        "until": int(time.time()) + LEASE_SECONDS,
    }
    store.write(lease_key(attempt_id), json.dumps(doc, sort_keys=True).encode())


@contextlib.contextmanager
def attempt_lease(attempt_id: str) -> Iterator[None]:
    """Hold the attempt's lease while the block runs (nothing on a single machine). The first write
    must succeed (RunsStoreError: the attempt does not start); a renewal that fails is logged and tried
    again at the next beat."""
    store = runs_store.shared()
    if store is None:
        yield
        return
    _write(store, attempt_id)
    done = threading.Event()

    def renew() -> None:
        while not done.wait(RENEW_SECONDS):
            try:
                _write(store, attempt_id)
            except Exception as err:  # noqa: BLE001 - the next beat retries; expiry is the safe side
                log.warning("%s: lease not renewed: %s", attempt_id, err)

    beat = threading.Thread(target=renew, name=f"lease-{attempt_id}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        done.set()
        beat.join(timeout=5)


def lease_alive(attempt_id: str, at_epoch: float) -> bool:
    """Whether the attempt's lease in the runs store is still valid at `at_epoch` (False on a single
    machine, and for a lease that is absent or cannot be read)."""
    store = runs_store.shared()
    if store is None:
        return False
    try:
        data = store.read(lease_key(attempt_id))
    except (runs_store.RunsStoreError, OSError) as err:
        log.warning("%s: lease unreadable, counted as expired: %s", attempt_id, err)
        return False
    if data is None or len(data) > MAX_LEASE_BYTES:
        return False
    try:
        doc = json.loads(data)
        until = doc["until"]
        if doc.get("attempt_id") != attempt_id or not isinstance(until, int):
            return False
    except (ValueError, KeyError, TypeError):
        return False
    return until > at_epoch
