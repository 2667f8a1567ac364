"""Served (presentation) copies of an attempt's log and recording, derived from the raw evidence.

`present_attempt(record, store, secrets)` streams each raw object out of the evidence store into a
private scratch folder (checking it against the fingerprint in the run record as it copies), masks it
file → file (`argusic.masking`: memory stays at a few windows whatever the object's size) and lands
the served copies write-once under their own prefix:

    served/<attempt_id>/<sha256 of the served bytes>/log.txt
    served/<attempt_id>/<sha256 of the served bytes>/recording.cast

The same raw evidence, secrets and policy always give the same bytes and so the same key; a write
again is a no-op. Raw evidence is only read, never written. The scratch folder (under
`argusic.core.settings.scratch_root()`) is removed whatever happens.

If any copy cannot be shown free of live credentials (or cannot be parsed, or the raw bytes do not
match their fingerprint), the attempt is *withheld*: nothing is written and the caller reruns it.
Generated private-key bodies are redacted and reported (`masking_applied`, `private_keys` with each
body's fingerprint) without withholding.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

from argusic.core.evidence import (
    SERVED_NAMES,
    SERVED_PREFIX,
    EvidenceMissing,
    EvidenceStore,
    served_key_for,
    sha256_of_file,
)
from argusic.core.record import RunRecord
from argusic.core.settings import scratch_root
from argusic.masking import (
    DEFAULT_POLICY,
    MASKING_VERSION,
    MaskPolicy,
    MaskResult,
    mask_log_file,
    mask_recording_file,
)

PRESENTATION_PREFIX = SERVED_PREFIX
_MASKERS = {"log": mask_log_file, "recording": mask_recording_file}


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
    # Withheld because our evidence store failed (raw evidence unreadable or not matching its
    # fingerprint), not because of what the container printed: our fault, the attempt is rerun.
    withheld_by_our_tooling: bool = False

    @property
    def rerun_needed(self) -> bool:
        return self.withheld and self.withheld_by_our_tooling

    def as_dict(self) -> dict:
        return asdict(self)


def served_key(attempt_id: str, kind: str, data: bytes) -> str:
    """Deterministic key of a served copy; the attempt id is quoted so it is one path segment."""
    return served_key_of_sha(attempt_id, kind, hashlib.sha256(data).hexdigest())


def served_key_of_sha(attempt_id: str, kind: str, sha256: str) -> str:
    """`served_key` of bytes whose sha256 is known (a served copy streamed from a file)."""
    if kind not in SERVED_NAMES:
        raise ValueError(f"no served copy of {kind!r}")
    if quote(attempt_id, safe="._-@+:") in {".", ".."}:
        raise ValueError(f"attempt id {attempt_id!r} cannot name a folder")
    return served_key_for(attempt_id, kind, sha256)


def _scratch_folder() -> Path:
    """A private folder for one presentation, named after this process (a sweep of dead owners'
    folders can tell it apart)."""
    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    folder = root / f"present-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    folder.mkdir(mode=0o700)
    return folder


def present_attempt(
    record: RunRecord,
    store: EvidenceStore,
    secrets: Iterable[str],
    *,
    policy: MaskPolicy = DEFAULT_POLICY,
) -> PresentationResult:
    """Mask the attempt's log and recording and store the served copies (or withhold them)."""
    secrets = list(secrets)
    folder = _scratch_folder()
    try:
        return _present(record, store, secrets, policy, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _present(
    record: RunRecord, store: EvidenceStore, secrets: list[str], policy: MaskPolicy, folder: Path
) -> PresentationResult:
    fingerprints: dict[str, str] = {}
    results: dict[str, MaskResult] = {}
    problems: list[str] = []
    store_failed = False
    for kind, masker in _MASKERS.items():
        ref = getattr(record.evidence, kind)
        if ref is None:
            continue
        fingerprints[kind] = ref.sha256
        raw_path = folder / f"{kind}.raw"
        try:
            sha, _ = store.copy_to_file(ref.uri, raw_path)
        except (EvidenceMissing, ValueError, OSError) as err:
            problems.append(f"{kind}: raw evidence unreadable ({err})")
            store_failed = True
            continue
        if sha != ref.sha256:
            problems.append(f"{kind}: raw evidence does not match its recorded sha256")
            store_failed = True
            continue
        result = masker(raw_path, folder / f"{kind}.served", secrets, policy, workdir=folder / f"{kind}.work")
        raw_path.unlink(missing_ok=True)
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
            withheld_by_our_tooling=store_failed,
            **common,
        )
    served: dict[str, ServedCopy | None] = {kind: None for kind in SERVED_NAMES}
    for kind, result in results.items():
        assert result.path is not None
        sha, _ = sha256_of_file(result.path)
        stored = store.put_file(result.path, key=served_key_of_sha(record.attempt_id, kind, sha))
        served[kind] = ServedCopy(stored.uri, stored.sha256, stored.bytes)
    return PresentationResult(served=served, withheld=False, withheld_reason=None, **common)


__all__ = [
    "PRESENTATION_PREFIX",
    "PresentationResult",
    "ServedCopy",
    "present_attempt",
    "served_key",
    "served_key_of_sha",
]
