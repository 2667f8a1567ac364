"""Build the warehouse (dbt build, in-process) and gate publication on the expectations.

``build_warehouse`` holds the warehouse writer lock while dbt runs and while the built marts are
validated, so what was validated is what was built. Any dbt node that fails, or any expectation
that fails, raises ``PublicationBlocked`` naming the node, or the table and expectation.

``publish_board`` re-validates the warehouse under the same lock before it reads the board, so a
board is only ever written from a warehouse whose expectations pass at that moment (no stale
"last build passed" token to trust), and audits the evidence of every attempt of the cycle (raw and
served copies, re-hashed) before it writes anything: an attempt whose evidence fails the audit blocks
the publication. Callers must not already hold ``writer_lock`` (it is not re-entrant).
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argusic.attempts.story import _text
from argusic.core.evidence import EvidenceStore, served_key_for
from argusic.core.layout import publish_dir
from argusic.core.settings import code_root, public_evidence_base, warehouse_path
from argusic.core.spec import read_spec
from argusic.external import INSTRUCTIONS_TEMPLATE
from argusic.publication.agents import codes_of, cycle_pin, present, publish_correction
from argusic.publication.attempt_page import PlayerMissing
from argusic.publication.audit import audit_refs, refs_of_connection
from argusic.publication.files import ATTEMPTS_SCHEMA, BOARD_SCHEMA, _write_atomically
from argusic.publication.repair_export import ExportRefused, export_repair_runs, has_repair_results
from argusic.publication.sealing import (
    Seal,
    private_projects,
    read_revealed,
    seal_attempt,
    seal_correction,
    seal_project,
)
from argusic.publication.site.build import SiteError, build_site
from argusic.warehouse.db import connect
from argusic.warehouse.dbt_build import BuildResult, PublicationBlocked
from argusic.warehouse.expectations.validate import validate_warehouse
from argusic.warehouse.lock import writer_lock

# Every published number, traced to its evidence: the scores of each attempt next to the served
# (masked) log and recording and the fingerprints of the raw originals. A withheld copy has no URI.
ATTEMPTS_SQL = """
SELECT s.attempt_id, s.agent_id, s.project_id, s.purpose, s.attempt_no, s.is_valid, s.invalid_reason,
       s.outcome, s.score, s.install_points, s.run_points, s.recovery_points, s.depth_points,
       r.commit_sha, r.tier, r.budget_seconds,
       coalesce(TRY_CAST(r.record_json ->> '$.effective_budget_seconds' AS INTEGER), r.budget_seconds)
           AS effective_budget_seconds,
       coalesce(TRY_CAST(r.record_json ->> '$.demo' AS BOOLEAN), false) AS demo,
       r.end_reason, r.started_at, r.ended_at,
       -- durations (issue 29): the wall time, and within it the agent's time (the budget clock, as
       -- the executor saw it) and our overhead; null agent and overhead for a record without timing
       round(epoch(r.ended_at) - epoch(r.started_at), 3) AS wall_seconds,
       round(epoch(TRY_CAST(r.record_json ->> '$.timing.agent_ended_at' AS TIMESTAMPTZ))
             - epoch(TRY_CAST(r.record_json ->> '$.timing.agent_started_at' AS TIMESTAMPTZ)), 3)
           AS agent_seconds,
       round(epoch(r.ended_at) - epoch(r.started_at)
             - (epoch(TRY_CAST(r.record_json ->> '$.timing.agent_ended_at' AS TIMESTAMPTZ))
                - epoch(TRY_CAST(r.record_json ->> '$.timing.agent_started_at' AS TIMESTAMPTZ))), 3)
           AS overhead_seconds,
       -- the n of an attempt id's `.r<n>` (0: not a rerun): a rerun is shown as the rerun of its original
       coalesce(TRY_CAST(nullif(regexp_extract(s.attempt_id, '\\.r([0-9]+)$', 1), '') AS INTEGER), 0)
           AS rerun_no,
       r.record_json ->> '$.methodology_version' AS methodology_version,
       r.record_json ->> '$.rerun_of' AS rerun_of,
       r.record_json ->> '$.executor' AS executor,
       r.record_json ->> '$.image' AS image,
       r.record_json ->> '$.harness.name' AS harness_name,
       r.record_json ->> '$.harness.version' AS harness_version,
       r.record_json ->> '$.model.requested' AS model_requested,
       r.record_json ->> '$.model.responded' AS model_responded,
       r.record_json ->> '$.key.kind' AS key_kind,
       r.verified_how, r.final_state,
       r.log_sha256, r.recording_sha256, r.report_sha256,
       r.record_json ->> '$.presentation.log.sha256' AS served_log_sha256,
       TRY_CAST(r.record_json ->> '$.presentation.log.bytes' AS BIGINT) AS served_log_bytes,
       r.record_json ->> '$.presentation.recording.sha256' AS served_recording_sha256,
       TRY_CAST(r.record_json ->> '$.presentation.recording.bytes' AS BIGINT) AS served_recording_bytes,
       coalesce(r.masking_applied, false) AS masking_applied,
       coalesce(r.presentation_withheld, false) AS served_copy_withheld,
       r.harness_edition, r.scaffold_sha256, r.image_role, r.image_reference, r.image_digest,
       r.instructions_version, r.instructions_sha256, r.limit_cpus, r.limit_memory_bytes, r.limit_pids,
       r.limit_disk_bytes, r.network_mode, r.limit_budget_seconds, r.display,
       s.container_fault,
       -- the agent's claim beside what the harness observed (edition 1.7), and the seal
       s.claimed_install_ok, s.observed_install_ok, s.claimed_ran_ok, s.observed_ran_ok,
       s.claimed_errors_encountered, s.observed_errors_encountered, s.claimed_errors_fixed,
       s.observed_errors_fixed, s.claimed_test_depth, s.observed_verified, s.seal_status,
       s.claims_not_shown
FROM marts.attempt_scores AS s
JOIN raw.run_records AS r USING (attempt_id)
WHERE s.cycle_id = ?
ORDER BY s.agent_id, s.project_id, s.attempt_no, s.attempt_id
"""
# The verdict of every project the cycle attempted, at the commits it attempted, with its review.
# The verdict's counts are of every cycle at that commit (marts.project_verdicts); beside them, each
# figure of this cycle alone (issue 29: one scope per figure, labelled on the page).
PROJECTS_SQL = """
SELECT v.*, pr.* EXCLUDE (cycle_id, project_id), c.* EXCLUDE (project_id, commit_sha)
FROM marts.project_verdicts AS v
JOIN (
    SELECT project_id, commit_sha,
           count(*) AS cycle_recorded_attempts,
           count(*) FILTER (WHERE is_valid) AS cycle_valid_attempts,
           count(*) FILTER (WHERE NOT is_valid) AS cycle_invalid_attempts,
           count(*) FILTER (WHERE regexp_matches(attempt_id, '\\.r[0-9]+$')) AS cycle_reruns
    FROM marts.attempt_scores
    WHERE cycle_id = ?
    GROUP BY project_id, commit_sha
) AS c USING (project_id, commit_sha)
LEFT JOIN marts.project_review AS pr ON pr.cycle_id = ? AND pr.project_id = v.project_id
ORDER BY v.project_id, v.commit_sha
"""
# Every row in a fixed order (ORDER BY ALL), then tiers smallest first (see _hardware).
HARDWARE_SQL = {
    "tiers": "SELECT * FROM marts.hardware_tiers ORDER BY ALL",
    "machines": "SELECT * FROM marts.hardware_estimates ORDER BY ALL",
    "speed_bounds": "SELECT * FROM marts.hardware_speed_bounds ORDER BY ALL",
}
# The judged result of each attempt (issue #31, seed 004; marts.judging_results, read when the
# relation exists): the person's promote/reject when a review is in force, else the layers'
# provisional one, whether the attempt counts as a result, and the condition it ran under. Shown on
# the run page beside the score, which it never changes.
JUDGED_SQL = """
SELECT attempt_id, condition, provisional_result, final_decision, decided_by_kind, counts_as_result,
       overturned, decided_at AS judged_at
FROM marts.judging_results
WHERE cycle_id = ?
"""
JUDGED_FIELDS = (
    "condition", "provisional_result", "final_decision", "decided_by_kind", "counts_as_result",
    "overturned", "judged_at",
)  # fmt: skip
# Corrections after a dispute (marts.attempt_corrections, made by the review step; read only when
# the relation exists): the note shown on the original attempt's page, linking its rerun.
CORRECTIONS_SQL = """
SELECT c.attempt_id, c.dispute_id, c.note, c.decided_by, c.decided_at, c.rerun_attempt_id
FROM marts.attempt_corrections AS c
JOIN marts.attempt_scores AS s USING (attempt_id)
WHERE s.cycle_id = ?
ORDER BY c.attempt_id, c.decided_at, c.dispute_id
"""
# The harness changelog with each edition's effective date (marts.harness_editions), and whether the
# cycle's valid attempts ran under one environment (marts.cycle_environments); read when they exist.
HARNESS_EDITIONS_SQL = "SELECT * FROM marts.harness_editions ORDER BY written_on, edition"
CYCLE_ENVIRONMENT_SQL = "SELECT * FROM marts.cycle_environments WHERE cycle_id = ?"
# The methodology's editions with each one's effective date read from the run records
# (marts.methodology_editions); what changed is the edition's row of METHODOLOGY.md's changelog.
METHODOLOGY_EDITIONS_SQL = "SELECT * FROM marts.methodology_editions"
METHODOLOGY_EDITION_FIELDS = ("written_on", "effective_on", "effective_before_written", "runs_recorded")
METHODOLOGY_FILE = "METHODOLOGY.md"
_CHANGELOG_ROW = re.compile(r"^\|\s*v?([0-9][0-9A-Za-z.]*)\s*\|[^|]*\|[^|]*\|\s*(.*?)\s*\|\s*$")
# What the published files may show of the standard instructions (the prompt every external harness
# gets; the reference harness takes none: it reads the project's README).
INSTRUCTED_HARNESSES = ("claude-code", "codex")


# How many audit problems a refusal lists by name (the count is always given).
LISTED_PROBLEMS = 20


def utc_text(value: dt.datetime) -> str:
    """A time as ISO 8601 in UTC with its zone (``…Z``); a naive time is UTC (the warehouse's rule)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _jsonable(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dt.datetime):
        return utc_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


class BoardChanged(PublicationBlocked):
    """The board that would be published is not the one a person approved (its sha256 differs)."""


def board_sha256(board_text: str) -> str:
    """The fingerprint an approval binds: sha256 of board.json's bytes as they would be written."""
    return hashlib.sha256(board_text.encode()).hexdigest()


@dataclass(frozen=True)
class Publication:
    """What publishing a cycle would write, composed under the same checks: board.json and
    attempts.json as text, and the board's rows."""

    cycle_id: str
    board_text: str
    attempts_text: str
    rows: list[dict[str, Any]]
    # Under a public evidence base: (store key under the operator's attempt id, key under the
    # published id) of each linked served copy, put in place by publish_board before the board.
    neutral_copies: list[tuple[str, str]] = field(default_factory=list)

    @property
    def board_sha256(self) -> str:
        return board_sha256(self.board_text)


def publish_board(
    cycle_id: str,
    out_dir: Path,
    db_path: Path | None = None,
    build_result: BuildResult | None = None,
    approved_sha256: str | None = None,
    *,
    site: bool = True,
) -> Path:
    """Write ``out_dir/<cycle_id>/board.json`` (and attempts.json) as ``compose_publication`` makes
    them. ``approved_sha256``: the board a person approved; any other board raises BoardChanged and
    nothing is written (the pipeline's publish steps always pass it: argusic.review.publication).
    Before the board, the repair track's export (``argusic.publication.repair_export``: per-run
    aggregates and the paired patch reviews, labels and masked item ids only) is written under
    ``out_dir/repair`` when the warehouse holds any repair result; an export that would name an
    item, a project, a model or an agent is refused whole and so is the publication
    (PublicationBlocked: nothing written). Last, ``site`` (default): the public site is built from
    the files just written (``argusic.publication.site.build_site``), linking the export in its
    footer."""
    publication = compose_publication(cycle_id, db_path, build_result, out_dir=out_dir)
    if approved_sha256 is not None and publication.board_sha256 != approved_sha256:
        raise BoardChanged(
            f"board of cycle {cycle_id!r} not published: it changed after it was approved (approved "
            f"sha256 {approved_sha256[:12]}…, now {publication.board_sha256[:12]}…); approve the board "
            "as it is now"
        )
    _export_repair(cycle_id, Path(out_dir), db_path, build_result)
    _put_neutral_copies(publication.neutral_copies)
    folder = Path(out_dir) / cycle_id
    _write_atomically(folder / "attempts.json", publication.attempts_text)
    target = folder / "board.json"
    _write_atomically(target, publication.board_text)
    if site:
        # The last step of publishing: the public site, from the files just written
        # (argusic.publication.site).
        try:
            build_site(Path(out_dir), front_cycle=cycle_id)
        except (SiteError, PlayerMissing) as err:
            raise PublicationBlocked(
                f"board of cycle {cycle_id!r} written ({target}), but the public site was not built: {err}"
            ) from err
    return target


def _export_repair(
    cycle_id: str, out_dir: Path, db_path: Path | None, build_result: BuildResult | None
) -> None:
    path = Path(db_path) if db_path else (build_result.db_path if build_result else warehouse_path())
    try:
        with connect(path, read_only=True) as con:
            if has_repair_results(con):
                export_repair_runs(con, out_dir)
    except ExportRefused as err:
        raise PublicationBlocked(
            f"board of cycle {cycle_id!r} not published: the repair export was refused ({err})"
        ) from err


def _put_neutral_copies(copies: list[tuple[str, str]]) -> None:
    """Each served copy the board links under a public evidence base, at its published key: the same
    bytes, re-hashed on the way (put_file refuses a key that does not name its content)."""
    if not copies:
        return
    store = EvidenceStore()
    with tempfile.TemporaryDirectory(prefix="argusic-served-") as scratch:
        for source, target in copies:
            local = Path(scratch) / "copy"
            store.copy_to_file(store.uri_for(source), local)
            store.put_file(local, key=target)
            local.unlink()


def compose_publication(
    cycle_id: str,
    db_path: Path | None = None,
    build_result: BuildResult | None = None,
    *,
    out_dir: Path | None = None,
) -> Publication:
    """board.json and attempts.json of a cycle as publishing would write them, from marts.board, only
    if every expectation passes now and the evidence of every attempt of the cycle passes the audit.

    The warehouse is always re-validated under the writer lock (a build result could be stale);
    ``build_result``, when given, must be a passed build of the same warehouse file. The audit
    re-hashes each attempt's raw log, recording and report and its served log and recording (the
    references read under the lock, the objects hashed after it is released, streamed) and checks
    that every URI is where its sha256 puts it in the store; any problem raises PublicationBlocked
    naming the attempts and problems. Nothing is written here (``publish_board`` writes); the same
    warehouse gives the same bytes, so an approval can bind the board's sha256.

    Evidence is linked only through its served copies: under ``ARGUSIC_PUBLIC_EVIDENCE_BASE`` when
    set, else by links relative to the files (the copies the site holds); times are UTC with their
    zone.

    Sealed until revealed (methodology section 6, ``argusic.publication.sealing``): a private project
    of the cycle's pool is published under a label ("private project K of N"), without its id,
    commit, the agent's words or its served copies, until ``<out_dir>/<cycle>/private_pool.json``
    (written by ``reveal_private`` once the cycle has ended; ``out_dir`` defaults to the publish
    dir) reveals it. The board's rows do not change; the revealing publication is a new board (new
    sha256), approved and published like any other.
    """
    path = Path(db_path) if db_path else (build_result.db_path if build_result else warehouse_path())
    if build_result is not None:
        if Path(build_result.db_path).resolve() != path.resolve():
            raise ValueError(f"build_result is for {build_result.db_path}, not {path}")
        if not build_result.validation.success:
            raise PublicationBlocked(
                "the build's expectations failed:\n" + "\n".join(build_result.validation.failure_messages())
            )
    with writer_lock(path):
        report = validate_warehouse(path)
        if not report.success:
            raise PublicationBlocked(
                f"board of cycle {cycle_id!r} not published, expectations failed:\n"
                + "\n".join(report.failure_messages())
            )
        with connect(path, read_only=True) as con:
            rows = _rows(
                con,
                "SELECT * FROM marts.board WHERE cycle_id = ? ORDER BY rank NULLS LAST, agent_id",
                cycle_id,
            )
            attempts = _with_judged_results(con, cycle_id, _rows(con, ATTEMPTS_SQL, cycle_id))
            extra = _publication_extras(con, cycle_id) if rows else {}
            refs = refs_of_connection(con, cycle_id) if rows else []
            private = private_projects(con, cycle_id) if rows else {}
    if not rows:
        raise PublicationBlocked(f"no board rows for cycle {cycle_id!r} in marts.board")
    audit = audit_refs(refs, EvidenceStore())
    if not audit.ok:
        bad = sorted({f.attempt_id for f in audit.findings})
        listed = "; ".join(f.describe() for f in audit.findings[:LISTED_PROBLEMS])
        more = len(audit.findings) - LISTED_PROBLEMS
        raise PublicationBlocked(
            f"board of cycle {cycle_id!r} not published: the evidence of {len(bad)} attempt(s) fails the "
            f"audit ({len(audit.findings)} problem(s) in {audit.checked} object(s)): {listed}"
            + (f"; and {more} more" if more > 0 else "")
        )
    # Dated by the data, not the clock: publishing the same warehouse twice gives the same bytes.
    through = max((a["ended_at"] for a in attempts if a["ended_at"]), default=None)
    base = public_evidence_base()
    for attempt in attempts:
        for kind in ("log", "recording"):
            attempt[f"served_{kind}_uri"] = served_link(attempt, kind, base)
    # Agents under their neutral identities, the exact configuration of each in board.json's "agents"
    # (argusic.publication.agents): from the cycle's pin, else rebuilt from the records.
    real_attempt_ids = [a["attempt_id"] for a in attempts]
    agents, rows, attempts, projects = present(
        cycle_id, rows, attempts, extra["projects"], cycle_pin(cycle_id)
    )
    # Attempt ids as published: the agent part is the identity's code (argusic.publication.agents);
    # the site's copies of the served files are addressed by it too (a public evidence base is the
    # store's own address: its keys keep the operator's id).
    codes = {
        r["configuration"]["agent_id"]: r["agent_id"]
        for r in [*rows, *attempts]
        if "agent_id" in (r.get("configuration") or {})
    }
    corrections = [publish_correction(c, codes) for c in extra["corrections"]]
    extra = {**extra, "projects": projects, "corrections": corrections}
    # Served copies are addressed by the published id, in the site and under a public evidence base
    # alike: the store keeps them under the operator's id, so publishing puts a copy of the same
    # bytes under the published id's key (Publication.neutral_copies; content-addressed, write-once).
    real_ids = {codes_of(real, codes): real for real in real_attempt_ids}
    neutral_copies: list[tuple[str, str]] = []
    for attempt in attempts:
        for kind in ("log", "recording"):
            attempt[f"served_{kind}_uri"] = link = served_link(attempt, kind, base)
            real = real_ids.get(attempt["attempt_id"], attempt["attempt_id"])
            if base and link and real != attempt["attempt_id"]:
                sha = attempt[f"served_{kind}_sha256"]
                neutral_copies.append(
                    (served_key_for(real, kind, sha), served_key_for(attempt["attempt_id"], kind, sha))
                )
    seal = Seal(cycle_id, private, read_revealed(Path(out_dir or publish_dir()), cycle_id))
    attempts, extra = _sealed(seal, attempts, extra)
    board = {
        "schema": BOARD_SCHEMA,
        "cycle_id": cycle_id,
        "attempts_through": through,
        "validation": {"tables": len(report.tables), "skipped_tables": report.skipped_tables},
        "attempts_file": "attempts.json",
        "evidence_base": base or SITE_EVIDENCE_LINK,
        "rows": rows,
        "agents": agents,
        "projects": extra["projects"],
        "corrections": extra["corrections"],
        "hardware": extra["hardware"],
        "target_kinds": extra["target_kinds"],
        "instructions": standard_instructions(),
        "environment": extra["environment"],
        "harness_editions": extra["harness_editions"],
        "methodology": extra["methodology"],
        "methodology_editions": extra["methodology_editions"],
        "private_projects": {
            "count": len(seal.private),
            "sealed": [seal.label(p) for p in seal.order() if p in seal.sealed],
            "revealed": sorted(p for p in seal.private if p not in seal.sealed),
        },
    }
    trace = {"schema": ATTEMPTS_SCHEMA, "cycle_id": cycle_id, "attempts": attempts}
    board_text = json.dumps(board, indent=2, allow_nan=False) + "\n"
    attempts_text = json.dumps(trace, indent=2, allow_nan=False) + "\n"
    if leaks := seal.leaks(board_text + attempts_text):
        raise PublicationBlocked(
            f"board of cycle {cycle_id!r} not published: it would name sealed private projects "
            f"({'; '.join(leaks[:LISTED_PROBLEMS])})"
        )
    published_links = attempts_text
    neutral_copies = [(src, dst) for src, dst in neutral_copies if dst in published_links]  # not sealed
    return Publication(
        cycle_id, board_text=board_text, attempts_text=attempts_text, rows=rows, neutral_copies=neutral_copies
    )


def _sealed(
    seal: Seal, attempts: list[dict[str, Any]], extra: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The attempts and the board's projects and corrections as published while some of the cycle's
    private projects are sealed (unchanged when none is). Sealed rows are put back in order by their
    labels, so where they sit in a list says nothing of the project's name."""
    if not seal.sealed:
        return attempts, extra
    project_of = {a["attempt_id"]: a["project_id"] for a in attempts}
    attempts = sorted(
        (seal_attempt(seal, a) for a in attempts),
        key=lambda a: (a["agent_id"] or "", a["project_id"] or "", a["attempt_no"] or 0, a["attempt_id"]),
    )
    projects = sorted(
        (seal_project(seal, p, project_of) for p in extra["projects"]),
        key=lambda p: (p["project_id"] or "", p.get("commit_sha") or ""),
    )
    corrections = sorted(
        (seal_correction(seal, c, project_of) for c in extra["corrections"]),
        key=lambda c: (c["attempt_id"] or "", str(c.get("decided_at") or ""), c.get("dispute_id") or ""),
    )
    return attempts, {**extra, "projects": projects, "corrections": corrections}


# Where the published JSON (in <publish dir>/<cycle>/) finds the served copies the site holds.
SITE_EVIDENCE_LINK = "../site/evidence/"


def served_link(attempt: dict[str, Any], kind: str, base: str | None) -> str | None:
    """The public link of an attempt's served log or recording: under the public evidence base when
    one is configured, else relative to the published JSON (the copy in the site). None: withheld or
    no served copy (the raw evidence is never linked)."""
    sha = attempt.get(f"served_{kind}_sha256")
    if not sha or attempt.get("served_copy_withheld"):
        return None
    return (base or SITE_EVIDENCE_LINK) + served_key_for(attempt["attempt_id"], kind, sha)


# Target kinds the methodology declares (section 2). Only the declaration is typed here: a kind's
# status is counted from the run records at publication. A run record (argusic.run_record/1) names a
# git commit, so every recorded run is of a repository. Install-and-run attempts only (board and
# verdict, what the site publishes): the repair track's attempts are reported by marts.repair_*.
TARGET_KINDS = (
    ("repository", "Source repositories"),
    ("huggingface_model", "Hugging Face models"),
    ("huggingface_space", "Hugging Face Spaces"),
    ("npm_package", "Published packages (npm)"),
    ("pypi_package", "Published packages (PyPI)"),
    ("vendor_tool", "Vendor tools"),
    ("cloud_template", "Cloud templates"),
    ("container_image", "Container images"),
    ("mcp_server", "MCP servers"),
)
RECORDED_KIND_SQL = """
SELECT 'repository' AS kind, count(DISTINCT project_id) AS targets_tested, count(*) AS runs_recorded
FROM raw.run_records
WHERE purpose IN ('board', 'verdict')
"""


def target_kind_rows(con) -> list[dict[str, Any]]:
    """Every declared kind with its status read from the records: "in use" with the number of
    targets tested when a run of that kind is recorded, else "declared" with no count at all."""
    recorded = {r["kind"]: r for r in _rows(con, RECORDED_KIND_SQL) if r["runs_recorded"]}
    out = []
    for kind, label in TARGET_KINDS:
        if kind in recorded:
            row = recorded[kind]
            out.append(
                {
                    "kind": kind,
                    "label": label,
                    "status": "in_use",
                    "targets_tested": row["targets_tested"],
                    "runs_recorded": row["runs_recorded"],
                }
            )
        else:
            out.append({"kind": kind, "label": label, "status": "declared"})
    return out  # fmt: skip


def standard_instructions() -> dict[str, Any]:
    """The standard instructions every external harness is given (argusic/external/instructions.md)."""
    text = INSTRUCTIONS_TEMPLATE.read_text(encoding="utf-8")
    return {
        "file": "plugins/argusic/external/instructions.md",
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "harnesses": list(INSTRUCTED_HARNESSES),
        "text": text,
    }


def methodology_document(path: Path | None = None) -> dict[str, Any] | None:
    """METHODOLOGY.md as published (the site renders it): its text and sha256; None when this
    installation has no copy (the page then says it is not published)."""
    path = path or code_root() / METHODOLOGY_FILE
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return {"file": METHODOLOGY_FILE, "sha256": sha256, "text": text}


def changelog_summaries(text: str | None) -> dict[str, str]:
    """Each edition's "Change" cell of the changelog table in METHODOLOGY.md, by version ("1.6")."""
    found: dict[str, str] = {}
    for line in (text or "").splitlines():
        if match := _CHANGELOG_ROW.match(line.strip()):
            found.setdefault(match[1], match[2])
    return found


def methodology_editions(con, document: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every methodology edition with its written date, its effective date from the run records
    (marts.methodology_editions) and what changed (the document's changelog); [] before the mart."""
    if not _relation_exists(con, "marts", "methodology_editions"):
        return []
    summaries = changelog_summaries(document["text"] if document else None)
    rows = [
        {"edition": row.get("version"), **{k: row.get(k) for k in METHODOLOGY_EDITION_FIELDS}}
        for row in _rows(con, METHODOLOGY_EDITIONS_SQL)
    ]
    rows.sort(key=lambda r: (str(r["written_on"] or ""), str(r["edition"] or "")))
    return [{**row, "summary": summaries.get(str(row["edition"]))} for row in rows]


def _relation_exists(con, schema: str, name: str) -> bool:
    query = "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?"
    return con.execute(query, [schema, name]).fetchone()[0] > 0


def _with_judged_results(con, cycle_id: str, attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each attempt with its judged result (JUDGED_FIELDS; None where the warehouse has none, e.g. one
    built before marts.judging_results)."""
    judged = {}
    if _relation_exists(con, "marts", "judging_results"):
        judged = {row.pop("attempt_id"): row for row in _rows(con, JUDGED_SQL, cycle_id)}
    return [{**a, **dict.fromkeys(JUDGED_FIELDS), **judged.get(a["attempt_id"], {})} for a in attempts]


def _hardware(con) -> dict[str, list[dict[str, Any]]]:
    """The hardware marts as published: machines by id, tiers smallest first, bounds by machine."""
    tables = {name: _rows(con, sql) for name, sql in HARDWARE_SQL.items()}
    tables["tiers"].sort(key=lambda r: r.get("tier_order") or 0)
    tables["speed_bounds"].sort(key=lambda r: (r.get("machine_id") or "", r.get("tier_order") or 0))
    return tables


def _publication_extras(con, cycle_id: str) -> dict[str, Any]:
    """What board.json carries beside the board: verdicts, corrections, hardware, target kinds, the
    cycle's environment (one harness per cycle), the harness changelog, and the methodology with its
    editions (the site's rule pages)."""
    corrections = []
    if _relation_exists(con, "marts", "attempt_corrections"):
        corrections = _rows(con, CORRECTIONS_SQL, cycle_id)
    environment = None
    if _relation_exists(con, "marts", "cycle_environments"):
        environment = next(iter(_rows(con, CYCLE_ENVIRONMENT_SQL, cycle_id)), None)
    editions = []
    if _relation_exists(con, "marts", "harness_editions"):
        editions = _rows(con, HARNESS_EDITIONS_SQL)
    document = methodology_document()
    return {
        "methodology": document,
        "methodology_editions": methodology_editions(con, document),
        "projects": _rows(con, PROJECTS_SQL, cycle_id, cycle_id),
        "corrections": corrections,
        "hardware": _hardware(con),
        "target_kinds": target_kind_rows(con),
        "environment": environment,
        "harness_editions": editions,
    }


def _rows(con, query: str, *params: Any) -> list[dict[str, Any]]:
    cur = con.execute(query, list(params))
    columns = [d[0] for d in cur.description]
    return [dict(zip(columns, (_jsonable(v) for v in row), strict=True)) for row in cur.fetchall()]


def _published_seal(cycle_id: str) -> Seal:
    """The seal the cycle's publication applied, for the operator's lines (a private project's
    attempts are published under labels); no seal when the warehouse cannot be read now."""
    try:
        with connect(None, read_only=True) as con:
            private = private_projects(con, cycle_id)
        return Seal(cycle_id, private, read_revealed(publish_dir(), cycle_id))
    except Exception:  # noqa: BLE001 (only the log lines' lookup depends on it)
        return Seal(cycle_id)


def published_attempt_lines(cycle_id: str, spec_paths: list[str]) -> list[str]:
    """The planned attempts of a run as the rubric scored them (published/<cycle>/attempts.json,
    written from marts.attempt_scores): outcome, points, score, served evidence. One line each."""
    path = publish_dir() / cycle_id / "attempts.json"
    rows = {a["attempt_id"]: a for a in json.loads(path.read_text())["attempts"]}
    # the agent part as published: the identity's code (argusic.publication.agents)
    codes = {
        a["configuration"]["agent_id"]: a["agent_id"]
        for a in rows.values()
        if "agent_id" in (a.get("configuration") or {})
    }
    seal = _published_seal(cycle_id)
    lines = [f"attempts of this run as scored by the rubric ({path}):"]
    for spec_path in spec_paths:
        spec = read_spec(spec_path)
        current, chain = spec, []
        while (published := seal.attempt_id(codes_of(current.attempt_id, codes), current.project_id)) in rows:
            chain.append(rows[published])
            current = current.rerun()
        if not chain:
            lines.append(f"  {spec.label}: not in the published attempts")
            continue
        row = chain[-1]
        reruns = f", after {len(chain) - 1} rerun(s)" if len(chain) > 1 else ""
        if not row["is_valid"]:
            lines.append(f"  {spec.label}: invalid{reruns}: {_text(row['invalid_reason'], 160)}")
            continue
        points = (
            f"{row['install_points']}+{row['run_points']}+{row['recovery_points']:g}+{row['depth_points']}"
        )
        log = row["served_log_uri"] or (
            "sealed until the reveal (a private project)" if row.get("sealed") else "none (no served copy)"
        )
        lines.append(
            f"  {spec.label}: {row['outcome']}, points {points}, score {row['score']:.1f}{reruns}; log {log}"
        )
    return lines
