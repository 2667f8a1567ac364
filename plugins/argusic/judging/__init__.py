"""Judging around the scores, in three layers (seed 004, issue 14). None of it is ever part of a score,
a verdict or the board:

- **Layer 1, judges without opinions (hints).** Computed from an attempt's evidence, free, instant and
  reproducible: *needles* (content markers that must appear in the log, the report or the landed
  artifacts), *rendering* (HTML artifacts opened in headless Chromium, time-bounded) and *agent logic*
  (the run succeeded and its tool calls contain the task's required order as a subsequence).
- **Layer 2, model judges, advisory only** (not built yet): at least two judges read a blinded
  evidence folder; their median, never the mean.
- **Layer 3, a person, minimally** (not built yet): a review queue where a person adds only the look
  (0..2) and the decision (promote or reject).

Built so far: Layer 1 and the task definitions it needs (``tasks``: one TOML file per task kind,
refined per project, from which the run instructions, the automated scenario and the review form are
generated). Modules: ``tasks``, ``needles``, ``tool_order``, ``hints`` (and ``render``, rendering).
"""
