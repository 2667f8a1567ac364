"""STAND-IN (helper B, branch `review`): raw.judge_verdicts exactly as contract14b names it, so the
Layer 3 marts build before helper A's loader (argusic.judging.ingest) is merged. The integrator keeps
helper A's table and deletes this module and its one call in `migrate_judging`."""

from __future__ import annotations

import duckdb

JUDGE_VERDICTS_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.judge_verdicts (
    attempt_id        VARCHAR NOT NULL,
    cycle_id          VARCHAR NOT NULL,
    task_id           VARCHAR NOT NULL,
    task_revision     VARCHAR NOT NULL,
    judge_id          VARCHAR NOT NULL,
    harness           VARCHAR NOT NULL,
    model             VARCHAR,
    evidence_sha256   VARCHAR NOT NULL,
    session_sha256    VARCHAR,
    status            VARCHAR NOT NULL,
    reason            VARCHAR,
    scores_json       VARCHAR,
    quotes_json       VARCHAR,
    summary           VARCHAR,
    replayed          BOOLEAN NOT NULL,
    judgement_sha256  VARCHAR NOT NULL,
    loaded_at         TIMESTAMP NOT NULL,  -- UTC
    PRIMARY KEY (attempt_id, judge_id, task_revision, evidence_sha256)
);
"""


def migrate_judge_verdicts(con: duckdb.DuckDBPyConnection) -> None:
    """Create raw.judge_verdicts, empty (dbt reads it)."""
    con.execute(JUDGE_VERDICTS_DDL)
