{#- Incremental models keyed by cycle (issue 27). A model whose rows for one cycle depend only on that
    cycle's inputs is materialized incremental: a build that knows which cycles' inputs changed since
    the last checked build (the build driver, plugins/argusic/warehouse/dbt_build.py) writes them to
    argusic_build.changed_cycles and runs the model incrementally; its pre-hook deletes those cycles'
    rows and its select, filtered by in_changed_cycles(), inserts them again. Any other build runs
    with --full-refresh: is_incremental() is false, the filter is `true` and nothing is deleted, so
    the model is exactly its plain select. A cycle whose inputs vanished is deleted and not re-inserted.
    A unit test of the model (no relation: `this` is none) reads its given rows whole, as a full build.

    The model's config: materialized='incremental', incremental_strategy='append',
    pre_hook="{{ delete_changed_cycles() }}"; its select filters its cycle-keyed inputs with
    `where {{ in_changed_cycles() }}` (or `and ...`), the rule itself unchanged. -#}
{#- Whether the build driver gave this build a list of changed cycles (the table exists only while
    its dbt runs an incremental build): dbt run by anyone else, on a warehouse whose incremental
    models exist, rebuilds them whole instead of trusting a list it was not given. -#}
{% macro changed_cycles_given() -%}
    {%- set listed = adapter.get_relation(database=this.database, schema='argusic_build',
                                          identifier='changed_cycles') -%}
    {{- return(listed is not none) -}}
{%- endmacro %}

{% macro in_changed_cycles(column='cycle_id') -%}
    {%- if this is not none and is_incremental() and changed_cycles_given() -%}
        {{ column }} in (select cycle_id from argusic_build.changed_cycles)
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{#- No list given: every row is deleted and the select (unfiltered) inserts them all again, which is
    the model's whole rebuild. -#}
{% macro delete_changed_cycles() -%}
    {%- if this is not none and is_incremental() -%}
        {%- if changed_cycles_given() -%}
            delete from {{ this }} where cycle_id in (select cycle_id from argusic_build.changed_cycles)
        {%- else -%}
            delete from {{ this }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
