-- pair_sets and board order exact scores n / d by the BIGINT key floor(n * 2^56 / d), and
-- pair_sets packs a score as n * 2^28 + d and takes the middle of three as sum - low - high
-- (see pair_sets.sql and board.sql). That is exact only for reduced fractions (gcd(n, d) = 1, so
-- equal scores are equal pairs) with 0 < d < 2^28 (268,435,456: the denominator divides
-- errors_encountered) and 0 <= n <= 100 d. Any row returned is a scored attempt outside that
-- range: the order of its set would no longer be guaranteed exact. (Middle scores, the board's
-- inputs, are attempt scores.)
select attempt_id, score_numerator, score_denominator
from {{ ref('int_attempt_scores') }}
where is_valid
    and (
        score_numerator is null
        or score_denominator is null
        or score_denominator <= 0
        or score_denominator >= 268435456
        or score_numerator < 0
        or score_numerator > 100 * score_denominator
        or gcd(score_numerator, score_denominator) <> 1
    )
