-- One row per attempt: the raw run record, typed and with evidence presence made explicit.
with source as (

    select * from {{ source('raw', 'run_records') }}

),

-- The fields read from record_json, extracted with ONE parse of each record: DuckDB's list form of
-- json_extract gives every path's JSON value at once (at a million records, every field read alone
-- was a full parse of every record). Text fields are then read from their own small value
-- (json_extract_string(value, '$') is what json_extract_string(record_json, path) gives: a string
-- unquoted, a number or object as its JSON text, null for a missing or null field).
record_fields as (

    select
        *,
        json_extract(record_json, [
            '$.usage.input_tokens.value',   -- 1
            '$.usage.output_tokens.value',  -- 2
            '$.observed.install_ok',        -- 3
            '$.observed.ran_ok',            -- 4
            '$.observed.errors_encountered', -- 5
            '$.observed.errors_fixed',      -- 6
            '$.observed.verified',          -- 7
            '$.seal.report_replaced',       -- 8
            '$.model.responded',            -- 9  (text)
            '$.model.requested',            -- 10 (text)
            '$.repair.item_id',             -- 11 (text)
            '$.repair.item_revision',       -- 12 (text)
            '$.observed.source',            -- 13 (text)
            '$.observed.verify_command',    -- 14 (text)
            '$.seal.status',                -- 15 (text)
            '$.container_fault',            -- 16 (text)
            '$.condition',                  -- 17 (text)
            '$.harness.grade',              -- 18 (text)
            '$.harness.grade_basis',        -- 19 (text)
            '$.repair.preparation.status'   -- 20 (text)
        ]) as record_values

    from source

),

renamed as (

    select
        attempt_id,
        cycle_id,
        purpose,
        agent_id,
        project_id,
        commit_sha,
        tier,
        attempt_no,
        methodology_version,
        started_at,
        ended_at,
        budget_seconds,
        -- a scaled run (demo, dry run) ran under a shorter budget than the tier's; else the same
        coalesce(effective_budget_seconds, budget_seconds) as effective_budget_seconds,
        end_reason,
        invalid_reason as recorded_invalid_reason,
        -- what the container did that cut its own measurement (issue #25); null in older records
        json_extract_string(record_values[16], '$') as recorded_container_fault,
        executor,
        is_demo,
        rerun_of,

        -- evidence is present when it was landed with a fingerprint and a location
        (log_sha256 is not null and log_uri is not null) as has_log,
        (recording_sha256 is not null and recording_uri is not null) as has_recording,
        has_report,
        log_uri,
        recording_uri,
        report_uri,
        log_sha256,
        recording_sha256,
        report_sha256,
        -- the served (masked) copies shown to the public; null when withheld or never made
        served_log_uri,
        served_recording_uri,
        coalesce(presentation_withheld, false) as served_copy_withheld,

        -- the agent's report (null when there is no report)
        install_ok,
        ran_ok,
        errors_encountered,
        errors_fixed,
        test_depth,
        verified_how,
        final_state,

        key_kind,
        harness_name,
        harness_version,

        -- the environment the attempt ran under (issue #15); every column null for a record written
        -- before records carried one (has_environment false)
        harness_edition is not null as has_environment,
        harness_edition,
        scaffold_sha256,
        image_role,
        image_reference,
        image_digest,
        instructions_version,
        instructions_sha256,
        limit_cpus,
        limit_memory_bytes,
        limit_pids,
        limit_disk_bytes,
        network_mode,
        limit_budget_seconds,
        display,

        -- usage and model as the record states them (null when the record says unavailable): the
        -- inputs of the cost rule (int_attempt_costs), never the client's own cost estimate
        try_cast(record_values[1] as bigint) as input_tokens,
        try_cast(record_values[2] as bigint) as output_tokens,
        json_extract_string(record_values[9], '$') as model_responded,
        json_extract_string(record_values[10], '$') as model_requested,

        -- a repair attempt's item (null for board and verdict attempts): groups its patch with the
        -- same agent's other patches for the same item in marts.change_similarity (issue #14)
        json_extract_string(record_values[11], '$') as repair_item_id,
        json_extract_string(record_values[12], '$') as repair_item_revision,

        -- what our harness observed of the session (edition 1.7, issue #25), beside the agent's report
        -- above: the report is the agent's claim, this is the evidence that credits it. Every column
        -- null when the record has no observation (older records; one the harness could not make)
        json_extract_string(record_values[13], '$') as observed_source,
        try_cast(record_values[3] as boolean) as observed_install_ok,
        try_cast(record_values[4] as boolean) as observed_ran_ok,
        try_cast(record_values[5] as integer) as observed_errors_encountered,
        try_cast(record_values[6] as integer) as observed_errors_fixed,
        try_cast(record_values[7] as boolean) as observed_verified,
        json_extract_string(record_values[14], '$') as observed_verify_command,
        -- whether the landed files are the ones the harness sealed (null in older records)
        json_extract_string(record_values[15], '$') as seal_status,
        try_cast(record_values[8] as boolean) as seal_report_replaced,

        -- seed 002's comparison condition (issue #31): the one the record states (its plan's, else
        -- the agent's own), else for a record written before conditions the agent's own as
        -- argusic.core.record.default_condition gives it: an external harness (argusic.external:
        -- claude-code, codex) is external-<harness>, ours the baseline
        json_extract_string(record_values[17], '$') is not null as condition_recorded,
        coalesce(
            json_extract_string(record_values[17], '$'),
            case
                when harness_name in ('claude-code', 'codex') then 'external-' || harness_name
                else 'baseline'
            end
        ) as condition,

        -- seed 002's comparison grade of an external harness (issue #31): same-model (run with the
        -- experiment's model) or reference (another model answered: for reference only), derived by
        -- our collector from the models the session log shows answering, never from the agent's
        -- words; null for our own harness and for records written before grades
        json_extract_string(record_values[18], '$') as harness_grade,
        json_extract_string(record_values[19], '$') as harness_grade_basis,
        -- a repair attempt's working-copy preparation (issue #31, seed 001): prepared | failed; null
        -- when the item has nothing to prepare, for other purposes and for older records
        json_extract_string(record_values[20], '$') as repair_preparation_status

    from record_fields

)

select * from renamed
