-- pair_sets and board order exact scores n / d by the integer key floor(n * 10^25 / d), which is
-- exact only for 0 < d < 2^31 and 0 <= n <= 100 d (see pair_sets.sql and board.sql). Any row
-- returned is a scored attempt outside that range: the order of its set would no longer be
-- guaranteed exact. (Middle scores, the board's inputs, are attempt scores.)
select attempt_id, score_numerator, score_denominator
from {{ ref('attempt_scores') }}
where is_valid
    and (
        score_numerator is null
        or score_denominator is null
        or score_denominator <= 0
        or score_denominator >= 2147483648
        or score_numerator < 0
        or score_numerator > 100 * score_denominator
    )
