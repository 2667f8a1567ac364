"""Every raw table's DDL and its migration (run records, pool entries, decisions, repair, hints and
judgements): one place below the loaders, so no loader imports another for its tables."""

from __future__ import annotations

import duckdb

from argusic.warehouse.decisions import ddl as decisions_ddl

RAW_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.run_records (
    attempt_id            VARCHAR PRIMARY KEY,
    cycle_id              VARCHAR NOT NULL,
    purpose               VARCHAR NOT NULL,
    agent_id              VARCHAR NOT NULL,
    project_id            VARCHAR NOT NULL,
    commit_sha            VARCHAR NOT NULL,
    tier                  VARCHAR NOT NULL,
    attempt_no            INTEGER NOT NULL,
    methodology_version   VARCHAR NOT NULL,
    started_at            TIMESTAMP NOT NULL,  -- UTC
    ended_at              TIMESTAMP NOT NULL,  -- UTC
    budget_seconds        INTEGER NOT NULL,
    end_reason            VARCHAR NOT NULL,
    invalid_reason        VARCHAR,
    executor              VARCHAR,
    is_demo               BOOLEAN NOT NULL,
    rerun_of              VARCHAR,
    log_sha256            VARCHAR,
    log_uri               VARCHAR,
    log_bytes             BIGINT,
    recording_sha256      VARCHAR,
    recording_uri         VARCHAR,
    recording_bytes       BIGINT,
    report_sha256         VARCHAR,
    report_uri            VARCHAR,
    report_bytes          BIGINT,
    has_report            BOOLEAN NOT NULL,
    install_ok            BOOLEAN,
    ran_ok                BOOLEAN,
    errors_encountered    INTEGER,
    errors_fixed          INTEGER,
    test_depth            VARCHAR,
    verified_how          VARCHAR,
    final_state           VARCHAR,
    key_kind              VARCHAR,
    harness_name          VARCHAR,
    harness_version       VARCHAR,
    record_json           JSON NOT NULL
);
-- Added after the first release; older warehouse files gain them on the next ingest.
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS masking_applied BOOLEAN;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS presentation_withheld BOOLEAN;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS effective_budget_seconds INTEGER;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS served_log_uri VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS served_recording_uri VARCHAR;
-- The environment (issue #15), flattened from record.environment; null for older records.
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS harness_edition VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS scaffold_sha256 VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS image_role VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS image_reference VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS image_digest VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS instructions_version VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS instructions_sha256 VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_cpus DOUBLE;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_memory_bytes BIGINT;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_pids BIGINT;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_disk_bytes BIGINT;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS network_mode VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_budget_seconds INTEGER;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS display VARCHAR;
"""


# Column comments of the raw layer (DuckDB `COMMENT ON`, shown by duckdb_columns() and carried into the
# analyst copy); the marts' come from their dbt descriptions (argusic.warehouse.analyst).
RAW_TABLE_COMMENT = (
    "The run records (argusic.run_record/1) as loaded: checked, write-once. Grain: one row per attempt "
    "(attempt_id). Every number is computed from it by dbt (marts.*)."
)


RAW_COLUMN_COMMENTS = {
    "attempt_id": "<cycle_id>.<purpose>.<agent_id>.<project_id>.a<attempt_no>[.r<n> for the n-th rerun]",
    "cycle_id": "Benchmark cycle (YYYY-MM, optional suffix)",
    "purpose": "board | verdict | repair (repair attempts are graded apart: marts.repair_*)",
    "agent_id": "Agent (reference.agents)",
    "project_id": "Project (from the cycle's pool)",
    "commit_sha": "Pinned commit the attempt ran against",
    "tier": "standard | heavy | gpu (sets the budget)",
    "attempt_no": "1..3 within the set; a rerun keeps the number it replaces",
    "methodology_version": "Edition the attempt was measured under",
    "started_at": "Start (UTC)",
    "ended_at": "End (UTC)",
    "budget_seconds": "The tier's budget in seconds (the real one, also in scaled runs)",
    "end_reason": "completed | timeout | cancelled | emergency_stop | harness_error",
    "invalid_reason": "Reason the pipeline marked the attempt invalid when it recorded it (null if none)",
    "executor": "docker | local (development only, no isolation)",
    "is_demo": "Ran with scaled-down budgets (demo or dry run)",
    "rerun_of": "attempt_id this attempt reruns",
    "log_sha256": "sha256 of the raw log",
    "log_uri": "Raw log in the evidence store (private: may hold unmasked output)",
    "log_bytes": "Size of the raw log",
    "recording_sha256": "sha256 of the raw asciicast recording",
    "recording_uri": "Raw recording in the evidence store (private)",
    "recording_bytes": "Size of the raw recording",
    "report_sha256": "sha256 of the agent's report.json",
    "report_uri": "The agent's report in the evidence store",
    "report_bytes": "Size of the report",
    "has_report": "The harness could read the agent's report",
    "install_ok": "Report: installed",
    "ran_ok": "Report: ran or tested successfully",
    "errors_encountered": "Report: errors met",
    "errors_fixed": "Report: errors fixed",
    "test_depth": "Report: tier1_real | tier2_mock | tier3_none",
    "verified_how": "Report: how the agent verified the result",
    "final_state": "Report: where the agent left the project",
    "key_kind": "Model key: per_run | shared | none",
    "harness_name": "Harness that drove the agent",
    "harness_version": "Its version",
    "record_json": "The whole run record as loaded (not in the analyst copy)",
    "masking_applied": "Live credentials were masked in the served copies",
    "presentation_withheld": "The served copies were withheld (could not be verified clean)",
    "effective_budget_seconds": "Budget actually allowed in a scaled run (null: budget_seconds)",
    "served_log_uri": "Served (masked) log shown to the public",
    "served_recording_uri": "Served (masked) recording shown to the public",
    "harness_edition": "Harness changelog edition the attempt ran under (reference.harness_editions; "
    "null: recorded before environments were)",
    "scaffold_sha256": "sha256 over the harness files handed to the container",
    "image_role": "runner | agents: which image the attempt ran in (null: local executor, no image)",
    "image_reference": "The image's name as asked for (a tag: rebuilt in place, so not an identity)",
    "image_digest": "Content digest (image id, sha256:...) of the image the attempt ran in",
    "instructions_version": "Version of the standard instructions the harness handed the agent",
    "instructions_sha256": "sha256 of the standard instructions template",
    "limit_cpus": "Container CPU limit (null: none set, local executor)",
    "limit_memory_bytes": "Container memory limit in bytes (null: none set)",
    "limit_pids": "Container process limit (null: none set)",
    "limit_disk_bytes": "Writable areas' size cap in bytes, /out and work area together (null: none set)",
    "network_mode": "Docker network mode of the container (host: local executor)",
    "limit_budget_seconds": "Budget the attempt was actually allowed, from its environment (scaled in demos)",
    "display": "Virtual display the harness found, WIDTHxHEIGHTxDEPTH (null: none)",
}


def _raw_comments_sql() -> str:
    def literal(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    lines = [f"COMMENT ON TABLE raw.run_records IS {literal(RAW_TABLE_COMMENT)};"]
    lines += [
        f"COMMENT ON COLUMN raw.run_records.{c} IS {literal(t)};" for c, t in RAW_COLUMN_COMMENTS.items()
    ]
    return "\n".join(lines) + "\n"


# Columns flattened out of record_json after the first release. A warehouse that predates a column
# gets it filled from the records already loaded (the same values ingest writes), once, when the
# column is added: record_json is the record itself, so this only copies what is already there.
BACKFILL = {
    "effective_budget_seconds": "TRY_CAST(record_json ->> '$.effective_budget_seconds' AS INTEGER)",
    "served_log_uri": "record_json ->> '$.presentation.log.uri'",
    "served_recording_uri": "record_json ->> '$.presentation.recording.uri'",
    "harness_edition": "record_json ->> '$.environment.harness_edition'",
    "scaffold_sha256": "record_json ->> '$.environment.scaffold_sha256'",
    "image_role": "record_json ->> '$.environment.images[0].role'",
    "image_reference": "record_json ->> '$.environment.images[0].reference'",
    "image_digest": "record_json ->> '$.environment.images[0].digest'",
    "instructions_version": "record_json ->> '$.environment.instructions.version'",
    "instructions_sha256": "record_json ->> '$.environment.instructions.sha256'",
    "limit_cpus": "TRY_CAST(record_json ->> '$.environment.limits.cpus' AS DOUBLE)",
    "limit_memory_bytes": "TRY_CAST(record_json ->> '$.environment.limits.memory_bytes' AS BIGINT)",
    "limit_pids": "TRY_CAST(record_json ->> '$.environment.limits.pids' AS BIGINT)",
    "limit_disk_bytes": "TRY_CAST(record_json ->> '$.environment.limits.disk_bytes' AS BIGINT)",
    "network_mode": "record_json ->> '$.environment.limits.network'",
    "limit_budget_seconds": "TRY_CAST(record_json ->> '$.environment.limits.budget_seconds' AS INTEGER)",
    "display": (
        "CASE WHEN json_type(record_json, '$.environment.display') = 'OBJECT' THEN "
        "concat_ws('x', record_json ->> '$.environment.display.width', "
        "record_json ->> '$.environment.display.height', record_json ->> '$.environment.display.depth') END"
    ),
}


COLUMNS = [
    "attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "commit_sha", "tier", "attempt_no",
    "methodology_version", "started_at", "ended_at", "budget_seconds", "end_reason", "invalid_reason",
    "executor", "is_demo", "rerun_of",
    "log_sha256", "log_uri", "log_bytes", "recording_sha256", "recording_uri", "recording_bytes",
    "report_sha256", "report_uri", "report_bytes", "has_report", "install_ok", "ran_ok",
    "errors_encountered", "errors_fixed", "test_depth", "verified_how", "final_state",
    "key_kind", "harness_name", "harness_version", "record_json",
    "masking_applied", "presentation_withheld",
    "effective_budget_seconds", "served_log_uri", "served_recording_uri",
    "harness_edition", "scaffold_sha256", "image_role", "image_reference", "image_digest",
    "instructions_version", "instructions_sha256", "limit_cpus", "limit_memory_bytes", "limit_pids",
    "limit_disk_bytes", "network_mode", "limit_budget_seconds", "display",
]  # fmt: skip


assert set(COLUMNS) == set(RAW_COLUMN_COMMENTS), "every raw column has a comment"
RAW_DDL += _raw_comments_sql()  # the comments are part of the raw layer's DDL

# The projects each cycle's pool pinned (runs/pools/<cycle>/pool.json), loaded by `load_pool_entries`:
# the projects whose verdict is judged at that commit (marts.verdict_plan). Write-once per
# (cycle_id, project_id), like the pool itself.
POOL_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.pool_entries (
    cycle_id    VARCHAR NOT NULL,
    project_id  VARCHAR NOT NULL,
    commit_sha  VARCHAR NOT NULL,
    repo_url    VARCHAR NOT NULL,
    tier        VARCHAR NOT NULL,
    visibility  VARCHAR NOT NULL,
    PRIMARY KEY (cycle_id, project_id)
);
"""


def migrate_raw(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create the raw layer, or bring an older one up to RAW_DDL; the columns added, by name.

    A column flattened out of record_json (BACKFILL) is filled from the records already loaded when
    it is added, so an older warehouse answers the new columns for every attempt."""
    before = {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'raw' AND table_name = 'run_records'"
        ).fetchall()
    }
    con.execute(RAW_DDL)
    con.execute(decisions_ddl())  # empty decision tables exist before anyone decides: marts read them
    con.execute(POOL_DDL)  # empty until a pool is loaded: marts.verdict_plan reads it
    migrate_repair(con)  # repair items, validations and grades (issue #13): empty until loaded
    migrate_judging(con)  # hints and change similarity (issue #14): empty until loaded
    if not before:
        return []
    added = [c for c in COLUMNS if c not in before]
    fills = [f"{c} = {BACKFILL[c]}" for c in added if c in BACKFILL]
    if fills:
        con.execute(f"UPDATE raw.run_records SET {', '.join(fills)}")
    return added


HINTS_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.attempt_hints (
    attempt_id              VARCHAR NOT NULL,
    task_revision           VARCHAR NOT NULL,
    cycle_id                VARCHAR NOT NULL,
    purpose                 VARCHAR NOT NULL,
    agent_id                VARCHAR NOT NULL,
    project_id              VARCHAR NOT NULL,
    task_id                 VARCHAR NOT NULL,
    task_version            VARCHAR NOT NULL,
    needles_score           DOUBLE,
    needles_status          VARCHAR NOT NULL,
    needles_found           JSON NOT NULL,
    needles_missing         JSON NOT NULL,
    needles_sources         JSON NOT NULL,
    needles_detail          VARCHAR,
    rendering_score         DOUBLE,
    rendering_status        VARCHAR NOT NULL,
    rendering_pages         JSON NOT NULL,
    rendering_detail        VARCHAR,
    agent_logic_score       DOUBLE,
    agent_logic_status      VARCHAR NOT NULL,
    agent_logic_succeeded   BOOLEAN,
    agent_logic_in_order    BOOLEAN,
    agent_logic_required    JSON NOT NULL,
    agent_logic_steps       JSON NOT NULL,
    agent_logic_source      VARCHAR,
    agent_logic_detail      VARCHAR,
    hints_sha256            VARCHAR NOT NULL,
    hints_json              JSON NOT NULL,
    loaded_at               TIMESTAMP NOT NULL,  -- UTC
    PRIMARY KEY (attempt_id, task_revision)
);
CREATE TABLE IF NOT EXISTS raw.change_similarity (
    attempt_a               VARCHAR NOT NULL,
    attempt_b               VARCHAR NOT NULL,
    method                  VARCHAR NOT NULL,
    similarity              DOUBLE NOT NULL,
    identical               BOOLEAN NOT NULL,
    PRIMARY KEY (attempt_a, attempt_b, method),
    CHECK (attempt_a < attempt_b),
    CHECK (similarity >= 0 AND similarity <= 1)
);
"""


HINTS_COLUMNS = 29


JUDGE_VERDICTS_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.judge_verdicts (
    attempt_id              VARCHAR NOT NULL,
    cycle_id                VARCHAR NOT NULL,
    task_id                 VARCHAR NOT NULL,
    task_revision           VARCHAR NOT NULL,
    judge_id                VARCHAR NOT NULL,
    harness                 VARCHAR NOT NULL,
    model                   VARCHAR NOT NULL,
    evidence_sha256         VARCHAR NOT NULL,
    session_sha256          VARCHAR,
    status                  VARCHAR NOT NULL,
    reason                  VARCHAR,
    scores_json             VARCHAR NOT NULL,
    quotes_json             VARCHAR NOT NULL,
    summary                 VARCHAR NOT NULL,
    replayed                BOOLEAN NOT NULL,
    judgement_sha256        VARCHAR NOT NULL,
    loaded_at               TIMESTAMP NOT NULL,  -- UTC
    PRIMARY KEY (attempt_id, judge_id, task_revision, evidence_sha256),
    CHECK (status IN ('valid', 'refused', 'no_verdict'))
);
"""


JUDGE_VERDICT_COLUMNS = 17


# Paired patch review (issue #31, argusic.judging.paired): one row per judge of a pair's review
# document (argusic.paired_review/1) and one per bug a valid judgement reported; a changed document of
# the same pair replaces the pair's rows (argusic.warehouse.load_paired). Labels only, never a model
# name of the patches' makers (``model`` is the judge's: what answered).
PAIRED_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.paired_judgements (
    pair_id                 VARCHAR NOT NULL,
    item_id                 VARCHAR NOT NULL,
    revision                VARCHAR NOT NULL,
    project_id              VARCHAR NOT NULL,
    p_label                 VARCHAR NOT NULL,
    q_label                 VARCHAR NOT NULL,
    p_patch_id              VARCHAR NOT NULL,
    q_patch_id              VARCHAR NOT NULL,
    draw_seed               VARCHAR NOT NULL,
    drawn                   DOUBLE NOT NULL,
    context_sha256          VARCHAR NOT NULL,
    judge_id                VARCHAR NOT NULL,
    harness                 VARCHAR NOT NULL,
    model                   VARCHAR NOT NULL,
    session_sha256          VARCHAR,
    status                  VARCHAR NOT NULL,
    reason                  VARCHAR,
    scores_json             VARCHAR NOT NULL,
    quotes_json             VARCHAR NOT NULL,
    summary                 VARCHAR NOT NULL,
    review_sha256           VARCHAR NOT NULL,
    loaded_at               TIMESTAMP NOT NULL,  -- UTC
    PRIMARY KEY (pair_id, judge_id),
    CHECK (status IN ('valid', 'refused', 'no_verdict')),
    CHECK (drawn >= 0 AND drawn < 1)
);
CREATE TABLE IF NOT EXISTS raw.paired_bugs (
    bug_id                  VARCHAR NOT NULL,
    pair_id                 VARCHAR NOT NULL,
    judge_id                VARCHAR NOT NULL,
    side                    VARCHAR NOT NULL,
    file                    VARCHAR NOT NULL,
    quote                   VARCHAR NOT NULL,
    description             VARCHAR NOT NULL,
    loaded_at               TIMESTAMP NOT NULL,  -- UTC
    PRIMARY KEY (bug_id),
    CHECK (side IN ('P', 'Q'))
);
"""


PAIRED_JUDGEMENT_COLUMNS = 22
PAIRED_BUG_COLUMNS = 8


def migrate_judging(con: duckdb.DuckDBPyConnection) -> None:
    """Create raw.attempt_hints, raw.change_similarity, raw.judge_verdicts and the paired review's
    raw.paired_judgements and raw.paired_bugs (empty until loaded: dbt reads them)."""
    con.execute(HINTS_DDL)
    con.execute(JUDGE_VERDICTS_DDL)
    con.execute(PAIRED_DDL)


REPAIR_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.repair_items (
    item_id                 VARCHAR NOT NULL,
    revision                VARCHAR NOT NULL,
    project_id              VARCHAR NOT NULL,
    repository              VARCHAR NOT NULL,
    base_commit             VARCHAR NOT NULL,
    source_kind             VARCHAR NOT NULL,
    source_ref              VARCHAR NOT NULL,
    track                   VARCHAR NOT NULL,
    has_interface_spec      BOOLEAN NOT NULL,
    test_files              VARCHAR[] NOT NULL,
    fail_to_pass            VARCHAR[] NOT NULL,
    pass_to_pass            VARCHAR[] NOT NULL,
    test_patch_bytes        BIGINT NOT NULL,
    gold_patch_bytes        BIGINT NOT NULL,
    split_original          VARCHAR,
    split_topic             VARCHAR,
    split_match             VARCHAR,
    superseded_by_split     BOOLEAN NOT NULL,
    built_at                TIMESTAMP NOT NULL,  -- UTC
    grader_image_reference  VARCHAR,
    grader_image_digest     VARCHAR,
    item_json               JSON NOT NULL,
    PRIMARY KEY (item_id, revision)
);
CREATE TABLE IF NOT EXISTS raw.repair_validations (
    item_id                 VARCHAR NOT NULL,
    revision                VARCHAR NOT NULL,
    patch                   VARCHAR NOT NULL,
    run_no                  INTEGER NOT NULL,
    verdict                 VARCHAR NOT NULL,
    failing_tests           VARCHAR[] NOT NULL,
    usable                  BOOLEAN NOT NULL,
    problems                VARCHAR[] NOT NULL,
    validated_at            TIMESTAMP NOT NULL,  -- UTC
    grader_image_reference  VARCHAR,
    grader_image_digest     VARCHAR,
    PRIMARY KEY (item_id, revision, patch, run_no)
);
CREATE TABLE IF NOT EXISTS raw.repair_grades (
    grade_id                VARCHAR PRIMARY KEY,
    item_id                 VARCHAR NOT NULL,
    revision                VARCHAR NOT NULL,
    source_kind             VARCHAR NOT NULL,
    attempt_id              VARCHAR,
    predictions_sha256      VARCHAR,
    predictions_label       VARCHAR,
    patch_sha256            VARCHAR NOT NULL,
    patch_bytes             BIGINT NOT NULL,
    excluded_paths          VARCHAR[] NOT NULL,
    verdict                 VARCHAR NOT NULL,
    failing_tests           VARCHAR[] NOT NULL,
    rerun_files             JSON NOT NULL,
    results                 JSON NOT NULL,
    graded_at               TIMESTAMP NOT NULL,  -- UTC
    grader_image_reference  VARCHAR,
    grader_image_digest     VARCHAR,
    empty_patch             BOOLEAN NOT NULL,
    changed_lines           BIGINT,
    gold_changed_lines      BIGINT,
    lint_new_errors         BIGINT,
    suppressions_added      BIGINT,
    detail                  VARCHAR,
    grade_json              JSON NOT NULL
);
"""


ITEM_COLUMNS = 22


VALIDATION_COLUMNS = 11


GRADE_COLUMNS = 24


def migrate_repair(con: duckdb.DuckDBPyConnection) -> None:
    """Create the repair tables of the raw layer (empty until records are loaded: dbt reads them)."""
    con.execute(REPAIR_DDL)
