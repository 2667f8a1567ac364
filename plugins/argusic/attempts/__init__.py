"""Attempts: one attempt as a transaction (board and verdict runs, repair runs), the agents registry,
model keys, the live log, served copies (presentation), the cycle pin (environment) and the attempt's
story line. Imports core, sandbox, sources, external and repair; never the cycle, judging or above."""
