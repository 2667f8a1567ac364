{#- The relation declares column_name as its PRIMARY KEY, so DuckDB itself refuses a duplicate or a
    null value at every insert. This checks that the guarantee is in place (one row when it is not)
    instead of scanning every row for duplicates at every build. -#}
{% test enforced_primary_key(model, column_name) %}
select '{{ model }}' as relation, '{{ column_name }}' as expected_primary_key
where not exists (
    select 1
    from duckdb_constraints()
    where database_name = '{{ model.database }}'
        and schema_name = '{{ model.schema }}'
        and table_name = '{{ model.identifier }}'
        and constraint_type = 'PRIMARY KEY'
        and constraint_column_names = ['{{ column_name }}']
)
{% endtest %}
