{#- Blinding (issue #31): the label of a model name or agent id `name` (a column), given `listed`, the
    joined repair_labels.label (null when labels.toml does not list it): the listed label, else
    model-<first 8 hex of sha256(name)>, as argusic.repair.labels.label_for. Null when name is null. -#}
{% macro repair_label(name, listed) -%}
    coalesce({{ listed }}, 'model-' || left(sha256({{ name }}), 8))
{%- endmacro %}

{#- The attempt id with its agent part (the third of <cycle>.<purpose>.<agent>.<project>.a<n>[.r<m>];
    id parts hold no dot) replaced by `label`, as argusic.repair.labels.blind_attempt_id. -#}
{% macro blind_attempt_id(attempt_id, label) -%}
    case when {{ attempt_id }} is not null then
        concat_ws('.', split_part({{ attempt_id }}, '.', 1), split_part({{ attempt_id }}, '.', 2),
            {{ label }}, array_to_string(list_slice(string_split({{ attempt_id }}, '.'), 4, -1), '.'))
    end
{%- endmacro %}
