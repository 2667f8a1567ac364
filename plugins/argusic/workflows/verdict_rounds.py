"""How many plan -> attempts -> ingest -> build rounds one verdicts run has: the argusic_verdicts DAG
draws one task group per round when it is parsed, so the number lives apart from the workflow."""

# A fail needs its second attempt after the first is scored, and a stronger agent comes after both:
# three rounds settle a project; the fourth serves a second requested agent. A run that stops with
# something still pending says so; running it again continues.
MAX_ROUNDS = 4
