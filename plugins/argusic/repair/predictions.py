"""SWE-bench-style predictions (JSONL: ``instance_id``, ``model_name_or_path``, ``model_patch``), so
patches made elsewhere can be graded here. Read as hostile input: file and line sizes capped, every line
checked, refusals name the file, the line and the field. Model names never reach a grade: they become
labels through ``repair/labels.toml`` (the one place the mapping is kept); unknown names get
``model-<sha256[:8]>``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from argusic.repair.labels import LABELS_FILE, LabelsError, label_for
from argusic.repair.labels import load_labels as _load_labels

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_LINES = 100_000
KNOWN_FIELDS = {"instance_id", "model_name_or_path", "model_patch"}


class PredictionsError(Exception):
    """A refused predictions file; the message names the file, line and field."""


@dataclass(frozen=True)
class Prediction:
    line: int
    instance_id: str
    label: str
    patch: bytes


def load_labels(path: Path = LABELS_FILE) -> dict[str, str]:
    """{model name: label} from labels.toml (argusic.repair.labels, the one mapping)."""
    try:
        return _load_labels(path)
    except LabelsError as err:
        raise PredictionsError(str(err)) from None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_predictions(
    path: Path, known_ids: set[str], labels: dict[str, str] | None = None
) -> list[Prediction]:
    """Every line validated; PredictionsError at the first bad one (file:line: field: problem)."""
    path = Path(path)
    labels = load_labels() if labels is None else labels
    if path.is_symlink() or not path.is_file():
        raise PredictionsError(f"{path}: not a regular file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise PredictionsError(f"{path}: over {MAX_FILE_BYTES} bytes")
    found: list[Prediction] = []
    seen: dict[tuple[str, str], int] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            if number > MAX_LINES:
                raise PredictionsError(f"{where}: over {MAX_LINES} lines")
            if len(raw) > MAX_LINE_BYTES:
                raise PredictionsError(f"{where}: line over {MAX_LINE_BYTES} bytes")
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                raise PredictionsError(f"{where}: not JSON: {err}") from None
            if not isinstance(entry, dict):
                raise PredictionsError(f"{where}: not a JSON object")
            for name in ("instance_id", "model_name_or_path", "model_patch"):
                value = entry.get(name)
                if not isinstance(value, str) or (name != "model_patch" and not value.strip()):
                    raise PredictionsError(f"{where}: {name}: missing or not a string")
            instance = entry["instance_id"]
            if instance not in known_ids:
                raise PredictionsError(f"{where}: instance_id: unknown item {instance[:200]!r}")
            model = entry["model_name_or_path"]
            if len(model) > 500:
                raise PredictionsError(f"{where}: model_name_or_path: over 500 characters")
            label = label_for(model, labels)
            key = (instance, label)
            if key in seen:
                raise PredictionsError(
                    f"{where}: instance_id: {instance} already predicted by this model on line {seen[key]}"
                )
            seen[key] = number
            found.append(
                Prediction(
                    number, instance, label, entry["model_patch"].encode("utf-8", errors="surrogateescape")
                )
            )
    return found
