"""Evidence as links: the one place that turns an attempt's evidence into the URL a person follows.

The evidence viewer (`argusic.ops.viewer`, served by the Airflow API server as a plugin:
docs/airflow.md, "Evidence viewer") answers under ``ARGUSIC_VIEWER_URL``:

    <base>/                                          the cycle viewer (every attempt of a cycle)
    <base>/attempts/<attempt id>                     one attempt: facts, served log, recording played
    <base>/served/<quoted attempt id>/<sha256>/<name>  a served (masked) copy, by its content address

Only served copies have a URL: a raw evidence key (``sha256/…``) never does, whatever is configured.
A served log links its text; a served recording links its attempt's page, where it plays. With no
viewer configured (or a URI outside this installation's store) there is no URL: callers show the
URI as text to copy, as before.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

from argusic.core.evidence import SERVED_NAMES, SERVED_PREFIX, key_problem, served_segment
from argusic.core.record import parse_attempt_id
from argusic.core.settings import evidence_url, viewer_url

_SHA256 = re.compile(r"[0-9a-f]{64}")
_KIND_OF_NAME = {name: kind for kind, name in SERVED_NAMES.items()}


def served_parts(key: str) -> tuple[str, str, str] | None:
    """(attempt id, kind, sha256) of a served copy's key ``served/<quoted id>/<sha256>/<name>``, or
    None when `key` is anything else: a raw key, a malformed one, an id off its grammar, or an id
    not quoted the one way the store quotes it."""
    if not isinstance(key, str) or key_problem(key):
        return None
    segments = key.split("/")
    if len(segments) != 4 or segments[0] != SERVED_PREFIX:
        return None
    _, segment, sha, name = segments
    if not _SHA256.fullmatch(sha) or name not in _KIND_OF_NAME:
        return None
    attempt_id = unquote(segment)
    try:
        parse_attempt_id(attempt_id)
    except ValueError:
        return None
    if served_segment(attempt_id) != segment:
        return None
    return attempt_id, _KIND_OF_NAME[name], sha


def attempt_view_url(attempt_id: str, base: str | None = None) -> str | None:
    """The viewer's page of an attempt (its served log, its recording playing), or None when no viewer
    is configured or `attempt_id` is not an attempt id."""
    base = base or viewer_url()
    try:
        parse_attempt_id(attempt_id)
    except ValueError:
        return None
    return None if base is None else f"{base}/attempts/{quote(attempt_id, safe='')}"


def evidence_view_url(uri: str | None, base: str | None = None, store_url: str | None = None) -> str | None:
    """The URL a person follows for an evidence URI of a record or a mart: for a served log, the log's
    text by its content address; for a served recording, its attempt's page, where it plays. None when
    no viewer is configured, or `uri` is not a served copy in this installation's store
    (``ARGUSIC_EVIDENCE_URL``): raw evidence is never linked."""
    base = base or viewer_url()
    if base is None or not uri:
        return None
    store = (store_url or evidence_url()).rstrip("/")
    if not uri.startswith(store + "/"):
        return None
    parts = served_parts(uri[len(store) + 1 :])
    if parts is None:
        return None
    attempt_id, kind, _sha = parts
    if kind == "recording":
        return f"{attempt_view_url(attempt_id, base)}#recording"
    return f"{base}/{uri[len(store) + 1 :]}"


__all__ = ["attempt_view_url", "evidence_view_url", "served_parts"]
