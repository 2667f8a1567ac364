"""Served (presentation) copies of an attempt's log and recording, derived from the raw evidence.

`present_attempt(record, store, secrets)` reads the raw objects through the evidence store, checks
them against the fingerprints in the run record, masks them (`argusic.masking`) and writes the served
copies write-once under their own prefix:

    served/<attempt_id>/<sha256 of the served bytes>/log.txt
    served/<attempt_id>/<sha256 of the served bytes>/recording.cast

The same raw evidence, secrets and policy always give the same bytes and so the same key; a write
again is a no-op. Raw evidence is only read, never written.

If any copy cannot be shown free of live credentials (or cannot be parsed, or the raw bytes do not
match their fingerprint), the attempt is *withheld*: nothing is written and the caller reruns it.
Generated private-key bodies are redacted and reported (`masking_applied`, `private_keys` with each
body's fingerprint) without withholding.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from urllib.parse import quote

from argusic.evidence import EvidenceMissing, EvidenceStore
from argusic.masking import DEFAULT_POLICY, MASKING_VERSION, MaskPolicy, MaskResult, mask_log, mask_recording
from argusic.record import RunRecord

PRESENTATION_PREFIX = "served"
SERVED_NAMES = {"log": "log.txt", "recording": "recording.cast"}
_MASKERS = {"log": mask_log, "recording": mask_recording}


@dataclass(frozen=True)
class ServedCopy:
    uri: str
    sha256: str
    bytes: int


@dataclass(frozen=True)
class PresentationResult:
    attempt_id: str
    served: dict[str, ServedCopy | None]
    masking_applied: bool
    generated_key_material: bool
    withheld: bool
    withheld_reason: str | None
    original_fingerprints: dict[str, str]  # kind -> sha256 of the raw evidence object
    private_keys: list[dict] = field(default_factory=list)  # {"source", "label", "sha256"}
    credentials_masked: int = 0
    banner_lines_hidden: int = 0
    masking_version: str = MASKING_VERSION
    policy: str = ""

    @property
    def rerun_needed(self) -> bool:
        return self.withheld

    def as_dict(self) -> dict:
        return asdict(self)


def served_key(attempt_id: str, kind: str, data: bytes) -> str:
    """Deterministic key of a served copy; the attempt id is quoted so it is one path segment."""
    if kind not in SERVED_NAMES:
        raise ValueError(f"no served copy of {kind!r}")
    segment = quote(attempt_id, safe="._-@+:")
    if segment in {".", ".."}:
        raise ValueError(f"attempt id {attempt_id!r} cannot name a folder")
    sha = hashlib.sha256(data).hexdigest()
    return f"{PRESENTATION_PREFIX}/{segment}/{sha}/{SERVED_NAMES[kind]}"


def present_attempt(
    record: RunRecord,
    store: EvidenceStore,
    secrets: Iterable[str],
    *,
    policy: MaskPolicy = DEFAULT_POLICY,
) -> PresentationResult:
    """Mask the attempt's log and recording and store the served copies (or withhold them)."""
    secrets = list(secrets)
    fingerprints: dict[str, str] = {}
    results: dict[str, MaskResult] = {}
    problems: list[str] = []
    for kind, masker in _MASKERS.items():
        ref = getattr(record.evidence, kind)
        if ref is None:
            continue
        fingerprints[kind] = ref.sha256
        try:
            raw = store.read(ref.uri)
        except (EvidenceMissing, ValueError) as err:
            problems.append(f"{kind}: raw evidence unreadable ({err})")
            continue
        if hashlib.sha256(raw).hexdigest() != ref.sha256:
            problems.append(f"{kind}: raw evidence does not match its recorded sha256")
            continue
        result = masker(raw, secrets, policy)
        results[kind] = result
        if result.withheld:
            problems.append(f"{kind}: {result.reason}")

    private_keys = [
        {"source": kind, "label": k.label, "sha256": k.sha256}
        for kind, r in results.items()
        for k in r.stats.key_blocks
    ]
    common = {
        "attempt_id": record.attempt_id,
        "original_fingerprints": fingerprints,
        "masking_applied": any(r.masking_applied for r in results.values()),
        "generated_key_material": bool(private_keys),
        "private_keys": private_keys,
        "credentials_masked": sum(r.stats.credentials_masked for r in results.values()),
        "banner_lines_hidden": sum(r.stats.banner_lines_hidden for r in results.values()),
        "policy": policy.fingerprint(),
    }
    if problems:
        return PresentationResult(
            served={kind: None for kind in SERVED_NAMES},
            withheld=True,
            withheld_reason="; ".join(problems),
            **common,
        )
    served: dict[str, ServedCopy | None] = {kind: None for kind in SERVED_NAMES}
    for kind, result in results.items():
        assert result.data is not None
        stored = store.put_bytes(served_key(record.attempt_id, kind, result.data), result.data)
        served[kind] = ServedCopy(stored.uri, stored.sha256, stored.bytes)
    return PresentationResult(served=served, withheld=False, withheld_reason=None, **common)


__all__ = ["PRESENTATION_PREFIX", "PresentationResult", "ServedCopy", "present_attempt", "served_key"]
