{#- Blinding (issue #31, seed 001): the labels people reviewing patches see in place of model names and
    agent ids. One mapping, repair/labels.toml (seed repair_labels, generated from it); a name it does
    not list gets model-<first 8 hex of sha256(key_hex ":" name)>, a keyed hash under the key of the
    Python model repair_label_key (argusic.repair.labels.hashed_label computes the same; keyed, not a
    plain hash, so that hashing the candidate names does not reverse it; docs/repair.md "Blinding"). -#}

{#- The key, as a scalar subquery (one row). -#}
{% macro repair_label_key() -%}
    (select key_hex from {{ ref('repair_label_key') }})
{%- endmacro %}

{#- The label of a model name or agent id `name` (a column), given `listed`, the joined
    repair_labels.label (null when labels.toml does not list it): the listed label, else the keyed
    hash, as argusic.repair.labels.label_for. Null when name is null. -#}
{% macro repair_label(name, listed) -%}
    coalesce({{ listed }}, 'model-' || left(sha256({{ repair_label_key() }} || ':' || {{ name }}), 8))
{%- endmacro %}

{#- The label of `name` looked up in the seed here (for models that do not join it themselves). -#}
{% macro repair_label_of(name) -%}
    {{ repair_label(name, "(select l.label from " ~ ref('repair_labels') ~ " as l where l.name = " ~ name ~ ")") }}
{%- endmacro %}

{#- The attempt id with its agent part (the third of <cycle>.<purpose>.<agent>.<project>.a<n>[.r<m>];
    id parts hold no dot) replaced by `label`, as argusic.repair.labels.blind_attempt_id. -#}
{% macro blind_attempt_id(attempt_id, label) -%}
    case when {{ attempt_id }} is not null then
        concat_ws('.', split_part({{ attempt_id }}, '.', 1), split_part({{ attempt_id }}, '.', 2),
            {{ label }}, array_to_string(list_slice(string_split({{ attempt_id }}, '.'), 4, -1), '.'))
    end
{%- endmacro %}

{#- The attempt id as people reviewing patches see it: a repair attempt's (purpose, the id's second
    part, 'repair') with its agent's label in the agent's place; any other attempt's as it is (the
    install-and-run board names its agents). As argusic.repair.labels.shown_attempt_id. -#}
{% macro shown_attempt_id(attempt_id) -%}
    case when split_part({{ attempt_id }}, '.', 2) = 'repair'
        then {{ blind_attempt_id(attempt_id, repair_label_of("split_part(" ~ attempt_id ~ ", '.', 3)")) }}
        else {{ attempt_id }}
    end
{%- endmacro %}

{#- The agent as people reviewing patches see it: a repair attempt's agent's label, else its id. -#}
{% macro shown_agent_id(agent_id, purpose) -%}
    case when {{ purpose }} = 'repair' then {{ repair_label_of(agent_id) }} else {{ agent_id }} end
{%- endmacro %}
