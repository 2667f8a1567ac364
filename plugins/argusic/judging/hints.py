"""Layer 1 hints of one attempt (``argusic.hints/1``): needles, rendering, agent logic.

Hints are shown beside an attempt while a person reviews it; they are never part of a score, a
verdict or the board. Each hint's ``score`` is exactly 1, 0.5 or 0, or null with ``status``
``not_applicable`` (nothing to judge: no needles defined, no HTML artifact) or ``unavailable`` (the
evidence is missing or unreadable; ``detail`` says why). Everything under the attempt folder is read
as hostile (``argusic.core.safe_io.read_capped``: no links, regular files, size caps).

Agent logic: the run succeeded and the task's required tool order is a subsequence of the agent's
steps (``argusic.judging.tool_order``): 1; succeeded out of order 0.5; not succeeded 0; with no
required order, success alone decides (1 or 0). Success for install_and_run (board, verdict):
``end_reason`` completed, no ``invalid_reason`` and the report's ``ran_ok``. A repair attempt writes
no report, so its success is: completed, valid, and its grade (``grade.json`` beside ``out/``) says
``resolved`` or ``resolved_after_rerun``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from argusic.core.record import RunRecord, default_condition, load_record_file
from argusic.core.safe_io import Unreadable, read_capped
from argusic.core.tasks import Check, Task, TaskDefinitionError, expected_output, task_for
from argusic.external import harnesses
from argusic.judging import tool_order
from argusic.judging.needles import artifact_files, evaluate_needles, gather_sources
from argusic.sandbox.changes import CHANGES_FILE, MAX_PATCH_BYTES

if TYPE_CHECKING:
    from argusic.core.evidence import EvidenceStore

SCHEMA_ID = "argusic.hints/1"
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schemas" / "hints-1.schema.json"
HINTS_FILE = "hints.json"
SESSION_MAX_BYTES = 256 * 1024**2  # the collectors stream it; the cap bounds the time spent
DETAILS_MAX_BYTES = 8 * 1024**2  # harness.json / report.json of the reference agent
GRADE_MAX_BYTES = 4 * 1024**2
SCREENSHOT_MAX_BYTES = 32 * 1024**2
MAX_PAGES = 20
DETAIL_MAX_CHARS = 2000
RENDER_SCORES = {"clean": 1.0, "console_errors": 0.5, "not_rendered": 0.0, "timeout": 0.0}
RESOLVED = ("resolved", "resolved_after_rerun")

Renderer = Callable[[list[Path]], list[Any]]  # list[argusic.judging.render.PageRender]


class HintsError(ValueError):
    """A hints document that breaks the schema; the message names the field."""


def _cut(text: str) -> str:
    return text if len(text) <= DETAIL_MAX_CHARS else text[: DETAIL_MAX_CHARS - 1] + "…"


# --- needles -----------------------------------------------------------------------------------


def needles_hint(out_dir: Path, record: RunRecord, task: Task) -> dict:
    wanted = sorted({w for n in task.needles for w in n.where})
    report = record.report.model_dump() if record.report is not None else None
    hint = evaluate_needles(task.needles, gather_sources(out_dir, report, wanted))
    hint["detail"] = _cut(hint["detail"]) if hint.get("detail") else None
    return hint


# --- rendering ---------------------------------------------------------------------------------


def html_pages(out_dir: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    notes: list[str] = []
    files = artifact_files(out_dir / "artifacts", notes)
    pages = [(rel, path) for rel, path in files if rel.lower().endswith((".html", ".htm"))]
    if len(pages) > MAX_PAGES:
        notes.append(f"{len(pages)} HTML pages: only the first {MAX_PAGES} rendered")
    return pages[:MAX_PAGES], notes


def _sha256_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(read_capped(Path(path), SCREENSHOT_MAX_BYTES)).hexdigest()
    except Unreadable:
        return None


def rendering_hint(attempt_dir: Path, renderer: Renderer | None) -> dict:
    pages, notes = html_pages(attempt_dir / "out")
    if not pages:
        return {"score": None, "status": "not_applicable", "pages": [],
                "detail": _cut("no HTML artifact" + (f" ({'; '.join(notes)})" if notes else ""))}  # fmt: skip
    if renderer is None:
        try:
            # deferred: an installation without rendering gets an "unavailable" hint, not an error
            from argusic.judging.render import render_pages
        except ImportError as err:
            return {"score": None, "status": "unavailable", "pages": [],
                    "detail": _cut(f"rendering is not installed here: {err}")}  # fmt: skip
        shots = attempt_dir / "render"

        def renderer(paths: list[Path]) -> list[Any]:
            return render_pages(paths, out_dir=shots, artifacts_root=attempt_dir / "out" / "artifacts")

    try:
        rendered = list(renderer([path for _, path in pages]))
    except Exception as err:  # the renderer's failure (no image, no Docker) is ours, never the agent's
        return {"score": None, "status": "unavailable", "pages": [],
                "detail": _cut(f"rendering failed: {type(err).__name__}: {err}")}  # fmt: skip
    if not rendered:
        return {
            "score": None,
            "status": "unavailable",
            "pages": [],
            "detail": "the renderer returned no page",
        }
    relative_of = {str(path): rel for rel, path in pages}  # a renderer may answer with the paths it got
    out_pages = []
    for page in rendered:
        out_pages.append({
            "path": relative_of.get(str(page.path), str(page.path)),
            "outcome": page.outcome,
            "console_errors": [str(m)[:500] for m in list(page.console_errors)[:20]],
            "screenshots": [h for h in (_sha256_of(p) for p in page.screenshots) if h],
            "detail": _cut(str(page.detail or "")),
        })  # fmt: skip
    score = min(RENDER_SCORES[p["outcome"]] for p in out_pages)
    return {
        "score": score,
        "status": "measured",
        "pages": out_pages,
        "detail": _cut("; ".join(notes)) or None,
    }


# --- agent logic -------------------------------------------------------------------------------


def _json_of(path: Path, limit: int) -> tuple[dict | None, str | None]:
    try:
        data = read_capped(path, limit)
    except Unreadable as err:
        return None, str(err)
    try:
        doc = json.loads(data.decode("utf-8", errors="replace"))
    except (json.JSONDecodeError, RecursionError):
        return None, f"{path.name} is not JSON"
    return (doc, None) if isinstance(doc, dict) else (None, f"{path.name} is not a JSON object")


def succeeded(attempt_dir: Path, record: RunRecord) -> tuple[bool, str | None]:
    """(did the run succeed, why not)."""
    if record.end_reason != "completed":
        return False, f"the run ended: {record.end_reason}"
    if record.invalid_reason:
        return False, "the attempt is invalid"
    if record.purpose == "repair":
        grade, problem = _json_of(attempt_dir / "grade.json", GRADE_MAX_BYTES)
        if grade is None:
            return False, f"no grade: {problem}"
        verdict = grade.get("verdict")
        return (verdict in RESOLVED), (None if verdict in RESOLVED else f"graded {verdict!r}")
    if record.report is None:
        return False, "no valid report"
    return record.report.ran_ok, (None if record.report.ran_ok else "the report says ran_ok false")


@lru_cache(maxsize=1)
def _harness_modules() -> dict:
    return harnesses()


def recorded_calls(record: RunRecord) -> list[SimpleNamespace] | None:
    """The tool calls the record carries (``tool_calls``, read once from the session log when the
    attempt was recorded), shaped as the collectors' calls; None when the record has none (older
    records, the reference harness) or kept only some of them."""
    part = record.tool_calls
    if part is None or len(part.calls) != part.total:
        return None
    calls = []
    for call in part.calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:  # cut: the target (the command, the path) still says what it did
            arguments = {}
        arguments = arguments if isinstance(arguments, dict) else {}
        calls.append(SimpleNamespace(name=call.name, category=call.category, target=call.target,
                                     arguments=arguments, ok=call.ok))  # fmt: skip
    return calls


def agent_steps(out_dir: Path, record: RunRecord) -> tuple[list[str] | None, str | None, str]:
    """(steps, why unavailable, source)."""
    harness = record.harness.name if record.harness is not None else None
    recorded = recorded_calls(record)
    if recorded is not None:
        return tool_order.steps_from_tool_calls(recorded), None, f"{harness} session (run record)"
    modules = _harness_modules()
    if harness in modules:
        source = f"{harness} session"
        session = out_dir / "session.jsonl"
        try:  # the collectors open the path themselves: check it is a plain file first, never a link
            fd = os.open(session, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None, "session.jsonl is missing", source
        except OSError as err:
            return None, f"session.jsonl cannot be read ({err.strerror}; links are not followed)", source
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                return None, "session.jsonl is not a regular file with one link", source
            if info.st_size > SESSION_MAX_BYTES:
                return (
                    None,
                    f"session.jsonl is {info.st_size} bytes, over the {SESSION_MAX_BYTES}-byte cap",
                    source,
                )
            # read through the descriptor we checked (no swap between the check and the read)
            run = modules[harness].collect(Path(f"/proc/self/fd/{fd}"), None)
        finally:
            os.close(fd)
        steps = tool_order.steps_from_tool_calls(run.tool_calls)
        if not steps and run.partial:
            return None, "the session log is incomplete and shows no tool call", source
        return steps, None, source
    source = "readme-runner steps"
    details, problem = _json_of(out_dir / "harness.json", DETAILS_MAX_BYTES)
    if details is None:
        report, report_problem = _json_of(out_dir / "report.json", DETAILS_MAX_BYTES)
        found = report.get("_details") if report else None
        if not isinstance(found, dict):
            return None, f"no recorded steps: {problem}", source
        details = found
    report_written = (out_dir / "report.json").is_file() and not (out_dir / "report.json").is_symlink()
    return tool_order.steps_from_runner(details, report_written), None, source


def agent_logic_hint(attempt_dir: Path, record: RunRecord, task: Task) -> dict:
    ok, why_not = succeeded(attempt_dir, record)
    required = list(task.tool_order)
    steps, problem, source = agent_steps(attempt_dir / "out", record)
    hint: dict[str, Any] = {"succeeded": ok, "in_order": None, "required": required, "steps": steps or [],
                            "source": source, "detail": why_not}  # fmt: skip
    if not required:
        return hint | {"score": 1.0 if ok else 0.0, "status": "measured"}
    if steps is None:
        if not ok:  # a failed run is 0 whatever its order
            return hint | {"score": 0.0, "status": "measured", "detail": _cut(f"{why_not}; steps: {problem}")}
        return hint | {
            "score": None,
            "status": "unavailable",
            "detail": _cut(f"steps unavailable: {problem}"),
        }
    in_order = tool_order.is_subsequence(required, steps)
    score = (1.0 if in_order else 0.5) if ok else 0.0
    return hint | {"score": score, "status": "measured", "in_order": in_order}


# --- seed 002's deterministic checks -------------------------------------------------------------


def _one_newline_off(data: bytes) -> bytes:
    """Seed 002: one newline at each end is ignored, nothing else (no whitespace trimming, no fences)."""
    data = data[1:] if data.startswith(b"\n") else data
    return data[:-1] if data.endswith(b"\n") else data


def output_matches(expected: bytes, chars: int, sha256: str) -> bool:
    """Whether a final output (known by its length and the sha256 of the whole text) equals
    ``expected`` with one newline at each end ignored: the output can only be one of four strings
    (the expected body with or without a newline at each end); each is checked by the rule itself and
    by the whole output's sha256, so a cut text is compared exactly too."""
    body = _one_newline_off(expected)
    for candidate in (body, b"\n" + body, body + b"\n", b"\n" + body + b"\n"):
        if _one_newline_off(candidate) != body:
            continue
        if (
            hashlib.sha256(candidate).hexdigest() == sha256
            and len(candidate.decode("utf-8", "replace")) == chars
        ):
            return True
    return False


def _check_result(check: Check, condition: str, status: str, detail: str | None, **more: Any) -> dict:
    return {"id": check.id, "type": check.type, "condition": condition, "status": status,
            "detail": None if detail is None else _cut(detail), **more}  # fmt: skip


def checks_hint(record: RunRecord, task: Task) -> list[dict]:
    """Each of the task's checks on this attempt: pass | fail | not_applicable (its condition is
    listed) | unavailable (the record lacks what it needs: older records, the reference harness)."""
    harness = record.harness.name if record.harness is not None else None
    # a record written before conditions: the agent's own (an external harness, or ours: baseline)
    condition = record.condition or default_condition(harness, harness in _harness_modules())
    results = []
    for check in task.checks:
        if condition in check.not_applicable:
            results.append(
                _check_result(check, condition, "not_applicable", f"not applicable to {condition}")
            )
        elif check.type == "output_exact_match":
            out = record.final_output
            if out is None:
                results.append(
                    _check_result(check, condition, "unavailable", "the record has no final output")
                )
                continue
            try:
                expected = expected_output(check)
            except TaskDefinitionError as err:
                results.append(_check_result(check, condition, "unavailable", str(err)))
                continue
            same = output_matches(expected, out.chars, out.sha256)
            results.append(_check_result(
                check, condition, "pass" if same else "fail",
                None if same else f"final output ({out.chars} characters) is not {check.expected_file}",
            ))  # fmt: skip
        else:
            calls = recorded_calls(record)
            if calls is None:
                results.append(_check_result(check, condition, "unavailable",
                                             "the record does not carry every tool call"))  # fmt: skip
                continue
            of_category = [c for c in calls if c.category == check.category]
            wrong_path = [c.target for c in of_category if check.path is not None and c.target != check.path]
            ok = len(of_category) == check.count and not wrong_path
            elsewhere = ", ".join(str(t) for t in wrong_path[:5])
            detail = None if ok else (
                f"{len(of_category)} {check.category} call(s), {check.count} expected"
                + (f"; on {elsewhere} instead of {check.path}" if wrong_path else "")
            )  # fmt: skip
            results.append(_check_result(check, condition, "pass" if ok else "fail", detail,
                                         observed=len(of_category)))  # fmt: skip
    return results


# --- the document ------------------------------------------------------------------------------


def changes_hint(attempt_dir: Path, record: RunRecord) -> dict:
    """The install-and-run attempt's changes to the project (``out/changes.patch``, landed by the
    executor: argusic.sandbox.changes): its fingerprint, size and number of files. Not scored; the input of
    change similarity at ingest."""
    if record.purpose == "repair":
        return {"status": "not_applicable", "detail": "a repair attempt's patch is in its record"}
    try:
        data = read_capped(Path(attempt_dir) / "out" / CHANGES_FILE, MAX_PATCH_BYTES)
    except Unreadable as err:
        return {"status": "unavailable", "detail": f"changes not collected: {err}"}
    files = sum(1 for line in data.split(b"\n") if line.startswith(b"diff --git "))
    return {
        "status": "measured",
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "files": files,
    }


def compute_hints(attempt_dir: Path, record: RunRecord, task: Task, renderer: Renderer | None = None) -> dict:
    """The hints document of one attempt (schema-checked)."""
    attempt_dir = Path(attempt_dir)
    hints = {
        "schema": SCHEMA_ID,
        "attempt_id": record.attempt_id,
        "cycle_id": record.cycle_id,
        "agent_id": record.agent_id,
        "project_id": record.project_id,
        "purpose": record.purpose,
        "task_id": task.task_id,
        "task_version": task.version,
        "task_revision": task.revision,
        "needles": needles_hint(attempt_dir / "out", record, task),
        "rendering": rendering_hint(attempt_dir, renderer),
        "agent_logic": agent_logic_hint(attempt_dir, record, task),
        "changes": changes_hint(attempt_dir, record),
    }
    if task.checks:
        hints["checks"] = checks_hint(record, task)
    validate_hints(hints)
    return hints


@lru_cache(maxsize=1)
def _validator():
    # deferred: jsonschema takes ~0.5 s to import and is needed only to check a document
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate_hints(hints: dict) -> None:
    errors = sorted(_validator().iter_errors(hints), key=lambda e: list(e.absolute_path))
    if errors:
        parts = [
            f"{'.'.join(str(p) for p in e.absolute_path) or '(document)'}: {e.message[:200]}"
            for e in errors[:5]
        ]
        raise HintsError("hints document breaks argusic.hints/1: " + "; ".join(parts))


def write_hints(attempt_dir: Path, hints: dict) -> Path:
    """``<attempt_dir>/hints.json``, validated then written atomically."""
    validate_hints(hints)
    attempt_dir = Path(attempt_dir)
    path = attempt_dir / HINTS_FILE
    fd, tmp = tempfile.mkstemp(dir=attempt_dir, prefix=f".{HINTS_FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(hints, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)  # replaces a link named hints.json, never writes through it
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def store_hint_evidence(attempt_dir: Path, store: EvidenceStore) -> list[str]:
    """Put what the attempt's hints name into the evidence store, under content addresses
    (write-once; the same bytes again are a no-op), so the served page, the review queue and the
    ingest on another host can read them: the rendering screenshots (only files of
    ``<attempt_dir>/render/`` whose sha256 the hints name) and the changes patch (``out/changes.patch``
    when its sha256 is the hints'). Regular files, no links, capped. Returns their URIs."""
    attempt_dir = Path(attempt_dir)
    hints = json.loads(read_capped(attempt_dir / HINTS_FILE, 1 << 20))
    wanted = {
        sha
        for page in (hints.get("rendering") or {}).get("pages") or []
        for sha in page.get("screenshots") or []
        if isinstance(sha, str)
    }
    shots = attempt_dir / "render"
    candidates: list[tuple[Path, int]] = []
    if wanted and not shots.is_symlink() and shots.is_dir():
        candidates += [(file, SCREENSHOT_MAX_BYTES) for file in sorted(shots.glob("*.png"))]
    changes = hints.get("changes") or {}
    if isinstance(changes.get("sha256"), str):
        wanted.add(changes["sha256"])
        candidates.append((attempt_dir / "out" / CHANGES_FILE, MAX_PATCH_BYTES))
    uris: list[str] = []
    for file, cap in candidates:
        try:
            data = read_capped(file, cap)
        except Unreadable:
            continue
        if (sha := hashlib.sha256(data).hexdigest()) in wanted:
            uris.append(store.put_bytes(store.key_for(sha), data).uri)
    return uris


def hints_for_attempt(
    attempt_dir: Path,
    renderer: Renderer | None = None,
    *,
    again: bool = False,
    record: RunRecord | None = None,
) -> Path:
    """Compute and write the hints of the attempt whose run record is in `attempt_dir`. Kept as they
    are when `hints.json` is already there for the same attempt and task revision (rendering costs
    seconds per page), unless `again`. Raises RecordError, TaskDefinitionError, HintsError, OSError."""
    attempt_dir = Path(attempt_dir)
    if record is None:  # the attempt's own task hands the record it measured: not read again
        record = load_record_file(attempt_dir / "run_record.json")
    task = task_for(record.purpose, record.project_id)
    path = attempt_dir / HINTS_FILE
    if not again and path.is_file() and not path.is_symlink():
        try:
            known = json.loads(read_capped(path, 1 << 20))
        except (Unreadable, ValueError):
            known = None
        if (
            isinstance(known, dict)
            and known.get("attempt_id") == record.attempt_id
            and known.get("task_revision") == task.revision
        ):
            return path
    return write_hints(attempt_dir, compute_hints(attempt_dir, record, task, renderer))
