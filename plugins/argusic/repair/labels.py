"""Blinding (issue #31, seed 001): the one mapping from model names and agent ids to the labels people
reviewing patches see. ``repair/labels.toml`` is the single source of truth; the warehouse reads it
through the dbt seed ``repair_labels.csv``, which is generated from it (``python -m
argusic.repair.labels`` rewrites the seed; ``tests/repair/test_labels.py`` fails when the two differ).

A name not listed gets ``model-<first 8 hex of sha256(key_hex ":" name)>``, a *keyed* hash, in Python
(:func:`label_for`) and in SQL (dbt macro ``repair_label``) alike. Why keyed rather than refusing to
build until every name is listed: a plain hash of the name could be reversed by anyone who hashes the
candidate names (there are few models), and refusing would stop every build, grade and review the
moment a new agent or a predictions file's model appears, before anyone could add it; the keyed hash
keeps those running and still hides the name. The key (:func:`label_key`) is never published and
follows the item masking of the per-run export (``argusic.publication.repair_export.mask_key``): the
environment's ``ARGUSIC_LABEL_KEY`` (hex, at least 32 bytes), else a key made once and kept at
``<runs dir>/.keys/repair-label.key`` (mode 0600); a key of its own, not the item-mask key, so that
the warehouse, which carries the labelling key for SQL (the dbt Python model ``repair_label_key``,
beside the raw layer that holds the names anyway), never holds the key that masks published item ids.
Listing a name in labels.toml still gives the stable, readable label reviewers will see across
deployments (a key of another deployment gives other hashed labels). Labels are unique (two names
never share one: they would be counted as one agent) and never one of the names they hide.

Attempt ids embed the agent id (``<cycle>.<purpose>.<agent>.<project>.a<n>``); :func:`blind_attempt_id`
puts the agent's label in its place, as the marts do.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import sys
import tomllib
from pathlib import Path

from argusic.core.record import ATTEMPT_ID_RE
from argusic.core.safe_io import kept_secret
from argusic.core.settings import PACKAGE_DIR, code_root, runs_dir

LABELS_FILE = PACKAGE_DIR / "repair" / "labels.toml"
SEED_FILE = code_root() / "dbt_project" / "seeds" / "repair_labels.csv"
LABEL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SEED_HEADER = ("name", "label")
KEY_ENV = "ARGUSIC_LABEL_KEY"
KEY_FILE = Path(".keys") / "repair-label.key"  # under the runs dir, beside the export's item-mask.key
KEY_BYTES = 32


class LabelsError(ValueError):
    """labels.toml is not a usable mapping (the message names the file and the entry)."""


def load_labels(path: Path = LABELS_FILE) -> dict[str, str]:
    """{model name or agent id: label} from labels.toml's [labels] table (empty when no file)."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    labels = data.get("labels", {})
    if not isinstance(labels, dict):
        raise LabelsError(f"{path}: [labels] must be a table")
    seen: dict[str, str] = {}
    for name, label in labels.items():
        if not isinstance(label, str) or not LABEL.match(label):
            raise LabelsError(f"{path}: labels.{name}: label must match {LABEL.pattern}")
        if label in seen:
            raise LabelsError(f"{path}: labels.{name}: label {label!r} is also {seen[label]!r}'s")
        seen[label] = name
    for name, label in labels.items():
        if label in labels:
            raise LabelsError(f"{path}: labels.{name}: label {label!r} is itself a listed name")
    return dict(labels)


def label_key(path: Path | None = None) -> bytes:
    """The key of unlisted names' labels: ARGUSIC_LABEL_KEY (hex, at least 32 bytes), else the key file
    ``<runs dir>/.keys/repair-label.key`` (made once, 0600, by the first process that needs it).
    Never published; the warehouse gets it only through the dbt Python model repair_label_key."""
    try:
        return kept_secret(KEY_ENV, Path(path or runs_dir() / KEY_FILE), KEY_BYTES)
    except ValueError as err:
        raise LabelsError(str(err)) from None


def hashed_label(name: str, key: bytes | None = None) -> str:
    """The label of a name labels.toml does not list: ``model-`` and the first 8 hex of
    sha256(key_hex ":" name), under :func:`label_key` (the dbt macro repair_label computes the same
    from the key the Python model repair_label_key puts in the warehouse). A secret-prefix hash rather
    than an HMAC because DuckDB has no HMAC; what it must resist is computing a candidate name's label
    without the key, which it does (length extension forges, it does not invert, and 8 hex give it
    nothing to extend)."""
    key_hex = (label_key() if key is None else key).hex()
    return f"model-{hashlib.sha256(f'{key_hex}:{name}'.encode()).hexdigest()[:8]}"


def label_for(model_or_agent: str, labels: dict[str, str] | None = None) -> str:
    """The label shown for a model name or an agent id (labels.toml's, else the keyed hash's)."""
    labels = load_labels() if labels is None else labels
    return labels.get(model_or_agent) or hashed_label(model_or_agent)


def blind_attempt_id(attempt_id: str, labels: dict[str, str] | None = None) -> str:
    """The attempt id with its agent part replaced by the agent's label (the marts' attempt_id); an id
    that does not follow the grammar is returned hashed whole, never as it is."""
    match = ATTEMPT_ID_RE.fullmatch(attempt_id)
    if match is None:
        return hashed_label(attempt_id)
    start, end = match.span("agent_id")
    return attempt_id[:start] + label_for(match["agent_id"], labels) + attempt_id[end:]


def seed_text(labels: dict[str, str]) -> str:
    """repair_labels.csv as generated from the mapping (sorted by name, one row per entry)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SEED_HEADER)
    for name in sorted(labels):
        writer.writerow((name, labels[name]))
    return out.getvalue()


def write_seed(labels_file: Path = LABELS_FILE, seed_file: Path = SEED_FILE) -> Path:
    """Regenerate the dbt seed from labels.toml (run after every change of labels.toml)."""
    seed_file.write_text(seed_text(load_labels(labels_file)), encoding="utf-8")
    return seed_file


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    expected = seed_text(load_labels())
    if check:
        current = SEED_FILE.read_text(encoding="utf-8") if SEED_FILE.exists() else ""
        if current != expected:
            print(f"{SEED_FILE} is not generated from {LABELS_FILE}: run python -m argusic.repair.labels")
            return 1
        return 0
    print(write_seed())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
