{#- The judging review in force (issue #14, Layer 3): of a person's reviews of one attempt, the latest
    decides. A QUALIFY clause for a select over decisions.judging_reviews; one rule for every mart that
    reads a review (review_queue, judging_review_divergence, judging_results). -#}
{% macro review_in_force() -%}
    qualify row_number() over (partition by attempt_id order by decided_at desc) = 1
{%- endmacro %}
