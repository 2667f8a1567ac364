{#- A row-level invariant: no row of the model satisfies `condition`. -#}
{% test no_rows_where(model, condition) %}
select *
from {{ model }}
where {{ condition }}
{% endtest %}
