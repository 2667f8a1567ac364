"""The blinded evidence folder a model judge reads (issue #14, seed 004, Layer 2).

``build_evidence_folder(attempt_dir, dest)`` copies what a judge may see of one attempt into ``dest``:

- ``artifacts/``: the landed artifacts (``<attempt_dir>/out/artifacts/``), regular files only;
- ``screenshots/``: the rendered pages (``<attempt_dir>/render/*.png``: load, +1 s, +3 s);
- ``trace.txt``: the attempt's log (``out/log.txt``), capped (head and tail kept);
- ``patch.diff``: the attempt's changes to the project, when any: a repair's patch
  (``out/patch.diff``), an install-and-run attempt's landed changes (``out/changes.patch``); capped;
- ``task.md``: the task's description and the judged criteria (from the task definition);
- ``manifest.json``: every other file with its sha256 and size; ``evidence_sha256`` is the sha256 of
  the manifest's canonical JSON (``evidence_sha256(dest)``).

Blinding: the agent id, harness name, model names (requested and responded) and the attempt id are
replaced by ``AGENT`` / ``ATTEMPT`` in every text file and every path (case-insensitively); a binary
file that still holds one of them is withheld (named in the manifest's ``withheld``). Hostile input:
no link is followed (an artifact that is a link is left out), sizes and counts are capped.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

from argusic.core.record import RunRecord, load_record_file
from argusic.core.tasks import Task, canonical_json, task_for

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "argusic.judge-evidence/1"
MAX_ARTIFACTS = 200
MAX_ARTIFACT_BYTES = 2 * 1024 * 1024
MAX_TOTAL_BYTES = 32 * 1024 * 1024
MAX_SCREENSHOTS = 30
MAX_SCREENSHOT_BYTES = 5 * 1024 * 1024
MAX_TRACE_BYTES = 256 * 1024
MAX_PATCH_BYTES = 1024 * 1024
MAX_DEPTH = 12
# Names shorter than this are not replaced: a one- or two-letter id would shred ordinary words.
MIN_TOKEN_CHARS = 3


class EvidenceError(ValueError):
    """The evidence folder cannot be built; the message names the file and the problem."""


def identifying_tokens(record: RunRecord) -> dict[str, str]:
    """What would name the attempt's maker -> its replacement, longest first."""
    tokens: dict[str, str] = {record.attempt_id: "ATTEMPT"}
    names = [record.agent_id]
    if record.harness is not None:
        names.append(record.harness.name)
    if record.model is not None:
        names += [record.model.requested or "", record.model.responded or ""]
    for name in names:
        if name and len(name) >= MIN_TOKEN_CHARS and name not in tokens:
            tokens[name] = "AGENT"
    return dict(sorted(tokens.items(), key=lambda kv: -len(kv[0])))


def _blinder(tokens: dict[str, str]):
    pattern = re.compile("|".join(re.escape(t) for t in tokens), re.IGNORECASE)
    lowered = {t.lower(): r for t, r in tokens.items()}

    def blind(text: str) -> str:
        return pattern.sub(lambda m: lowered[m.group(0).lower()], text)

    return blind, pattern


def _read_regular(path: Path, cap: int) -> bytes | None:
    """A regular file's bytes (at most ``cap + 1``), never through a link; None when absent, a link
    or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(cap + 1)


def _cap_text(data: bytes, cap: int) -> bytes:
    """At most ``cap`` bytes: the head and the tail, with a line saying how much was cut."""
    if len(data) <= cap:
        return data
    half = cap // 2
    return data[:half] + f"\n[... {len(data) - 2 * half} bytes cut ...]\n".encode() + data[-half:]


def _blinded_bytes(data: bytes, blind, pattern) -> bytes | None:
    """Text is blinded; a binary file that names the maker is withheld (None)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        latin = data.decode("latin-1")
        return None if pattern.search(latin) else data
    return blind(text).encode("utf-8")


def _walk_regular(root: Path) -> list[Path]:
    """Regular files under ``root``, sorted, never entering a linked folder, at most MAX_DEPTH deep."""
    found: list[Path] = []
    if not root.is_dir() or root.is_symlink():
        return found
    for current, dirs, files in os.walk(root, followlinks=False):
        depth = len(Path(current).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not (Path(current) / d).is_symlink() and depth < MAX_DEPTH)
        for name in sorted(files):
            path = Path(current) / name
            if not path.is_symlink() and path.is_file():
                found.append(path)
    return sorted(found)


def task_markdown(task: Task) -> str:
    criteria = "\n".join(f"- `{c['id']}` (0, 1 or 2): {c['question']}" for c in task.judging["criteria"])
    return f"# The task\n\n{task.description}\n\n# What you judge\n\n{criteria}\n"


def _write(dest: Path, relative: str, data: bytes) -> None:
    path = dest / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def build_evidence_folder(attempt_dir: Path, dest: Path) -> Path:
    """Build the blinded evidence folder of the attempt in ``attempt_dir`` at ``dest`` (created; must
    not exist or be empty); returns ``dest``. See the module's docs for what it holds."""
    attempt_dir, dest = Path(attempt_dir), Path(dest)
    record = load_record_file(attempt_dir / "run_record.json")
    task = task_for(record.purpose, record.project_id)
    if dest.exists() and (dest.is_symlink() or any(dest.iterdir())):
        raise EvidenceError(f"{dest}: exists and is not an empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    blind, pattern = _blinder(identifying_tokens(record))
    withheld: list[str] = []
    total = 0

    def add(relative: str, data: bytes | None, why_source: str) -> None:
        nonlocal total
        relative = blind(relative)
        if data is None:
            withheld.append(f"{relative}: {why_source}")
            return
        if total + len(data) > MAX_TOTAL_BYTES:
            withheld.append(f"{relative}: over the folder's {MAX_TOTAL_BYTES} bytes")
            return
        total += len(data)
        _write(dest, relative, data)

    artifacts_root = attempt_dir / "out" / "artifacts"
    for count, path in enumerate(_walk_regular(artifacts_root)):
        relative = "artifacts/" + path.relative_to(artifacts_root).as_posix()
        if count >= MAX_ARTIFACTS:
            withheld.append(f"{blind(relative)}: over {MAX_ARTIFACTS} artifacts")
            continue
        data = _read_regular(path, MAX_ARTIFACT_BYTES)
        if data is None or len(data) > MAX_ARTIFACT_BYTES:
            withheld.append(f"{blind(relative)}: not a regular file or over {MAX_ARTIFACT_BYTES} bytes")
            continue
        add(relative, _blinded_bytes(data, blind, pattern), "a binary file naming who made it")
    render = attempt_dir / "render"
    shots = [] if render.is_symlink() else sorted(p for p in render.glob("*.png") if not p.is_symlink())
    for count, path in enumerate(shots):
        relative = f"screenshots/{path.name}"
        data = _read_regular(path, MAX_SCREENSHOT_BYTES)
        if count >= MAX_SCREENSHOTS or data is None or len(data) > MAX_SCREENSHOT_BYTES:
            withheld.append(f"{blind(relative)}: over the screenshots' caps or not a regular file")
            continue
        add(relative, _blinded_bytes(data, blind, pattern), "a binary file naming who made it")
    log = _read_regular(attempt_dir / "out" / "log.txt", 64 * MAX_TRACE_BYTES)
    trace = blind(_cap_text(log or b"(no log)\n", MAX_TRACE_BYTES).decode("utf-8", errors="replace"))
    add("trace.txt", trace.encode("utf-8"), "")
    # repair: the graded patch; install and run: the agent's changes to the project landed by the
    # executor (argusic.sandbox.changes), when it changed anything
    patch_name = "patch.diff" if record.purpose == "repair" else "changes.patch"
    patch = _read_regular(attempt_dir / "out" / patch_name, MAX_PATCH_BYTES)
    if patch:
        if len(patch) <= MAX_PATCH_BYTES:
            add("patch.diff", blind(patch.decode("utf-8", errors="replace")).encode("utf-8"), "")
        else:
            withheld.append(f"patch.diff: over {MAX_PATCH_BYTES} bytes")
    add("task.md", blind(task_markdown(task)).encode("utf-8"), "")
    files = [
        {"path": p.relative_to(dest).as_posix(), "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
         "bytes": p.stat().st_size}
        for p in _walk_regular(dest)
    ]  # fmt: skip
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "task_id": task.task_id,
        "task_revision": task.revision,
        "files": files,
        "withheld": withheld,
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return dest


def read_manifest(evidence_dir: Path) -> dict:
    data = _read_regular(Path(evidence_dir) / MANIFEST, 4 * 1024 * 1024)
    if data is None:
        raise EvidenceError(f"{evidence_dir}: no {MANIFEST} (not an evidence folder)")
    manifest = json.loads(data)
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        raise EvidenceError(f"{evidence_dir}/{MANIFEST}: schema is not {MANIFEST_SCHEMA!r}")
    return manifest


def evidence_sha256(evidence_dir: Path) -> str:
    """sha256 of the manifest's canonical JSON: the evidence a verdict is about."""
    return hashlib.sha256(canonical_json(read_manifest(evidence_dir))).hexdigest()
