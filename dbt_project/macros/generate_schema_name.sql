{#- The custom schema name is used as-is (models in `marts` land in the DuckDB schema `marts`,
    not `main_marts`): the warehouse tables are a contract read by people and tools. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
